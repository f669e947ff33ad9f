"""The small protocol every UI implements: show a prepared form (or URL) and return what the person did.

The client pipeline does everything else (identity, mode and schema checks, cleaning text,
validation, auditing) and hands a UI only safe, cleaned values: a UI never sees raw server
text and never talks to the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from mcp_elicit.core.actions import Action
from mcp_elicit.core.forms import Form
from mcp_elicit.core.verdicts import Verdict

__all__ = [
    "FormPrompt",
    "Purpose",
    "Requester",
    "UIResult",
    "UrlCapableUI",
    "UrlPrompt",
    "UrlWaiting",
    "UserInterface",
    "WaitChoice",
]


@dataclass(frozen=True, slots=True)
class Requester:
    """Who is asking: the server as it introduced itself, and where it runs (a command line or a URL)."""

    name: str
    where: str
    title: str | None = None
    version: str | None = None


@dataclass(frozen=True, slots=True)
class Purpose:
    """What the answer serves: the request in flight (`tools/call`, `prompts/get`, `resources/read`),
    its target (tool or prompt name, resource URI) and its arguments; None fields when unknown."""

    method: str | None = None
    target: str | None = None
    arguments: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class FormPrompt:
    """A form ready to show. `message` and every title/description in `form` are already cleaned.

    `values` pre-fills the form (defaults first time, the person's own answers on a retry) and
    `errors` maps a field name to why its last answer was refused.
    """

    requester: Requester
    purpose: Purpose
    message: str
    form: Form
    values: Mapping[str, Any] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # The policy's ask-first approval (no fields, nothing of the person's is sent): a UI asks
    # "allow?" instead of showing an empty form.
    approval: bool = False


@dataclass(frozen=True, slots=True)
class UrlPrompt:
    """A URL hand-off ready to show: the cleaned message, the URL and its display parts and warnings.

    `url` is the full URL as it will open, escaped for display; `display` cuts it into `scheme`,
    `subdomain`, `registrable_domain` (the part to emphasise) and `rest`. `verdict` is the URL
    check's (`core/urls.py`): with "block" a UI must not offer to open the page, only decline or
    cancel. `reasons` are the check's stable reason codes; `warnings` say them in words.
    `headless`: after consent the link is shown for the person to open elsewhere, not opened.
    """

    requester: Requester
    purpose: Purpose
    message: str
    url: str
    display: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    verdict: Verdict = "ok"
    reasons: tuple[str, ...] = ()
    headless: bool = False


WaitChoice = Literal["retry", "open", "cancel"]
"""What the person did on the waiting screen: check again now, open the page again, or give up."""


@dataclass(frozen=True, slots=True)
class UrlWaiting:
    """The page at `prompt` was opened and the client is waiting for it to be finished (U6, U8).

    `reason`: "completion" (waiting for the server to say the page is done: 2025-11-25) or
    "retry" (the client asks the server again every so often: 2026-07-28). `can_retry` says
    whether checking again now means anything (not while the server itself waits on a pushed
    request). `check` counts the checks so far and `max_checks` bounds them (0: unbounded here);
    `next_check_seconds` is when the client checks on its own (None: when the server says so).
    """

    prompt: UrlPrompt
    reason: Literal["completion", "retry"]
    can_retry: bool = True
    check: int = 0
    max_checks: int = 0
    next_check_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class UIResult:
    """What the person did; `content` only with accept on a form; `reason` says why, when the UI
    itself decided (a scripted answer refused by the form), and lands in the outcome record.
    `no_terminal`: the UI had nobody to ask (the gateway's downstream client cannot show it);
    `gate`: the UI refused to show it (the gateway never relays a blocked URL); `error`: nobody
    decided (the gateway's downstream client went away or answered with an error)."""

    action: Action
    content: Mapping[str, Any] | None = None
    decided_by: Literal["person", "script", "timeout", "no_terminal", "gate", "error"] = "person"
    reason: str = ""


@runtime_checkable
class UserInterface(Protocol):
    async def ask_form(self, prompt: FormPrompt) -> UIResult: ...

    async def ask_url(self, prompt: UrlPrompt) -> UIResult: ...

    async def notice(self, requester: Requester, text: str) -> None:
        """Tell the person something happened without asking (a refused form, a policy decision)."""
        ...


@runtime_checkable
class UrlCapableUI(UserInterface, Protocol):
    """A UI that can take part in URL mode: consent (`ask_url`) and the waiting screen.

    `wait_url` shows that the client waits for the page and returns when the person chooses:
    "retry" (check now), "open" (open the page again) or "cancel". The client cancels the call
    when the wait ends on its own (the page was finished, the next automatic check is due); a UI
    with nothing left to read (end of input) just waits to be cancelled.
    """

    async def wait_url(self, waiting: UrlWaiting) -> WaitChoice: ...
