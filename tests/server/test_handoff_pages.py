"""The out-of-band pages refuse everyone but the person in the browser that first opened the link (U9).

Each attack leaves the hand-off as it was ("nothing is bound"), so the rightful person can still
finish it. Pages are driven over ASGI (no socket); hand-offs are minted directly for ALICE.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from itsdangerous import URLSafeSerializer

from mcp_elicit.server import ApiKeyHandoff, Handoffs, IdentityPolicy
from mcp_elicit.server.pages import MAX_FORM_BYTES
from mcp_elicit.server.stores import DECLINED, DONE, OPENED, PENDING, HandoffRecord
from mcp_elicit.testing import ManualClock
from tests.server.handoff_support import (
    ALICE,
    BOB,
    SECRET_VALUE,
    Browser,
    asgi_browser,
    make_handoffs,
    make_server,
)

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8123"
FLOW = ApiKeyHandoff(provider="github", title="GitHub")


class Rig:
    """A server app with hand-offs, a clock, and browsers for ALICE and BOB."""

    def __init__(self, **options: Any) -> None:
        self.clock = ManualClock()
        self.hs: Handoffs = make_handoffs(self.clock, public_base_url=BASE, flows=[FLOW], **options)
        self.app = make_server(self.hs).streamable_http_app()

    def browser(self, user: str | None = "alice", **kw: Any) -> Browser:
        cookies = {"test-user": user} if user else {}
        return asgi_browser(self.app, cookies=cookies, **kw)

    async def mint(self, person: Any = ALICE) -> HandoffRecord:
        return await self.hs.mint(None, person, FLOW, "Connect GitHub to list your repositories.")

    async def record(self, record: HandoffRecord) -> HandoffRecord:
        found = await self.hs.store.get(record.id)
        assert found is not None
        return found

    async def stored(self, person: Any = ALICE) -> Any:
        secret = await self.hs.vault.get(person.key, "github")
        return None if secret is None else secret.reveal()


async def test_the_rightful_person_enters_a_key_and_it_lands_in_the_vault_only() -> None:
    """U9, U10: the first visit binds the browser, redirects, and the form stores the key."""
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    first = await alice.open(record.url, follow=False)
    assert first.status == 303
    assert first.headers["location"] == f"{BASE}/elicit/h/{record.id}"
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "path=/elicit/" in cookie
    page = await alice.open(first.headers["location"])
    assert page.status == 200
    assert "Connect GitHub to list your repositories." in page.text
    done = await alice.submit(page, secret=SECRET_VALUE, action="save")
    assert done.status == 200
    assert (await rig.record(record)).status == DONE
    assert await rig.stored() == {"type": "api_key", "value": SECRET_VALUE}
    assert SECRET_VALUE not in alice.seen()


async def test_the_url_names_no_user_and_carries_only_a_signed_id_and_expiry() -> None:
    """U5: no sensitive end-user data and nothing pre-authenticated in the URL."""
    rig = Rig()
    record = await rig.mint()
    assert record.url.startswith(f"{BASE}/elicit/start/")
    assert "alice" not in record.url
    assert ISSUER_HOST not in record.url
    token = record.url.rsplit("/", 1)[1]
    assert rig.hs.read_link(token) == (record.id, record.expires_at)


ISSUER_HOST = "idp.test"


async def test_a_forwarded_link_opened_by_another_person_is_refused_and_binds_nothing() -> None:
    """U9: the forwarded-link account takeover fails; the rightful person can still use the link."""
    rig = Rig()
    record = await rig.mint()
    bob = rig.browser("bob")
    refused = await bob.open(record.url)
    assert refused.status == 403
    assert "set-cookie" not in refused.headers
    after = await rig.record(record)
    assert (after.status, after.marker) == (PENDING, None)
    assert (await rig.browser().enter_key(record.url)).status == 200
    assert await rig.stored() is not None
    assert await rig.stored(BOB) is None


async def test_a_link_opened_with_no_identity_at_all_is_refused() -> None:
    rig = Rig()
    record = await rig.mint()
    assert (await rig.browser(None).open(record.url)).status == 403
    assert (await rig.record(record)).status == PENDING


async def test_an_edited_link_is_refused_whatever_was_changed() -> None:
    """U9: a changed signature, a token signed with another key, a changed page id."""
    rig = Rig()
    record = await rig.mint()
    victim = await rig.mint(BOB)
    alice = rig.browser()
    token = record.url.rsplit("/", 1)[1]
    payload, signature = token.rsplit(".", 1)
    middle = len(signature) // 2
    swapped = "A" if signature[middle] != "A" else "B"
    flipped = f"{payload}.{signature[:middle]}{swapped}{signature[middle + 1 :]}"
    assert (await alice.open(f"{BASE}/elicit/start/{flipped}")).status == 404
    other_key = URLSafeSerializer(
        b"x" * 32, salt="mcp-elicit/handoff-link/1", signer_kwargs={"digest_method": hashlib.sha256}
    )
    forged = other_key.dumps([victim.id, victim.expires_at])
    assert (await alice.open(f"{BASE}/elicit/start/{forged}")).status == 404
    assert (await alice.open(f"{BASE}/elicit/start/{token}.extra")).status == 404
    other_payload = base64.urlsafe_b64encode(json.dumps([victim.id, victim.expires_at]).encode()).decode()
    assert (await alice.open(f"{BASE}/elicit/start/{other_payload.rstrip('=')}.{signature}")).status == 404
    # A valid link for Alice, then the page id edited to Bob's hand-off: not her browser's.
    await alice.open(record.url)
    assert (await alice.open(f"{BASE}/elicit/h/{victim.id}")).status == 403
    assert (await alice.open(f"{BASE}/elicit/h/{'x' * 32}")).status == 404
    assert (await rig.record(victim)).status == PENDING


async def test_a_replayed_link_in_another_browser_is_refused_while_the_first_browser_may_come_back() -> None:
    """U9: single use per browser: the marker cookie decides, not the person alone."""
    rig = Rig()
    record = await rig.mint()
    first = rig.browser()
    await first.open(record.url)
    second = rig.browser()  # the same person, another browser (or someone with her login)
    assert (await second.open(record.url)).status == 410
    assert (await second.open(f"{BASE}/elicit/h/{record.id}")).status == 403
    again = await first.open(record.url)
    assert again.status == 200
    assert "<form" in again.text
    assert (await rig.record(record)).status == OPENED


async def test_a_link_used_once_to_completion_cannot_be_used_again() -> None:
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.open(record.url)
    assert (await alice.submit(page, secret=SECRET_VALUE, action="save")).status == 200
    assert (await alice.submit(page, secret="sk-other", action="save")).status == 410
    assert (await alice.open(record.url)).status == 410
    assert await rig.stored() == {"type": "api_key", "value": SECRET_VALUE}


async def test_an_expired_link_is_refused_before_and_after_it_was_opened() -> None:
    """The clock is injected: no sleeps."""
    rig = Rig()
    unopened = await rig.mint()
    opened = await rig.mint()
    alice = rig.browser()
    page = await alice.open(opened.url)
    rig.clock.advance(rig.hs.ttl + 1)
    assert (await rig.browser().open(unopened.url)).status == 410
    assert (await alice.submit(page, secret=SECRET_VALUE, action="save")).status == 410
    assert (await rig.record(unopened)).status == PENDING
    assert await rig.stored() is None


async def test_the_form_refuses_a_browser_without_the_marker_cookie() -> None:
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.open(record.url)
    action, hidden = page.form()
    stranger = rig.browser()  # right person, but the marker cookie is missing
    refused = await stranger.post(action, {**hidden, "secret": SECRET_VALUE, "action": "save"})
    assert refused.status == 403
    assert (await rig.record(record)).status == OPENED
    assert await rig.stored() is None


@pytest.mark.parametrize(
    ("fields", "headers"),
    [
        ({"csrf": ""}, {}),
        ({"csrf": "0" * 64}, {}),
        ({}, {"origin": "https://evil.example"}),
        ({}, {"sec-fetch-site": "cross-site"}),
        ({}, {"sec-fetch-site": "same-site"}),
    ],
    ids=["no-token", "wrong-token", "foreign-origin", "cross-site", "same-site"],
)
async def test_a_forged_form_post_is_refused(fields: dict[str, str], headers: dict[str, str]) -> None:
    """CSRF: the cookie alone is not enough; token, origin and fetch metadata must all agree."""
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.open(record.url)
    action, hidden = page.form()
    form = {**hidden, "secret": SECRET_VALUE, "action": "save", **fields}
    refused = await alice.post(action, form, **headers)
    assert refused.status == 403
    assert (await rig.record(record)).status == OPENED
    assert await rig.stored() is None


async def test_bad_input_shows_the_form_again_without_echoing_the_value() -> None:
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.open(record.url)
    again = await alice.submit(page, secret="sk-\x1b[31mred", action="save")
    assert again.status == 422
    assert "<form" in again.text
    assert "sk-" not in again.text
    assert (await rig.record(record)).status == OPENED
    done = await alice.submit(again, secret=SECRET_VALUE, action="save")
    assert done.status == 200


async def test_a_key_the_provider_rejects_is_asked_again() -> None:
    async def only_live_keys(value: str) -> bool:
        return value.startswith("sk-live-")

    rig = Rig()
    flow = ApiKeyHandoff(provider="github", title="GitHub", check=only_live_keys)
    rig.hs._registry[flow.key] = flow
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.submit(await alice.open(record.url), secret="sk-test-1", action="save")
    assert page.status == 422
    assert (await alice.submit(page, secret=SECRET_VALUE, action="save")).status == 200


async def test_cancel_on_the_page_declines_the_hand_off() -> None:
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.submit(await alice.open(record.url), action="cancel")
    assert page.status == 200
    assert (await rig.record(record)).status == DECLINED
    assert await rig.stored() is None


async def test_an_oversized_form_is_refused() -> None:
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.open(record.url)
    refused = await alice.submit(page, secret="k" * (MAX_FORM_BYTES + 1), action="save")
    assert refused.status == 413
    assert (await rig.record(record)).status == OPENED


async def test_every_page_is_uncached_unframed_and_loads_nothing_from_elsewhere() -> None:
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    page = await alice.open(record.url)
    refused = await rig.browser("bob").open(record.url)
    done = await alice.submit(page, secret=SECRET_VALUE, action="save")
    for shown in (page, refused, done):
        csp = shown.headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "frame-ancestors 'none'" in csp
        assert "form-action 'self'" in csp
        assert shown.headers["cache-control"] == "no-store"
        assert (
            shown.headers["referrer-policy"] == "same-origin"
        )  # no-referrer makes Chromium post Origin: null
        assert shown.headers["x-content-type-options"] == "nosniff"
        assert "<script" not in shown.text
        assert " src=" not in shown.text
        assert "<link" not in shown.text


async def test_refusal_pages_say_what_to_do_but_not_why() -> None:
    """A wrong person and a missing marker read the same: no detail for an attacker to learn from."""
    rig = Rig()
    record = await rig.mint()
    await rig.browser().open(record.url)
    wrong_person = await rig.browser("bob").open(f"{BASE}/elicit/h/{record.id}")
    no_marker = await rig.browser().open(f"{BASE}/elicit/h/{record.id}")
    assert wrong_person.status == no_marker.status == 403
    assert _without_nonce(wrong_person.text) == _without_nonce(no_marker.text)
    assert "alice" not in wrong_person.text


def _without_nonce(text: str) -> str:
    return re.sub(r'nonce="[^"]*"', "", text)


async def test_the_development_identity_serves_loopback_browsers_only() -> None:
    rig = Rig(identity=IdentityPolicy(dev_user="dev"))
    from mcp_elicit.server.identity import DEV_ISSUER, Principal

    record = await rig.mint(Principal("dev", DEV_ISSUER))
    remote = rig.browser(None, client=("10.1.2.3", 40000))
    assert (await remote.open(record.url)).status == 403
    assert (await rig.browser(None).enter_key(record.url)).status == 200


async def test_a_secure_origin_gets_a_secure_prefixed_cookie() -> None:
    clock = ManualClock()
    hs = make_handoffs(clock, public_base_url="https://mcp.example.com", flows=[FLOW])
    app = make_server(hs).streamable_http_app()
    record = await hs.mint(None, ALICE, FLOW, "Connect GitHub.")
    browser = asgi_browser(app, cookies={"test-user": "alice"})
    first = await browser.open(record.url, follow=False)
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"__Secure-mcp-elicit-{record.id}=")
    assert "secure" in cookie.lower()
    assert urlsplit(first.headers["location"]).scheme == "https"


async def test_a_head_request_or_a_prefetch_does_not_use_up_the_link() -> None:
    rig = Rig()
    record = await rig.mint()
    alice = rig.browser()
    head = await alice.http.head(record.url)
    assert "set-cookie" not in head.headers
    prefetch = await alice.http.get(record.url, headers={"Sec-Purpose": "prefetch"})
    assert prefetch.status_code == 200
    assert "set-cookie" not in prefetch.headers
    assert (await rig.record(record)).status == PENDING
    assert (await alice.enter_key(record.url)).status == 200
