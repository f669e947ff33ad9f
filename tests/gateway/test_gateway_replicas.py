"""Two `mcp-elicit gateway` processes behind "one address", sharing the machine's real Redis: a
2026-07-28 round started through replica A is answered through replica B, bound to the same user,
once. Upstreams are real (the raw-SDK peer and the reference server over stdio), the downstream is
the SDK's `Client` over streamable HTTP."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest

from mcp_elicit.gateway.app import SHARED_STATE_DOWN
from tests.gateway.redis_relay import RedisRelay
from tests.gateway.replicas import GatewayProcess, answer, gateway_process, started
from tests.gateway.support import PEERS, Answers, http_client
from tests.server.handoff_support import Browser, redis_client, redis_url

pytestmark = [pytest.mark.anyio, pytest.mark.redis]

USERS = {"token-a": "alice", "token-b": "bob"}
MODERN = "2026-07-28"
CALL_BOUND_SECONDS = 60.0
REFERENCE_ARGS = ["serve-reference", "--transport", "stdio"]


def config(tmp_path: Path) -> Path:
    servers = {
        "sdk": {"command": sys.executable, "args": [PEERS, "sdk"]},
        "ref": {"command": sys.executable, "args": ["-m", "mcp_elicit", *REFERENCE_ARGS]},
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers, "users": USERS}))
    return path


@asynccontextmanager
async def two_replicas(
    tmp_path: Path, through: str | None = None
) -> AsyncIterator[tuple[GatewayProcess, GatewayProcess, Any]]:
    """Replicas A and B on one Redis key prefix (reached at `through`, else the test Redis); also
    yields a reader of that prefix's records."""
    url = through or redis_url()  # skips with a reason when no Redis answers
    async with redis_client() as (redis, prefix):
        # A rotation ring shared by both replicas: the first key seals, both unseal.
        keys = f"{secrets.token_hex(32)},{secrets.token_hex(32)}"
        env = {"MCP_ELICIT_REDIS_URL": url, "MCP_ELICIT_REDIS_PREFIX": prefix, "MCP_ELICIT_STATE_KEYS": keys}
        with gateway_process(config(tmp_path), env) as a, gateway_process(config(tmp_path), env) as b:
            await started(a)
            await started(b)
            yield a, b, lambda pattern: _records(redis, prefix + pattern)


async def _records(redis: Any, pattern: str) -> list[dict[str, Any]]:
    return [json.loads(await redis.get(key)) async for key in redis.scan_iter(match=pattern)]


async def first_round(url: str, token: str, tool: str) -> t.InputRequiredResult:
    async with http_client(url, token, MODERN, Answers()) as client:
        with anyio.fail_after(CALL_BOUND_SECONDS):
            first = await client.session.call_tool(tool, {}, allow_input_required=True)
    assert isinstance(first, t.InputRequiredResult), first
    return first


async def retry(url: str, token: str, tool: str, state: str | None, responses: dict[str, Any]) -> Any:
    async with http_client(url, token, MODERN, Answers()) as client:
        with anyio.fail_after(CALL_BOUND_SECONDS):
            return await client.session.call_tool(
                tool, {}, input_responses=responses, request_state=state, allow_input_required=True
            )


async def test_a_round_started_through_one_replica_is_answered_through_the_other_once_and_only_by_its_user(
    tmp_path: Path,
) -> None:
    async with two_replicas(tmp_path) as (a, b, _):
        first = await first_round(a.url, "token-a", "greet")
        state = first.request_state

        stolen = await retry(b.url, "token-b", "greet", state, answer(content={"name": "mallory"}))
        assert isinstance(stolen, t.CallToolResult)
        assert stolen.is_error

        done = await retry(b.url, "token-a", "greet", state, answer(content={"name": "alice"}))
        assert isinstance(done, t.CallToolResult)
        assert done.content[0].text == "hello alice"  # type: ignore[union-attr]

        replayed = await retry(a.url, "token-a", "greet", state, answer(content={"name": "again"}))
        assert isinstance(replayed, t.CallToolResult)
        assert replayed.is_error
    assert "Traceback" not in a.log() + b.log()


async def test_a_url_hand_off_started_through_one_replica_completes_through_the_other(tmp_path: Path) -> None:
    async with two_replicas(tmp_path) as (a, b, records):
        first = await first_round(a.url, "token-a", "connect_service")
        page = first.input_requests["q"].params
        assert isinstance(page, t.ElicitRequestURLParams)
        # The route is in Redis: the user, the replica holding the call, the upstream and its id.
        [route] = await records("gw:state:*")
        assert route["user"] == "alice"
        assert route["server"] == "ref"
        assert route["tool"] == "connect_service"
        assert route["upstream_id"]
        results: list[Any] = []

        async def accept_at_b() -> None:
            results.append(await retry(b.url, "token-a", "connect_service", first.request_state, answer()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(accept_at_b)
            finished = await Browser().enter_key(page.url)
            assert finished.status == 200
    [result] = results
    assert isinstance(result, t.CallToolResult)
    assert not result.is_error
    assert "Connected" in result.content[0].text  # type: ignore[union-attr]


async def test_a_retry_for_a_call_held_by_a_replica_that_stopped_is_told_to_call_again(
    tmp_path: Path,
) -> None:
    async with two_replicas(tmp_path) as (a, b, _):
        first = await first_round(a.url, "token-a", "greet")
        a.stop()
        late = await retry(b.url, "token-a", "greet", first.request_state, answer(content={"name": "alice"}))
        assert isinstance(late, t.CallToolResult)
        assert late.is_error
        assert "call the tool again" in late.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in b.log()


async def test_a_prompts_round_started_through_one_replica_is_answered_through_the_other(
    tmp_path: Path,
) -> None:
    async with two_replicas(tmp_path) as (a, b, _):
        async with http_client(a.url, "token-a", MODERN, Answers()) as client:
            with anyio.fail_after(CALL_BOUND_SECONDS):
                first = await client.session.get_prompt("greeting", {}, allow_input_required=True)
        assert isinstance(first, t.InputRequiredResult), first
        async with http_client(b.url, "token-a", MODERN, Answers()) as client:
            with anyio.fail_after(CALL_BOUND_SECONDS):
                done = await client.session.get_prompt(
                    "greeting",
                    {},
                    input_responses=answer(content={"name": "alice"}),
                    request_state=first.request_state,
                    allow_input_required=True,
                )
    assert isinstance(done, t.GetPromptResult)
    assert "alice" in done.messages[0].content.text  # type: ignore[union-attr]
    assert "Traceback" not in a.log() + b.log()


async def test_replicas_that_lose_redis_keep_serving_refuse_a_retry_meanwhile_and_finish_it_once_it_is_back(
    tmp_path: Path,
) -> None:
    relay = RedisRelay(redis_url())
    async with anyio.create_task_group() as tg:
        await tg.start(relay.serve)
        async with two_replicas(tmp_path, through=relay.url) as (a, b, _):
            first = await first_round(a.url, "token-a", "greet")

            assert await a.wait_for_line("replicas: rounds shared through Redis at 127.0.0.1:")
            relay.cut()
            for replica in (a, b):
                await replica.wait_for_line("lost Redis")
            meanwhile = await retry(
                b.url, "token-a", "greet", first.request_state, answer(content={"name": "x"})
            )
            assert isinstance(meanwhile, t.CallToolResult)
            assert meanwhile.is_error
            assert meanwhile.content[0].text == SHARED_STATE_DOWN  # type: ignore[union-attr]

            relay.restore()
            for replica in (a, b):
                await replica.wait_for_line("Redis is reachable again")
            done = await retry(
                b.url, "token-a", "greet", first.request_state, answer(content={"name": "alice"})
            )
            assert isinstance(done, t.CallToolResult)
            assert done.content[0].text == "hello alice"  # type: ignore[union-attr]
            assert a.proc.poll() is None
            assert b.proc.poll() is None
        tg.cancel_scope.cancel()
    assert "Traceback" not in a.log() + b.log()
