"""The official SDK's `mcp.Client`, with its default settings, against the reference server.

Its default `mode="auto"` settles on 2026-07-28 with our server; `mode="legacy"` is the one setting
a person changes to reach 2025-11-25. Its default `input_required_max_rounds` (10) stays in force:
the 2026-07-28 hand-off must finish within it while the person takes seconds on the page.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from mcp_elicit.core import wire_codes
from tests.peers.support import (
    LEGACY,
    MODERN,
    PERSON_SECONDS,
    WAIT_BOUND_SECONDS,
    Person,
    open_page,
    reference,
)
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
# `None` is the client's default (auto); "legacy" is how a person pins 2025-11-25.
ERAS = {MODERN: None, LEGACY: "legacy"}
DEPLOY = [
    {"action": "accept", "content": {"environment": "production", "region": "us-east"}},
    {"action": "accept", "content": {"confirm": True}},
]


def client(target: Any, era: str, callback: Any = None) -> Client:
    mode = ERAS[era]
    options: dict[str, Any] = {"elicitation_callback": callback}
    if mode is not None:
        options["mode"] = mode
    return Client(target, **options)


class AcceptingCallback:
    """The client's side of a URL request: accept at once (the person goes to the page), and
    count the requests: on 2026-07-28 each one is an input-required round."""

    def __init__(self, person: Person) -> None:
        self.person = person
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        wire = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.seen.append(wire)
        self.person.accept(wire["url"])
        return t.ElicitResult(action="accept")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", list(ERAS))
async def test_the_sdk_client_answers_the_deploy_forms(transport: str, era: str) -> None:
    callback = ScriptedCallback(list(DEPLOY))
    async with reference(transport) as ref, client(ref.target, era, callback) as c:
        assert c.protocol_version == era
        result = await c.call_tool("deploy", {"service": "search"})
    assert text_of(result) == "Deployed search to production in us-east with 2 replicas."
    assert [s["mode"] for s in callback.seen] == ["form", "form"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", list(ERAS))
async def test_the_sdk_client_finishes_a_hand_off_the_person_completes_seconds_after_accepting(
    transport: str, era: str
) -> None:
    person = Person()
    callback = AcceptingCallback(person)
    async with reference(transport) as ref, client(ref.target, era, callback) as c:
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            # the person's seconds matter on 2026-07-28 (retries); a 2025 client just waits
            tg.start_soon(person.finish_page, PERSON_SECONDS if era == MODERN else 0.0)
            with anyio.fail_after(WAIT_BOUND_SECONDS):
                result = await c.call_tool("connect_service", {})
        elapsed = time.monotonic() - started
    assert text_of(result) == "Connected to Example API."
    # One URL request, accepted once: on 2026-07-28 the accepting retry is held until the page is
    # done, so the default round limit (10) is never near (two tools/call in all).
    assert len(callback.seen) == 1
    assert elapsed >= (PERSON_SECONDS if era == MODERN else 0.0)
    if ref.tool_calls is not None:
        assert ref.tool_calls == (2 if era == MODERN else 1)
    print(f"sdk {transport} {era}: {ref.tool_calls} tools/call, {len(callback.seen)} rounds, {elapsed:.2f} s")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_sdk_client_on_2025_gets_minus_32042_and_its_retry_after_the_page_succeeds(
    transport: str,
) -> None:
    async with reference(transport) as ref, client(ref.target, LEGACY, ScriptedCallback([])) as c:
        with pytest.raises(MCPError) as info:
            await c.call_tool("service_status", {})
        assert info.value.code == wire_codes.URL_ELICITATION_REQUIRED
        [elicitation] = info.value.data["elicitations"]
        assert elicitation["mode"] == "url"
        await open_page(elicitation["url"])
        result = await c.call_tool("service_status", {})
    assert text_of(result) == "Example API: connected, 3 projects."


async def test_the_sdk_client_on_2026_finishes_the_fail_fast_hand_off_within_its_default_rounds() -> None:
    person = Person()
    callback = AcceptingCallback(person)
    async with (
        reference("http") as ref,
        client(ref.target, MODERN, callback) as c,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(person.finish_page)
        with anyio.fail_after(WAIT_BOUND_SECONDS):
            result = await c.call_tool("service_status", {})
    assert text_of(result) == "Example API: connected, 3 projects."
    assert len(callback.seen) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_sdk_client_without_elicitation_on_2025_reads_a_tool_error_naming_the_capability(
    transport: str,
) -> None:
    async with reference(transport) as ref, client(ref.target, LEGACY) as c:
        result = await c.call_tool("deploy", {"service": "search"})
    assert result.is_error
    assert text_of(result) == (
        "This tool needs the client's elicitation.form capability, which this client did not declare."
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_sdk_client_without_elicitation_on_2026_gets_minus_32021_with_the_capability(
    transport: str,
) -> None:
    async with reference(transport) as ref, client(ref.target, MODERN) as c:
        with pytest.raises(MCPError) as info:
            await c.call_tool("deploy", {"service": "search"})
    assert info.value.code == wire_codes.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert info.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
