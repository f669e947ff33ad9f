"""The out-of-band pages: where the person enters a key or connects an account (U3, U5, U9, U10).

Routes, mounted on the MCP server's own HTTP app (`<prefix>` is `Handoffs.path_prefix`):

    GET  <prefix>/start/<signed token>   the link the client opens; binds this browser, redirects
    GET  <prefix>/h/<id>                 the flow's page (form)
    POST <prefix>/h/<id>                 the form submission
    GET  <prefix>/oauth/callback         the third party's redirect back (OAuth flows)

The person must be the one the hand-off was made for, in the browser that first opened the
link (the OAuth security BCP's browser binding). Before anything happens:

1. The link token must carry our signature (an edited URL is refused) and not be expired.
2. The person at the browser (`IdentityPolicy.of_browser`) must be the hand-off's person:
   a forwarded link opened by someone else is refused and binds nothing, so the rightful
   person can still use it.
3. The first real visit (not a HEAD, a prefetch or a prerender) moves the hand-off from
   pending to opened and sets an HttpOnly, SameSite=Lax cookie holding a random marker (only
   its hash is stored), then redirects. Every later request needs that cookie: a second
   browser (a replayed link) gets "already used"; the same browser coming back is let through.
4. Form posts also need a CSRF token derived from the marker, a same-origin `Origin` (when the
   browser sends one) and a `Sec-Fetch-Site` that is not cross-site; the OAuth callback needs
   the `state` stored for this hand-off, once.

Each status change is a compare-and-swap in the store, so a double submit cannot complete a
hand-off twice. A refusal is a plain 4xx page that says what to do, not why (the reason is
logged). Every page is `no-store`, framed by nothing, with a strict CSP (no scripts; one
nonce'd inline style; forms post only to this origin, or to the OAuth authorization server).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from mcp_elicit.server import loopback, sdk, sdk_serving
from mcp_elicit.server.flows import (
    Again,
    Declined,
    Done,
    Failed,
    FlowContext,
    FlowStep,
    HandoffFlow,
    Redirect,
)
from mcp_elicit.server.handoffs import Handoffs
from mcp_elicit.server.identity import Principal
from mcp_elicit.server.stores import DECLINED, DONE, FAILED, OPENED, PENDING, WORKING, HandoffRecord

__all__ = ["MARKER_BYTES", "MAX_FORM_BYTES", "MAX_FORM_FIELDS", "mount_handoff_pages"]

logger = logging.getLogger("mcp_elicit.server.pages")

# Random bytes in the browser marker cookie (256 bits).
MARKER_BYTES = 32
# The largest form body a page accepts: a key of MAX_SECRET_CHARS plus the CSRF token, with room.
MAX_FORM_BYTES = 16_384
# Fields read from a form body; the forms have three.
MAX_FORM_FIELDS = 8

_ENV = Environment(
    loader=PackageLoader("mcp_elicit.server", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    auto_reload=False,
)

_ERROR_TEXT = {
    "empty": "Please enter a value.",
    "too_long": "That value is too long.",
    "control_chars": "That value contains characters that cannot be part of a key.",
    "rejected": "The provider did not accept that value. Check it and try again.",
}

# What each refusal says (deliberately not why): status → (title, text).
_REFUSALS = {
    400: ("Bad request", "This request could not be understood. Go back to your client and try again."),
    403: (
        "Not for this browser",
        "This page belongs to someone else's request, or to another browser. Open the link from "
        "your own client, in the browser where you are signed in.",
    ),
    404: ("Unknown link", "This link is not valid. Go back to your client and start again."),
    409: ("In progress", "This step is being completed in another request. Wait a moment and reload."),
    410: (
        "Link expired or used",
        "This link has expired or has already been used. Go back to your client and start again.",
    ),
    413: ("Too large", "That submission is too large."),
}


def _cookie_name(handoff_id: str, secure: bool) -> str:
    return ("__Secure-" if secure else "") + f"mcp-elicit-{handoff_id}"


def _digest(marker: str) -> str:
    return hashlib.sha256(marker.encode()).hexdigest()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class _Pages:
    def __init__(self, hs: Handoffs) -> None:
        self.hs = hs
        self.prefix = hs.path_prefix

    # -- responses -------------------------------------------------------------------------

    def _secure(self, response: Response, form_origins: tuple[str, ...] = (), nonce: str = "") -> Response:
        style = f"style-src 'nonce-{nonce}'" if nonce else "style-src 'none'"
        form_action = " ".join(("'self'", *form_origins))
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; {style}; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
        )
        response.headers["Cache-Control"] = "no-store"
        response.headers["Pragma"] = "no-cache"
        # same-origin, not no-referrer: under no-referrer Chromium posts the page's own form with
        # `Origin: null`, which the form check must refuse; other sites still get no referrer.
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        return response

    def _render(
        self, template: str, status: int = 200, form_origins: tuple[str, ...] = (), **values: Any
    ) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = _ENV.get_template(template).render(nonce=nonce, **values)
        return self._secure(HTMLResponse(html, status_code=status), form_origins, nonce)

    def _refuse(self, status: int, reason: str, handoff_id: str = "") -> Response:
        logger.info("hand-off page refused (%s) %s", reason, handoff_id)
        title, text = _REFUSALS[status]
        return self._render("message.html", status, title=title, text=text)

    def _outcome(self, status: str, flow: HandoffFlow | None) -> Response:
        name = flow.display_name if flow is not None else "the service"
        if status == DONE:
            return self._render(
                "message.html",
                title="Done",
                text=f"{name} is connected. You can close this tab and go back to your client.",
            )
        if status == DECLINED:
            return self._render(
                "message.html", title="Cancelled", text="Nothing was connected. You can close this tab."
            )
        return self._render(
            "message.html",
            502,
            title="That did not work",
            text=f"{name} could not be connected. Go back to your client and try again.",
        )

    def _redirect(self, location: str) -> Response:
        return self._secure(RedirectResponse(location, status_code=303))

    # -- checks ----------------------------------------------------------------------------

    async def _person(self, request: Request) -> Principal | None:
        return await self.hs.identity.of_browser(request)

    async def _live(self, request: Request, handoff_id: str) -> HandoffRecord | Response:
        """The record if it exists, is open, unexpired and the person matches; else a refusal."""
        record = await self.hs.store.get(handoff_id)
        if record is None:
            return self._refuse(404, "unknown", handoff_id)
        if record.expired(self.hs.clock()):
            return self._refuse(410, "expired", handoff_id)
        if not record.open:
            return self._refuse(410, "used", handoff_id)
        person = await self._person(request)
        if person is None or not hmac.compare_digest(person.key.encode(), record.user.encode()):
            return self._refuse(403, "wrong_person" if person else "no_identity", handoff_id)
        return record

    def _marker(self, request: Request, record: HandoffRecord) -> str | None:
        """The browser marker cookie, when it is the one bound to this record."""
        secure = record.base.startswith("https:")
        marker = request.cookies.get(_cookie_name(record.id, secure))
        if marker is None or record.marker is None:
            return None
        return marker if hmac.compare_digest(_digest(marker), record.marker) else None

    async def _bound(self, request: Request, handoff_id: str) -> tuple[HandoffRecord, str] | Response:
        found = await self._live(request, handoff_id)
        if isinstance(found, Response):
            return found
        marker = self._marker(request, found)
        if marker is None:
            return self._refuse(403, "no_marker", handoff_id)
        return found, marker

    def _same_origin(self, request: Request, record: HandoffRecord) -> bool:
        origin = request.headers.get("origin")
        if origin is not None and origin != _origin(record.base):
            return False
        return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")

    # -- routes ----------------------------------------------------------------------------

    async def start(self, request: Request) -> Response:
        if _is_preview(request):  # a HEAD or a prefetch must not bind the link to that browser
            return self._render(
                "message.html", title="Open this link", text="Open this link in your browser."
            )
        link = self.hs.read_link(str(request.path_params["token"]))
        if link is None:
            return self._refuse(404, "bad_signature")
        handoff_id, expires = link
        if not self.hs.clock() < expires:
            return self._refuse(410, "expired", handoff_id)
        found = await self._live(request, handoff_id)
        if isinstance(found, Response):
            return found
        record = found
        page = f"{record.base}/h/{record.id}"
        if record.status == PENDING:
            marker = secrets.token_urlsafe(MARKER_BYTES)
            claimed = dataclasses.replace(record, status=OPENED, marker=_digest(marker))
            if not await self.hs.store.swap(claimed, expect=PENDING):
                return self._refuse(410, "used", handoff_id)
            response = self._redirect(page)
            secure = record.base.startswith("https:")
            response.set_cookie(
                _cookie_name(record.id, secure),
                marker,
                max_age=max(1, int(record.expires_at - self.hs.clock())),
                path=f"{urlsplit(record.base).path}/",
                secure=secure,
                httponly=True,
                samesite="lax",
            )
            return response
        if self._marker(request, record) is not None:  # the same browser, coming back
            return self._redirect(page)
        return self._refuse(410, "used", handoff_id)

    async def page(self, request: Request) -> Response:
        bound = await self._bound(request, str(request.path_params["handoff_id"]))
        if isinstance(bound, Response):
            return bound
        record, marker = bound
        return self._form(record, marker, await self._person(request))

    def _form(
        self, record: HandoffRecord, marker: str, person: Principal | None, error: str = ""
    ) -> Response:
        flow = self.hs.flow(record.flow)
        if flow is None:
            return self._refuse(404, "unknown_flow", record.id)
        if record.status != OPENED:
            return self._refuse(409, "busy", record.id)
        return self._render(
            flow.template,
            422 if error else 200,
            flow.form_action_origins(),
            title=flow.display_name,
            message=record.message,
            person=person.display if person else "",
            action=f"{record.base}/h/{record.id}",
            csrf=self.hs.csrf_token(record.id, marker),
            error=_ERROR_TEXT.get(error, "Please try again.") if error else "",
            **flow.page_vars(),
        )

    async def submit(self, request: Request) -> Response:
        handoff_id = str(request.path_params["handoff_id"])
        bound = await self._bound(request, handoff_id)
        if isinstance(bound, Response):
            return bound
        record, marker = bound
        if not self._same_origin(request, record):
            return self._refuse(403, "cross_origin", handoff_id)
        form = await _read_form(request)
        if form is None:
            return self._refuse(413, "too_large", handoff_id)
        expected = self.hs.csrf_token(record.id, marker)
        if not hmac.compare_digest(form.get("csrf", "").encode(), expected.encode()):
            return self._refuse(403, "csrf", handoff_id)
        flow = self.hs.flow(record.flow)
        if flow is None:
            return self._refuse(404, "unknown_flow", handoff_id)
        if record.status != OPENED:
            return self._refuse(409, "busy", handoff_id)
        working = dataclasses.replace(record, status=WORKING)
        if not await self.hs.store.swap(working, expect=OPENED):
            return self._refuse(409, "busy", handoff_id)
        person = await self._person(request)
        step = await self._run(flow.submit, working, form)
        return await self._settle(working, flow, step, marker, person)

    async def oauth_callback(self, request: Request) -> Response:
        params = dict(request.query_params)
        handoff_id, dot, _ = params.get("state", "").partition(".")
        if not dot:
            return self._refuse(400, "no_state")
        bound = await self._bound(request, handoff_id)
        if isinstance(bound, Response):
            return bound
        record, marker = bound
        expected = record.oauth_state or ""
        if record.status != OPENED or not expected:
            return self._refuse(409, "no_redirect_pending", handoff_id)
        if not hmac.compare_digest(params["state"].encode(), expected.encode()):
            return self._refuse(403, "state_mismatch", handoff_id)
        flow = self.hs.flow(record.flow)
        if flow is None:
            return self._refuse(404, "unknown_flow", handoff_id)
        working = dataclasses.replace(record, status=WORKING, oauth_state=None)  # single use
        if not await self.hs.store.swap(working, expect=OPENED):
            return self._refuse(409, "busy", handoff_id)
        step = await self._run(flow.callback, working, params)
        if isinstance(step, Again | Redirect):
            step = Failed("unexpected_step")
        return await self._settle(dataclasses.replace(working, oauth_verifier=None), flow, step, marker, None)

    async def _run(self, fn: Any, record: HandoffRecord, values: dict[str, str]) -> FlowStep | None:
        ctx = FlowContext(
            vault=self.hs.vault,
            user=record.user,
            record=record,
            callback_url=f"{record.base}/oauth/callback",
            now=self.hs.clock(),
        )
        try:
            step: FlowStep = await fn(ctx, values)
        except Exception:  # the flow's own failure (a vault or provider outage): let them retry
            logger.exception("hand-off %s: flow %s raised", record.id, record.flow)
            return None
        return step

    async def _settle(
        self,
        working: HandoffRecord,
        flow: HandoffFlow,
        step: FlowStep | None,
        marker: str,
        person: Principal | None,
    ) -> Response:
        store = self.hs.store
        if step is None or isinstance(step, Again):
            await store.swap(dataclasses.replace(working, status=OPENED), expect=WORKING)
            if step is None:
                return self._render(
                    "message.html", 503, title="Try again", text="Something went wrong on our side."
                )
            reopened = dataclasses.replace(working, status=OPENED)
            return self._form(reopened, marker, person, step.error)
        if isinstance(step, Redirect):
            waiting = dataclasses.replace(
                working, status=OPENED, oauth_state=step.oauth_state, oauth_verifier=step.oauth_verifier
            )
            await store.swap(waiting, expect=WORKING)
            return self._redirect(step.location)
        final = DONE if isinstance(step, Done) else DECLINED if isinstance(step, Declined) else FAILED
        finished = dataclasses.replace(working, status=final, oauth_state=None, oauth_verifier=None)
        if not await store.swap(finished, expect=WORKING):
            return self._refuse(410, "used", working.id)
        if isinstance(step, Failed):
            logger.warning("hand-off %s: flow %s failed (%s)", working.id, working.flow, step.reason)
        logger.info("hand-off %s: %s", working.id, final)
        return self._outcome(final, flow)


def _is_preview(request: Request) -> bool:
    purpose = f"{request.headers.get('sec-purpose', '')} {request.headers.get('purpose', '')}".lower()
    return request.method == "HEAD" or "prefetch" in purpose or "prerender" in purpose


async def _read_form(request: Request) -> dict[str, str] | None:
    """An urlencoded body, read up to MAX_FORM_BYTES; None when larger."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except (UnicodeDecodeError, ValueError):
        return {}
    return dict(pairs)


def mount_handoff_pages(server: Any, hs: Handoffs) -> None:
    """Add the hand-off pages to `server`'s HTTP app and run the completion relay on its lifespan;
    with `hs.pages_listen`, also serve them on the server's own loopback listener (for stdio)."""
    pages = _Pages(hs)
    prefix = hs.path_prefix
    routes: list[tuple[str, list[str], Any]] = [
        (f"{prefix}/start/{{token}}", ["GET"], pages.start),
        (f"{prefix}/h/{{handoff_id}}", ["GET"], pages.page),
        (f"{prefix}/h/{{handoff_id}}", ["POST"], pages.submit),
        (f"{prefix}/oauth/callback", ["GET"], pages.oauth_callback),
    ]
    for path, methods, endpoint in routes:
        sdk_serving.add_route(server, path, methods, endpoint)

    @asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with hs.running():
            if hs.pages_listen is None:
                yield
                return
            async with loopback.serving(routes, hs.pages_listen) as origin:
                hs.loopback_origin = origin
                try:
                    yield
                finally:
                    hs.loopback_origin = None

    sdk_serving.wrap_lifespan(sdk.lowlevel_of(server), running)
