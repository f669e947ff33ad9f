"""`SharedState` on the machine's real Redis: a round's record is spent once and only by its user, a
retry is forwarded to the replica holding the call, and nobody waits on a replica that is gone."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.gateway.shared_state import SharedState, StateRecord, _message, connect
from tests.gateway.redis_relay import RedisRelay
from tests.server.handoff_support import redis_client, redis_url

pytestmark = [pytest.mark.anyio, pytest.mark.redis]

KEYS = [secrets.token_bytes(32)]
BOUND_SECONDS = 30.0


@asynccontextmanager
async def replicas(on_answer: Any) -> AsyncIterator[tuple[SharedState, SharedState, Any]]:
    """Replicas "a" and "b" on one Redis prefix, both listening (b hears its replies on its channel)."""
    async with redis_client() as (redis, prefix), anyio.create_task_group() as tg:
        a = SharedState(redis, KEYS, prefix=prefix, replica="a")
        b = SharedState(redis, KEYS, prefix=prefix, replica="b")
        for replica in (a, b):
            tg.start_soon(replica.run, on_answer)
            with anyio.fail_after(BOUND_SECONDS):
                await replica.listening.wait()
        try:
            yield a, b, redis
        finally:
            tg.cancel_scope.cancel()


async def no_answer(state: str, user: str, answer: Any) -> dict[str, Any]:
    raise AssertionError("not forwarded in this test")


async def test_a_record_is_refused_to_another_user_without_being_spent_and_then_spent_once() -> None:
    async with replicas(no_answer) as (a, b, _):
        await a.record("s1", StateRecord("alice", "a", "sdk", "greet"))
        assert await b.claim("s1", "bob") is None
        assert await b.claim("s1", "alice") == StateRecord("alice", "a", "sdk", "greet")
        assert await a.claim("s1", "alice") is None
        assert await b.claim("unknown", "alice") is None


async def test_a_retry_is_forwarded_to_the_home_replica_and_its_reply_comes_back() -> None:
    seen: list[tuple[str, str, Any]] = []

    async def on_answer(state: str, user: str, answer: Any) -> dict[str, Any]:
        seen.append((state, user, answer))
        return {"kind": "done", "value": {"content": []}}

    async with replicas(on_answer) as (_, b, redis):
        await redis.publish(f"{b.prefix}replica:a", b"not json")  # noise on the channel is ignored
        record = StateRecord("alice", "a", "sdk", "greet")
        with anyio.fail_after(BOUND_SECONDS):
            reply = await b.forward(record, "s2", {"action": "accept"})
    assert reply is not None
    assert reply["kind"] == "done"
    assert seen == [("s2", "alice", {"action": "accept"})]


async def test_a_home_replica_that_fails_answers_gone_rather_than_leaving_the_retry_waiting() -> None:
    async def broken(state: str, user: str, answer: Any) -> dict[str, Any]:
        raise RuntimeError("the held call's task died")

    async with replicas(broken) as (_, b, _redis):
        with anyio.fail_after(BOUND_SECONDS):
            reply = await b.forward(StateRecord("alice", "a", "sdk", "greet"), "s3", None)
    assert reply is not None
    assert reply["kind"] == "gone"


async def test_a_retry_for_a_replica_nobody_listens_for_returns_at_once() -> None:
    async with replicas(no_answer) as (_, b, _redis):
        with anyio.fail_after(BOUND_SECONDS):
            assert await b.forward(StateRecord("alice", "stopped", "sdk", "greet"), "s4", None) is None


async def test_a_replica_that_loses_redis_keeps_running_fails_closed_and_listens_again_once_back() -> None:
    async def on_answer(state: str, user: str, answer: Any) -> dict[str, Any]:
        return {"kind": "done", "value": {"content": []}}

    relay = RedisRelay(redis_url())
    async with redis_client() as (redis, prefix), anyio.create_task_group() as tg:
        await tg.start(relay.serve)
        commands, listener = connect(relay.url)  # as `mcp-elicit gateway` connects
        home = SharedState(commands, KEYS, prefix=prefix, replica="home", listener=listener)
        other = SharedState(redis, KEYS, prefix=prefix, replica="other")
        for replica in (home, other):
            tg.start_soon(replica.run, on_answer)
        with anyio.fail_after(BOUND_SECONDS):
            await home.listening.wait()
            await other.listening.wait()

            relay.cut()
            with pytest.raises(home.down):
                await home.claim("s5", "alice")
            assert await other.forward(StateRecord("alice", "home", "sdk", "greet"), "s5", None) is None

            relay.restore()
            await home.listening.wait()  # subscribed again, in the same `run`
            reply = await other.forward(StateRecord("alice", "home", "sdk", "greet"), "s6", None)
            await home.record("s7", StateRecord("alice", "home", "sdk", "greet"))  # commands again
        assert reply is not None
        assert reply["kind"] == "done"
        tg.cancel_scope.cancel()
    await commands.aclose()
    await listener.aclose()


@given(st.one_of(st.binary(), st.text().map(str.encode), st.recursive(st.none(), st.lists)))
def test_any_bytes_on_the_channel_read_as_a_dict_or_nothing(data: Any) -> None:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    assert isinstance(_message({"type": "message", "data": raw}), dict)
    assert _message({"type": "subscribe", "data": 1}) == {}


@pytest.mark.parametrize(
    "keys", [{}, {"MCP_ELICIT_STATE_KEYS": "not-hex"}, {"MCP_ELICIT_STATE_KEYS": "ab" * 8}]
)
def test_a_gateway_given_redis_without_good_shared_keys_refuses_to_start_naming_the_setting(
    tmp_path: Path, keys: dict[str, str]
) -> None:
    from click.testing import CliRunner

    from mcp_elicit.cli import main

    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"x": {"command": "x"}}}))
    env = {"MCP_ELICIT_REDIS_URL": "redis://127.0.0.1:6379/0", "MCP_ELICIT_HANDOFF_SECRET": "", **keys}
    env.setdefault("MCP_ELICIT_STATE_KEYS", "")
    result = CliRunner().invoke(main, ["gateway", "--config", str(config)], env=env)
    assert result.exit_code != 0
    assert "MCP_ELICIT_STATE_KEYS" in result.output


async def test_a_gateway_with_shared_state_stops_when_its_block_ends() -> None:
    from mcp_elicit.gateway import Gateway, parse_config

    config = parse_config(json.dumps({"mcpServers": {"x": {"command": "/nonexistent/mcp-server"}}}))
    async with redis_client() as (redis, prefix):
        shared = SharedState(redis, KEYS, prefix=prefix)
        with anyio.fail_after(BOUND_SECONDS):
            async with Gateway(config, shared=shared):
                assert shared.listening.is_set()


def test_a_gateway_whose_redis_cannot_be_reached_says_so_at_start(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mcp_elicit.cli import main

    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"x": {"command": "/nonexistent/mcp-server"}}}))
    env = {"MCP_ELICIT_REDIS_URL": "redis://127.0.0.1:1/0", "MCP_ELICIT_STATE_KEYS": KEYS[0].hex()}
    argv = ["gateway", "--config", str(config), "--listen", "127.0.0.1:0"]
    result = CliRunner().invoke(main, argv, env=env)
    assert result.exit_code != 0
    assert "cannot reach Redis" in result.output
