"""A new link supersedes the person's never-opened links for the same flow, on both eras.

The server never hears that a client dropped a call after the URL request (2026-07-28: it just
never retries) or that the person declined a -32042 page (2025-11-25). Without superseding, each
such call would hold one of the person's `MAX_OPEN_HANDOFFS_PER_USER` slots until its link
expired, and a few would lock the person out of every hand-off. Only never-opened links of the
same person and the same flow are superseded: a page someone is on, another flow's page and
another person's page are left alone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.client import Client

from mcp_elicit.server import ApiKeyHandoff
from mcp_elicit.server.stores import CANCELLED, MAX_OPEN_HANDOFFS_PER_USER, OPENED, PENDING
from tests.e2e.servers import serving_http
from tests.server.handoff_support import ALICE, BOB, SECRET_VALUE, Browser, UrlCallback, mcp_client
from tests.server.test_handoff_eras import DEV, FLOW, build, dev_handoffs, enter_key, open_records
from tests.support import text_of

pytestmark = pytest.mark.anyio

BOUND_SECONDS = 20.0


@dataclass
class DroppingCallback:
    """A client that drops the call once it has the URL request: it never answers, never retries."""

    seen: list[dict[str, Any]] = field(default_factory=list)
    asked: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        self.seen.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        self.asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def drop_a_call(client: Client, cb: DroppingCallback, tool: str) -> Any:
    """Call `tool` and drop the call as soon as its URL request arrives; the call's result if it
    ended before asking (a refusal), else None."""
    cb.asked = anyio.Event()
    ended: list[Any] = []

    async def call() -> None:
        ended.append(await client.call_tool(tool, {}))
        cb.asked.set()

    with anyio.fail_after(BOUND_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await cb.asked.wait()
            tg.cancel_scope.cancel()
    return ended[0] if ended else None


async def test_2026_calls_dropped_after_their_url_request_do_not_lock_the_person_out() -> None:
    """The SDK's client on 2026-07-28 drops more calls than the per-user bound; each new call's link
    supersedes the unopened one of the call before, and the person can still connect."""
    hs = dev_handoffs()
    server, _ = build(hs)
    dropping = DroppingCallback()
    async with serving_http(server) as url:
        async with mcp_client(url, "2026-07-28", dropping) as client:
            for _ in range(MAX_OPEN_HANDOFFS_PER_USER + 1):
                assert await drop_a_call(client, dropping, "repos_waiting") is None
        statuses = [r.status for r in open_records(hs)]
        assert (statuses.count(CANCELLED), statuses.count(PENDING)) == (MAX_OPEN_HANDOFFS_PER_USER, 1)
        assert (await Browser().open(dropping.seen[0]["url"])).status == 410
        async with mcp_client(url, "2026-07-28", UrlCallback(enter_key)) as client:
            assert text_of(await client.call_tool("repos_waiting", {})) == "3 repositories"


async def test_a_page_the_person_opened_is_not_superseded_by_the_next_call() -> None:
    """The person is on the page of a dropped call when the tool is called again: that page stays
    theirs and still completes; only the unopened link of the new call is open besides it."""
    hs = dev_handoffs()
    server, _ = build(hs)
    dropping = DroppingCallback()
    async with serving_http(server) as url, mcp_client(url, "2026-07-28", dropping) as client:
        await drop_a_call(client, dropping, "repos_waiting")
        browser = Browser()
        page = await browser.open(dropping.seen[0]["url"])
        await drop_a_call(client, dropping, "repos_waiting")
        assert sorted(r.status for r in open_records(hs)) == [OPENED, PENDING]
        done = await browser.submit(page, secret=SECRET_VALUE, action="save")
    assert done.status == 200
    assert await hs.vault.get(DEV.key, "github") is not None


@dataclass
class TwoCalls:
    """Two calls of the same tool at once: the first URL request waits for `release` before it is
    accepted (the person looks at it), the second is completed on its page and accepted."""

    seen: list[dict[str, Any]] = field(default_factory=list)
    first_asked: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        self.seen.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        if len(self.seen) == 1:
            self.first_asked.set()
            await self.release.wait()
        else:
            await enter_key(self.seen[-1]["url"])
        return t.ElicitResult(action="accept")


async def test_a_concurrent_call_whose_unopened_link_was_superseded_still_goes_on_with_require() -> None:
    """The trade-off: a second call of the same flow supersedes the first call's unopened link. With
    `require`, the first call's retry finds the credential the second page stored and goes on."""
    hs = dev_handoffs()
    server, _ = build(hs)
    cb = TwoCalls()
    results: list[Any] = []
    async with serving_http(server) as url, mcp_client(url, "2026-07-28", cb) as client:
        with anyio.fail_after(BOUND_SECONDS):
            async with anyio.create_task_group() as tg:

                async def first() -> None:
                    results.append(await client.call_tool("repos_waiting", {}))

                tg.start_soon(first)
                await cb.first_asked.wait()
                results.append(await client.call_tool("repos_waiting", {}))
                assert (await Browser().open(cb.seen[0]["url"])).status == 410  # superseded
                cb.release.set()
    assert [text_of(r) for r in results] == ["3 repositories", "3 repositories"]


async def test_supersede_cancels_only_that_persons_never_opened_links_for_that_flow() -> None:
    hs = dev_handoffs(public_base_url="https://mcp.example.com")
    await hs.mint(None, ALICE, FLOW, "stale")
    opened = await hs.mint(None, ALICE, FLOW, "opened")
    assert await hs.store.swap(dataclasses.replace(opened, status=OPENED), expect=PENDING)
    await hs.mint(None, ALICE, ApiKeyHandoff(provider="gitlab", title="GitLab"), "another flow")
    await hs.mint(None, BOB, FLOW, "another person")
    assert await hs.supersede(ALICE, FLOW) == 1
    statuses = {r.message: r.status for r in open_records(hs)}
    left = {"opened": OPENED, "another flow": PENDING, "another person": PENDING}
    assert statuses == {"stale": CANCELLED, **left}
