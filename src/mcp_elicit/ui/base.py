"""The small protocol every UI implements: show a prepared form (or URL) and return what the person did.

The client pipeline does everything else (identity, mode and schema checks, cleaning text,
validation, auditing) and hands a UI only safe, cleaned values: a UI never sees raw server
text and never talks to the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from mcp_elicit.core.forms import Form

__all__ = ["FormPrompt", "Purpose", "Requester", "UIResult", "UrlPrompt", "UserInterface"]

Action = Literal["accept", "decline", "cancel"]


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


@dataclass(frozen=True, slots=True)
class UrlPrompt:
    """A URL hand-off ready to show: the cleaned message, the URL and its display parts and warnings."""

    requester: Requester
    purpose: Purpose
    message: str
    url: str
    display: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UIResult:
    """What the person did; `content` only with accept on a form."""

    action: Action
    content: Mapping[str, Any] | None = None
    decided_by: Literal["person", "script", "timeout"] = "person"


@runtime_checkable
class UserInterface(Protocol):
    async def ask_form(self, prompt: FormPrompt) -> UIResult: ...

    async def ask_url(self, prompt: UrlPrompt) -> UIResult: ...

    async def notice(self, requester: Requester, text: str) -> None:
        """Tell the person something happened without asking (a refused form, a policy decision)."""
        ...
