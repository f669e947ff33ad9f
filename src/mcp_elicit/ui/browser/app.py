"""`BrowserUI`: the client kit's UI in a local web page (forms, approvals, URL consent, waiting).

::

    async with BrowserUI() as ui:
        print("Answer questions at", ui.url, file=sys.stderr)
        async with ElicitClient(spec, ui=ui, url_mode=ui.url_mode()) as client:
            ...

The page lives on 127.0.0.1 at a port the system picks, under an unguessable per-session link
(`url`); see `guard.py` for what protects it. It shows one question at a time (`questions.py`):

- a form: who asks, for which call, the message and every warning as text; each field a native
  labelled input (`fields.py`); problems next to their fields; then a review step where any answer
  can be changed before it is sent; decline and cancel on every step;
- a form without fields: a go-ahead (the policy's ask-first approval: "allow this server to ask?");
- a URL hand-off: the full URL with its registrable domain highlighted, the warnings, and an
  "Open" button that records consent; a blocked URL gets no open button, only decline and cancel;
- the waiting screen: a link that opens the page in a new top-level tab without a referrer
  (``target=_blank rel="noopener noreferrer"``, the page's own no-referrer policy), check again,
  and cancel.

The UI opens nothing itself: `opener` (what `url_mode()` installs) only makes the link appear on
the waiting screen once the client has recorded the person's consent, so a page opens in the
person's own browser, out of sight of the client and the model.

Without JavaScript every step works (plain forms, post/redirect/get, the idle and waiting pages
refresh themselves); the script only reloads the page when the question on screen changes, moves
the focus to the first field with a problem, and reports that the person is typing or choosing
(at most every `ACTIVITY_REPORT_SECONDS`), which keeps the idle timeout from firing meanwhile.
When the session ends (the `async with` closes), an open tab is told so (it then says "This
session has ended" instead of showing a question nobody can answer), within `ENDED_PAGE_SECONDS`.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from importlib.resources import files
from types import TracebackType
from typing import Any, Final
from urllib.parse import parse_qs

import anyio
import anyio.abc
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from mcp_elicit.client.guardrails import APPROVAL_TAIL
from mcp_elicit.client.ui_protocol import (
    FormPrompt,
    Requester,
    UIResult,
    UrlPrompt,
    UrlWaiting,
    WaitChoice,
)
from mcp_elicit.core.redact import redact_where
from mcp_elicit.core.urls import check_url, escape_for_display
from mcp_elicit.errors import ConfigError, UrlHandoffStopped
from mcp_elicit.ui.browser import fields as F
from mcp_elicit.ui.browser.guard import LOOPBACK, LocalServer, PageGuard, new_token
from mcp_elicit.ui.browser.questions import (
    IDLE_TIMEOUT_SECONDS,
    Question,
    QuestionQueue,
    kind_of_form,
)

__all__ = [
    "ACTIVITY_REPORT_SECONDS",
    "ENDED_PAGE_SECONDS",
    "IDLE_CHECK_SECONDS",
    "MAX_RELEASED_URLS",
    "REFRESH_SECONDS",
    "BrowserUI",
    "page_environment",
]

# Seconds between two checks for a forgotten question (the idle timeout's resolution).
IDLE_CHECK_SECONDS: Final = 5.0

# Seconds after which the idle and waiting pages reload themselves without JavaScript.
REFRESH_SECONDS: Final = 5

# Seconds between two "the person is active" reports from the page's script (typing, clicking in
# the question); at most one report per this many seconds, so the idle timeout counts from the
# person's last activity to within this.
ACTIVITY_REPORT_SECONDS: Final = 15

# Seconds the page is still served after its session ends, so an open tab hears that it ended
# (its script polls every second): only while a tab is polling, and only until it has heard.
ENDED_PAGE_SECONDS: Final = 2

# URLs released for the waiting screen's link, newest kept.
MAX_RELEASED_URLS: Final = 32


def page_environment() -> Environment:
    """The templates, autoescaped everywhere (also for strings), so no server text becomes markup."""
    return Environment(
        loader=PackageLoader("mcp_elicit.ui.browser", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        auto_reload=False,
    )


def static_files() -> StaticFiles:
    return StaticFiles(directory=str(files("mcp_elicit.ui.browser") / "static"))


class BrowserUI:
    """Implements `UrlCapableUI` in a local page; use as an async context manager (it serves the
    page while open). `clock` and `idle_timeout` drive the idle timeout (None: none).
    `on_question` is called each time a form or a page to open waits in the page (the command
    line says so where the person is looking)."""

    def __init__(
        self,
        *,
        port: int = 0,
        clock: Callable[[], float] = time.monotonic,
        idle_timeout: float | None = IDLE_TIMEOUT_SECONDS,
        idle_check_seconds: float = IDLE_CHECK_SECONDS,
        on_question: Callable[[], None] | None = None,
    ) -> None:
        self.on_question = on_question
        self.queue = QuestionQueue(clock, idle_timeout)
        self.token = new_token()
        self.csrf = new_token()
        self._port = port
        self._idle_check = idle_check_seconds
        self._server: LocalServer | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._released: OrderedDict[str, str] = OrderedDict()
        self._ended = False  # the session is over: the page says so, and asks nothing more
        self._ended_heard = anyio.Event()  # an open tab has been told that it ended
        self._last_poll = -math.inf  # when a tab last asked for the state (time.monotonic)
        self._env = page_environment()
        self.app = self._build_app()

    # -- lifetime ---------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise ConfigError("browser_ui", "BrowserUI serves its page only inside `async with`")
        return self._server.port

    @property
    def url(self) -> str:
        """The page's link for this session (the token in it is the only way in)."""
        return f"http://{LOOPBACK}:{self.port}/{self.token}/"

    async def __aenter__(self) -> BrowserUI:
        self._server = LocalServer(self._port)
        guarded = PageGuard(self.app, port=self._server.port, token=self.token, csrf=self.csrf)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        await self._tg.start(self._server.serve, guarded)
        self._tg.start_soon(self._check_idle)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if self._tg is None:
            return None
        for q in list(self.queue.items):  # nobody can answer once the page is gone
            q.finish("cancel" if q.kind == "wait" else UIResult("cancel"))
        self._ended = True
        self.queue._changed()
        if exc_type is None and time.monotonic() - self._last_poll < ENDED_PAGE_SECONDS:
            # A tab is open and polling: it hears at its next poll that the session ended (bounded).
            with anyio.CancelScope(shield=True), anyio.move_on_after(ENDED_PAGE_SECONDS):
                await self._ended_heard.wait()
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    async def _check_idle(self) -> None:
        while True:
            await anyio.sleep(self._idle_check)
            self.queue.expire_idle()

    def url_mode(self, **options: Any) -> Any:
        """A `client.url.UrlMode` whose opener is this page (the waiting screen's link)."""
        from mcp_elicit.client.url import UrlMode

        return UrlMode(opener=_ThePage(self), **options)

    async def opener(self, url: str) -> None:
        """Release a consented URL: the waiting screen links to it (the person opens it)."""
        verdict = check_url(url)
        if not url.startswith(("https://", "http://")) or verdict.verdict == "block":
            raise UrlHandoffStopped("refused")  # only http(s) URLs whose check is not block
        self._released[escape_for_display(verdict.display_url)] = url
        self._released.move_to_end(escape_for_display(verdict.display_url))
        while len(self._released) > MAX_RELEASED_URLS:
            self._released.popitem(last=False)
        self.queue._changed()

    # -- UserInterface ----------------------------------------------------------------------------

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        self._tell()
        result = await self.queue.ask(kind_of_form(prompt), prompt)
        return result if isinstance(result, UIResult) else UIResult("cancel")

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        self._tell()
        result = await self.queue.ask("url", prompt)
        return result if isinstance(result, UIResult) else UIResult("cancel")

    def _tell(self) -> None:
        if self.on_question is not None:
            self.on_question()

    async def wait_url(self, waiting: UrlWaiting) -> WaitChoice:
        result = await self.queue.ask("wait", waiting)
        return result if isinstance(result, str) else "cancel"

    async def notice(self, requester: Requester, text: str) -> None:
        who = F.visible(requester.name) or F.visible(redact_where(requester.where)) or "a server"
        self.queue.notices.appendleft(f"{who}: {F.visible(text)}")
        self.queue._changed()

    # -- pages ------------------------------------------------------------------------------------

    def _build_app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/", self._page, methods=["GET"]),
                Route("/state", self._state, methods=["GET"]),
                Route("/q/{qid}", self._post, methods=["POST"]),
                Route("/q/{qid}/active", self._active, methods=["POST"]),
                Mount("/static", static_files(), name="static"),
            ]
        )

    def _render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        q = self.queue.head
        base = {
            "root": request.scope.get("root_path", ""),
            "csrf": self.csrf,
            "queued": max(0, len(self.queue.items) - 1),
            "notices": list(self.queue.notices),
            "flash": self.queue.flash,
            "qid": q.id if q else "",
            "active_every": ACTIVITY_REPORT_SECONDS,
            "live": True,  # the script follows this page's state (the audit page has none)
        }
        self.queue.flash = ""
        html = self._env.get_template(template).render(**base, **context)
        return HTMLResponse(html, status_code=status)

    async def _state(self, request: Request) -> Response:
        if self._ended:
            self._ended_heard.set()
            # with what the page had still to say (a question withdrawn as its call ended)
            return JSONResponse({"ended": True, "question": "", "queued": 0, "flash": self.queue.flash})
        self._last_poll = time.monotonic()
        q = self.queue.head
        return JSONResponse({"question": q.id if q else "", "queued": max(0, len(self.queue.items) - 1)})

    async def _active(self, request: Request) -> Response:
        """The script's report that the person is working on the question on screen (typing,
        choosing): it counts as a touch, as a submission does. Behind the guard's CSRF check."""
        q = self.queue.head
        if q is not None and q.id == request.path_params["qid"]:
            self.queue.touch(q)
        return Response(status_code=204)

    async def _page(self, request: Request) -> Response:
        if self._ended:
            return self._render(request, "ended.html", title="Session ended")
        self.queue.expire_idle()
        q = self.queue.head
        if q is None:
            return self._render(request, "idle.html", title="No question", refresh=REFRESH_SECONDS)
        self.queue.touch(q)
        if isinstance(q.prompt, UrlWaiting):
            return self._waiting_page(request, q, q.prompt)
        who = _who(q.prompt.requester, q.prompt.purpose)

        def question_page(
            template: str, title: str, message: str, warnings: Iterable[str], **context: Any
        ) -> Response:
            """A page that shows the question: its message and the client's warnings about it."""
            return self._render(
                request,
                template,
                title=title,
                q=q,
                who=who,
                message=F.visible(message),
                warnings=[F.visible(w) for w in warnings],
                **context,
            )

        if isinstance(q.prompt, UrlPrompt):
            p = q.prompt
            return question_page(
                "url.html",
                "Open a web page?",
                p.message,
                p.warnings,
                parts={k: F.visible(v) for k, v in p.display.items()},
                url=F.visible(p.url),
                blocked=p.verdict == "block",
            )
        prompt = q.prompt
        if q.kind == "approval":
            message = prompt.message
            # Only the pipeline's own approval gets the policy's frame: a server's empty form may
            # copy its wording, never its flag.
            policy = isinstance(prompt, FormPrompt) and prompt.approval
            if policy:
                message = message.split(APPROVAL_TAIL, 1)[0]
            title = "Allow this server to ask?" if policy else "Go ahead?"
            return question_page("approval.html", title, message, prompt.warnings, policy=policy)
        views = F.field_views(prompt.form, q.values, q.errors)
        if q.stage == "review":
            rows = [
                (v, F.shown_value(f, q.values[f.name]) if f.name in q.values else None)
                for v, f in zip(views, prompt.form.fields, strict=True)
            ]
            # Send is the consent: its page keeps what it agrees to (the message, every warning).
            return question_page(
                "review.html", "Review your answers", prompt.message, prompt.warnings, rows=rows
            )
        orphans = [F.visible(why) for name, why in q.errors.items() if name not in prompt.form.names]
        return question_page(
            "form.html",
            "A question for you",
            prompt.message,
            prompt.warnings,
            fields=views,
            orphans=orphans,
            problems=sum(1 for v in views if v.error),
        )

    def _waiting_page(self, request: Request, q: Question, waiting: UrlWaiting) -> Response:
        p = waiting.prompt
        site = F.visible(p.display.get("registrable_domain") or p.url)
        return self._render(
            request,
            "waiting.html",
            title="Waiting for the page",
            q=q,
            waiting=waiting,
            site=site,
            link=self._released.get(p.url, ""),
            next_check=None if waiting.next_check_seconds is None else round(waiting.next_check_seconds, 1),
            refresh=REFRESH_SECONDS,
        )

    async def _post(self, request: Request) -> Response:
        root = request.scope.get("root_path", "")
        back = RedirectResponse(f"{root}/", status_code=303)
        q = self.queue.head
        if q is None or q.id != request.path_params["qid"]:
            self.queue.flash = "That question is no longer open."
            return back
        self.queue.touch(q)
        form = parse_qs((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
        action = (form.get("do") or [""])[0]
        change = (form.get("change") or [""])[0]
        if q.kind == "wait":
            if action in ("retry", "open", "cancel"):
                q.finish(action)  # type: ignore[arg-type]
                self.queue.flash = {"retry": "Checking now.", "open": "Opening again.", "cancel": ""}[action]
                if action == "cancel":
                    self.queue.flash = "Stopped waiting: the request is cancelled."
            return back
        if action == "decline":
            self.queue.flash = "Declined: the server is told no."
            q.finish(UIResult("decline"))
        elif action == "cancel":
            self.queue.flash = "Cancelled: the server is told you dismissed the question."
            q.finish(UIResult("cancel"))
        elif q.kind == "approval" and action == "accept":
            self.queue.flash = "Allowed."
            q.finish(UIResult("accept", {}))
        elif q.kind == "url" and action == "open":
            if isinstance(q.prompt, UrlPrompt) and q.prompt.verdict == "block":
                return Response("This page is blocked; it cannot be opened.", status_code=409)
            self.queue.flash = "Accepted: the page can be opened now."
            q.finish(UIResult("accept"))
        elif q.kind == "form" and isinstance(q.prompt, FormPrompt):
            return self._form_step(q, q.prompt, action, change, form, back)
        return back

    def _form_step(
        self,
        q: Question,
        prompt: FormPrompt,
        action: str,
        change: str,
        form: dict[str, list[str]],
        back: Response,
    ) -> Response:
        names = prompt.form.fields
        if change.isdigit() and int(change) < len(names):
            q.stage, q.focus = "edit", f"field-{change}"
            back.headers["location"] += f"#{q.focus}"
            return back
        if action == "review":
            submitted = {f.name: form.get(f"f.{f.name}", []) for f in names}
            unreadable = {f.name for f in names if form.get(f"bad.{f.name}")}  # the script's report
            values, errors = F.parse_submission(prompt.form, submitted, unreadable)
            q.values, q.errors = values, errors
            q.revision += 1
            if errors:
                for f in names:  # keep what was typed, to correct it in place
                    raw = submitted[f.name]
                    if f.name in errors and raw and f.kind in ("string", "number", "integer"):
                        q.values[f.name] = raw[0]
                q.stage = "edit"
                first = next(i for i, f in enumerate(names) if f.name in errors)
                back.headers["location"] += f"#field-{first}"
            else:
                q.stage = "review"
            return back
        if action == "send" and (form.get("rev") or [""])[0] != str(q.revision):
            # answers reviewed in another tab (or window) since this page was shown: show them
            self.queue.flash = "These answers were changed in another tab. Check them, then send."
            return back
        if action == "send" and q.stage == "review" and not q.errors:
            content = {f.name: q.values[f.name] for f in names if f.name in q.values}
            self.queue.flash = "Sent."
            q.finish(UIResult("accept", content))
        return back


def _who(requester: Requester, purpose: Any) -> dict[str, str]:
    return {
        "name": F.visible(requester.name) or "(unnamed server)",
        "server": F.requester_text(requester),
        "where": F.visible(redact_where(requester.where)),
        "purpose": F.purpose_text(purpose),
    }


class _ThePage:
    """The page as URL mode's opener: it never opens anything; after the person consents there,
    the waiting screen links to the page and the person clicks it (`BrowserUI.opener`)."""

    description = "in the page: after you consent there, it links to the page for you to open"

    def __init__(self, ui: BrowserUI) -> None:
        self._ui = ui

    async def __call__(self, url: str) -> None:
        await self._ui.opener(url)
