"""`handoff` and `require` on both eras with the official SDK client over HTTP (U1–U10, C1–C2, M1–M4).

The elicitation callback plays the person: for a URL request it drives the page with a browser
(cookie jar, redirects, form), then answers accept, as a real client does after opening it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit.errors import CapabilityError, ElicitationTimeout, IdentityRequired
from mcp_elicit.server import ApiKeyHandoff, Handoffs, IdentityPolicy, credential, handoff, require
from mcp_elicit.server.identity import DEV_ISSUER, Principal
from mcp_elicit.server.stores import CANCELLED, MAX_OPEN_HANDOFFS_PER_USER, MemoryHandoffStore
from mcp_elicit.testing import MemoryAuditSink
from tests.e2e.servers import serving_http
from tests.server.handoff_support import (
    ALICE,
    ISSUER,
    SECRET_VALUE,
    Browser,
    LateCallback,
    Notes,
    RecordingTransport,
    UrlCallback,
    make_handoffs,
    make_server,
    mcp_client,
)
from tests.support import text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
FLOW = ApiKeyHandoff(provider="github", title="GitHub")
DEV = Principal("dev", DEV_ISSUER)


def build(hs: Handoffs, *, auth: bool = False, **settings: Any) -> tuple[MCPServer[Any], list[BaseException]]:
    server = make_server(hs, auth=auth, **settings)
    caught: list[BaseException] = []

    @server.tool()
    async def connect(ctx: Context) -> str:
        try:
            result = await handoff(ctx, "Paste your GitHub key on the server's page.", FLOW, timeout=5.0)
        except (CapabilityError, IdentityRequired) as exc:
            caught.append(exc)
            return "refused"
        return result.action

    @server.tool()
    async def connect_briefly(ctx: Context) -> str:
        try:
            await handoff(ctx, "Paste your GitHub key.", FLOW, timeout=0.05)
        except ElicitationTimeout as exc:
            caught.append(exc)
            return "timed out"
        return "done"

    @server.tool()
    async def repos(ctx: Context) -> str:
        await require(ctx, FLOW, fail_fast=True)
        key = await credential(ctx, "github")
        return "3 repositories" if key is not None and key.reveal()["value"] == SECRET_VALUE else "no key"

    @server.tool()
    async def repos_waiting(ctx: Context) -> str:
        await require(ctx, FLOW)
        return "3 repositories"

    return server, caught


def dev_handoffs(**options: Any) -> Handoffs:
    options.setdefault("identity", IdentityPolicy(dev_user="dev"))
    return make_handoffs(**options)


async def enter_key(url: str) -> None:
    page = await Browser().enter_key(url)
    assert page.status == 200


def open_records(hs: Handoffs) -> list[Any]:
    assert isinstance(hs.store, MemoryHandoffStore)
    return list(hs.store._records.values())


@pytest.mark.parametrize("era", ERAS)
async def test_require_hands_off_and_the_tool_goes_on(era: str) -> None:
    """U1, U6, U8: one code path; the era decides elicitationId and the completion notification."""
    hs = dev_handoffs()
    server, _ = build(hs)
    cb, notes = UrlCallback(enter_key), Notes()
    async with serving_http(server) as url, mcp_client(url, era, cb, messages=notes) as client:
        result = await client.call_tool("repos_waiting", {})
    assert text_of(result) == "3 repositories"
    [request] = cb.seen
    assert request["mode"] == "url"
    assert request["url"].startswith(url.removesuffix("/mcp") + "/elicit/start/")
    assert request["message"] == FLOW.default_message()
    if era == "legacy":
        assert notes.completions() == [request["elicitationId"]]
    else:
        assert "elicitationId" not in request
        assert notes.completions() == []
    assert (await hs.vault.get(DEV.key, "github")).reveal()["value"] == SECRET_VALUE  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_the_secret_never_reaches_the_client_nor_the_logs(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    """U10: every byte the server sends the MCP client, and every log line, is free of the value."""
    caplog.set_level(logging.DEBUG)
    hs = dev_handoffs()
    server, _ = build(hs)
    wire = RecordingTransport()
    async with (
        serving_http(server) as url,
        mcp_client(url, era, UrlCallback(enter_key), transport=wire) as client,
    ):
        assert text_of(await client.call_tool("repos_waiting", {})) == "3 repositories"
        assert text_of(await client.call_tool("repos", {})) == "3 repositories"
    assert b"3 repositories" in wire.received  # the recorder does see what the server sends
    assert SECRET_VALUE.encode() not in bytes(wire.received)
    assert SECRET_VALUE not in caplog.text


async def test_a_2026_client_retrying_before_the_page_is_done_gets_the_same_url_again() -> None:
    """U8, M4: the step is not recorded until the store says done; the retry re-asks the same URL
    (here with no hold, so the re-ask comes at once)."""
    hs = dev_handoffs(hold=0.0)
    server, _ = build(hs)
    cb = UrlCallback(enter_key, skip_first=1)
    async with serving_http(server) as url, mcp_client(url, "2026-07-28", cb) as client:
        result = await client.call_tool("connect", {})
    assert text_of(result) == "accept"
    assert len(cb.seen) == 2
    assert cb.seen[0] == cb.seen[1]
    assert len(open_records(hs)) == 1


async def test_a_2026_retry_that_accepts_a_page_still_in_progress_is_held_until_the_page_is_done() -> None:
    """A client with the SDK's default round limit finishes a page the person completes only after
    accepting: the server holds the retry instead of answering at once, so one retry is enough."""
    hs = dev_handoffs()
    server, _ = build(hs)
    cb = LateCallback()
    async with (
        serving_http(server) as url,
        mcp_client(url, "2026-07-28", cb) as client,
        anyio.create_task_group() as tg,
    ):

        async def person() -> None:
            await cb.answered.wait()
            await enter_key(cb.seen[0]["url"])

        tg.start_soon(person)
        result = await client.call_tool("connect", {})
    assert text_of(result) == "accept"
    assert len(cb.seen) == 1


async def test_a_held_retry_goes_back_with_the_same_url_when_the_hold_runs_out() -> None:
    hs = dev_handoffs(hold=0.01)
    server, _ = build(hs)
    cb = UrlCallback(enter_key, skip_first=1)
    async with serving_http(server) as url, mcp_client(url, "2026-07-28", cb) as client:
        result = await client.call_tool("connect", {})
    assert text_of(result) == "accept"
    assert cb.seen[0] == cb.seen[1]


async def test_a_2026_hand_off_that_expires_unfinished_ends_as_cancel() -> None:
    hs = dev_handoffs(ttl=60.0)  # shorter than the requestState lifetime, as by default they are equal
    server, _ = build(hs)

    async def let_it_expire(url: str) -> None:
        hs.clock.advance(hs.ttl + 1)  # type: ignore[attr-defined]

    async with (
        serving_http(server) as url,
        mcp_client(url, "2026-07-28", UrlCallback(let_it_expire)) as client,
    ):
        result = await client.call_tool("connect", {})
    assert text_of(result) == "cancel"
    assert [r.status for r in open_records(hs)] == [CANCELLED]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_refusal_in_the_client_reaches_the_tool_and_kills_the_link(era: str, action: str) -> None:
    """C3, U2: decline and cancel come back as such, without hanging; the link then dies."""
    hs = dev_handoffs()
    server, _ = build(hs)
    cb = UrlCallback(action=action)
    async with serving_http(server) as url, mcp_client(url, era, cb) as client:
        result = await client.call_tool("connect", {})
        assert text_of(result) == action
        assert (await Browser().open(cb.seen[0]["url"])).status == 410


@pytest.mark.parametrize("era", ERAS)
async def test_cancel_on_the_page_reaches_the_tool_as_decline(era: str) -> None:
    hs = dev_handoffs()
    server, _ = build(hs)

    async def press_cancel(url: str) -> None:
        browser = Browser()
        await browser.submit(await browser.open(url), action="cancel")

    async with serving_http(server) as url, mcp_client(url, era, UrlCallback(press_cancel)) as client:
        assert text_of(await client.call_tool("connect", {})) == "decline"
        failed = await client.call_tool("repos_waiting", {})
    assert failed.is_error


async def test_fail_fast_answers_minus_32042_then_notifies_that_session_and_the_retry_succeeds() -> None:
    """U7, U6 (2025-11-25): the error lists the URL with its id; completion is announced; retry works."""
    hs = dev_handoffs()
    server, _ = build(hs)
    notes = Notes()
    async with (
        serving_http(server) as url,
        mcp_client(url, "legacy", UrlCallback(), messages=notes) as client,
    ):
        with pytest.raises(MCPError) as info:
            await client.call_tool("repos", {})
        assert info.value.error.code == t.URL_ELICITATION_REQUIRED
        [listed] = info.value.error.data["elicitations"]  # type: ignore[index]
        assert listed["mode"] == "url"
        assert listed["url"].startswith(url.removesuffix("/mcp") + "/elicit/start/")
        await enter_key(listed["url"])
        await notes.wait_completion(listed["elicitationId"])
        result = await client.call_tool("repos", {})
    assert text_of(result) == "3 repositories"
    assert notes.completions() == [listed["elicitationId"]]


async def test_minus_32042_links_the_person_refused_in_the_client_do_not_lock_the_person_out() -> None:
    """The client never tells the server that the person declined a -32042 page: each new link for
    the same flow supersedes the never-opened ones, so refusals do not use up the per-user bound."""
    hs = dev_handoffs()
    server, _ = build(hs)
    async with serving_http(server) as url, mcp_client(url, "legacy", UrlCallback()) as client:
        listed: list[dict[str, Any]] = []
        for _ in range(MAX_OPEN_HANDOFFS_PER_USER + 1):
            with pytest.raises(MCPError) as info:
                await client.call_tool("repos", {})
            assert info.value.error.code == t.URL_ELICITATION_REQUIRED
            listed.extend(info.value.error.data["elicitations"])  # type: ignore[index]
        assert [r.status for r in open_records(hs)].count(CANCELLED) == MAX_OPEN_HANDOFFS_PER_USER
        stale = await Browser().open(listed[0]["url"])
        assert stale.status == 410
        await enter_key(listed[-1]["url"])
        result = await client.call_tool("repos", {})
    assert text_of(result) == "3 repositories"


async def test_fail_fast_on_2026_is_an_input_request_never_minus_32042() -> None:
    hs = dev_handoffs()
    server, _ = build(hs)
    cb, notes = UrlCallback(enter_key), Notes()
    async with serving_http(server) as url, mcp_client(url, "2026-07-28", cb, messages=notes) as client:
        result = await client.call_tool("repos", {})
    assert text_of(result) == "3 repositories"
    assert "elicitationId" not in cb.seen[0]
    assert notes.completions() == []


async def test_the_completion_notification_goes_only_to_the_session_that_started_it() -> None:
    """U6: a second session of the same person hears nothing."""
    hs = dev_handoffs()
    server, _ = build(hs)
    first, second = Notes(), Notes()
    async with (
        serving_http(server) as url,
        mcp_client(url, "legacy", UrlCallback(), messages=first) as client,
        mcp_client(url, "legacy", UrlCallback(), messages=second) as bystander,
    ):
        with pytest.raises(MCPError) as info:
            await client.call_tool("repos", {})
        [listed] = info.value.error.data["elicitations"]  # type: ignore[index]
        await enter_key(listed["url"])
        await first.wait_completion(listed["elicitationId"])
        await bystander.list_tools()  # a round trip: anything queued for it would have arrived
    assert second.completions() == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_did_not_declare_url_mode_is_never_sent_a_url(era: str) -> None:
    """C1 (CapabilityError in the tool) and C2 (-32021 naming elicitation.url); nothing is minted."""
    hs = dev_handoffs()
    server, caught = build(hs)
    async with serving_http(server) as url, mcp_client(url, era) as client:
        if era == "legacy":
            assert text_of(await client.call_tool("connect", {})) == "refused"
            assert isinstance(caught[0], CapabilityError)
            assert caught[0].mode == "url"
            failed = await client.call_tool("repos", {})  # a tool error, not -32042 with a URL
            assert failed.is_error
        else:
            with pytest.raises(MCPError) as info:
                await client.call_tool("connect", {})
            assert info.value.error.code == t.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert info.value.error.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    assert open_records(hs) == []


@pytest.mark.parametrize("era", ERAS)
async def test_require_does_not_hand_off_when_the_vault_already_has_the_credential(era: str) -> None:
    hs = dev_handoffs()
    await hs.vault.put(DEV.key, "github", {"type": "api_key", "value": SECRET_VALUE})
    server, _ = build(hs)
    async with serving_http(server) as url, mcp_client(url, era) as client:  # no URL support needed
        assert text_of(await client.call_tool("repos", {})) == "3 repositories"
    assert open_records(hs) == []


async def test_without_authorization_or_a_development_identity_there_is_no_hand_off() -> None:
    """U9: state never hangs on a session id alone."""
    hs = make_handoffs(identity=IdentityPolicy())
    server, caught = build(hs)
    async with serving_http(server) as url, mcp_client(url, "legacy", UrlCallback()) as client:
        assert text_of(await client.call_tool("connect", {})) == "refused"
    assert isinstance(caught[0], IdentityRequired)
    assert open_records(hs) == []


async def test_a_2025_page_not_completed_in_time_gives_the_tool_a_timeout_and_kills_the_link() -> None:
    hs = dev_handoffs()
    server, caught = build(hs)
    async with serving_http(server) as url, mcp_client(url, "legacy", UrlCallback()) as client:
        assert text_of(await client.call_tool("connect_briefly", {})) == "timed out"
    assert isinstance(caught[0], ElicitationTimeout)
    assert [r.status for r in open_records(hs)] == [CANCELLED]


@pytest.mark.parametrize("era", ERAS)
async def test_with_mcp_authorization_only_the_same_subject_can_complete_the_page(era: str) -> None:
    """U9: identity from the MCP access token (`sub`, `iss`); Bob's browser cannot finish Alice's step."""
    hs = make_handoffs(identity=IdentityPolicy())
    server, _ = build(hs, auth=True)
    statuses: list[int] = []

    async def bob_then_alice(url: str) -> None:
        statuses.append((await Browser(headers={"Authorization": "Bearer tok-bob"}).open(url)).status)
        alice = Browser(headers={"Authorization": "Bearer tok-alice"})
        statuses.append((await alice.enter_key(url)).status)

    async with (
        serving_http(server) as url,
        mcp_client(url, era, UrlCallback(bob_then_alice), token="tok-alice") as client,
    ):
        result = await client.call_tool("repos_waiting", {})
    assert text_of(result) == "3 repositories"
    assert statuses == [403, 200]
    assert await hs.vault.get(ALICE.key, "github") is not None
    assert ALICE.issuer == ISSUER
    assert await hs.vault.get(Principal("bob", ISSUER).key, "github") is None


@pytest.mark.parametrize("era", ERAS)
async def test_each_hand_off_leaves_one_url_mode_consent_record_without_secrets(era: str) -> None:
    sink = MemoryAuditSink(level="request_response")
    hs = dev_handoffs()
    server, _ = build(hs, audit=sink)
    async with serving_http(server) as url, mcp_client(url, era, UrlCallback(enter_key)) as client:
        await client.call_tool("connect", {})
        await client.call_tool("connect", {})
    records = [r for r in sink.records if r["mode"] == "url"]
    assert [r["action"] for r in records] == ["accept", "accept"]
    assert SECRET_VALUE not in json.dumps(sink.records)
