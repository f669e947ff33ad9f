"""The secret guard (F5), in the default chain before `ask`: a form that asks for a secret is never shown.

`core.sensitive.classify_schema` on the request's raw `requestedSchema` and message. ``block``: the
form is never shown, the server gets ``decline`` and the person a short notice
(`decided_by="secret_guard"`, reason ``secret_in_form``). ``warn``: the form is shown with a warning.
Its own module so the pipeline's default chain and the guardrails both use it without importing
each other.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

from mcp_elicit.client.model import Decision, Elicitation, Reply
from mcp_elicit.client.stages import CACHED_FORMS, CACHED_SCHEMA_CHARS, Recent
from mcp_elicit.client.ui_protocol import Requester, UserInterface
from mcp_elicit.core.sensitive import FormVerdict, classify_schema

__all__ = ["NOTICE_FIELDS", "SecretGuard", "tell", "titles"]

logger = logging.getLogger(__name__)

# Field titles named in a secret-guard notice or warning; the rest are counted ("and 3 more"). A
# notice is one line on screen: three titles say what was asked without burying the point.
NOTICE_FIELDS: Final = 3


async def tell(ui: UserInterface, requester: Requester, text: str) -> None:
    """A notice that cannot fail the decision it explains."""
    try:
        await ui.notice(requester, text)
    except Exception:
        logger.exception("the UI failed to show a notice")


def titles(e: Elicitation, names: tuple[str, ...]) -> str:
    """Cleaned titles of the named fields, quoted, at most a few."""
    form = e.prompt_form or e.form
    shown = []
    for name in names[:NOTICE_FIELDS]:
        title = name
        if form is not None and name in form.names:
            title = form.field(name).title or name
        shown.append(f"“{title}”")
    more = len(names) - NOTICE_FIELDS
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


class SecretGuard:
    """Never show a form that asks for a secret (F5); warn about one that may."""

    name = "secret_guard"

    def __init__(self, ui: UserInterface) -> None:
        self.ui = ui
        # A server asks the same form with the same message again and again: the verdict is
        # reused when the schema (by the schema gate's exact key) and the message are the same.
        self._recent = Recent(CACHED_FORMS)

    async def __call__(self, e: Elicitation) -> Decision | None:
        if e.mode != "form" or e.form is None or not isinstance(e.params, Mapping):
            return None
        raw = e.params.get("message")
        message = raw if isinstance(raw, str) else None
        key = (
            (e.schema_key, message)
            if e.schema_key is not None and len(message or "") <= CACHED_SCHEMA_CHARS
            else None
        )
        verdict = self._recent.get(key) if key is not None else None
        if verdict is None:
            verdict = classify_schema(e.params.get("requestedSchema"), message)
            if key is not None:
                self._recent.put(key, verdict)
        e.form_verdict = verdict  # the audit record reuses it
        if verdict.verdict == "block":
            by_message = any("secret_in_message" in f.reasons for f in verdict.fields)
            what = "a secret (its message says so)" if by_message else titles(e, verdict.blocked)
            await tell(
                self.ui,
                e.requester,
                f"This server asked for {what} in a form. Secrets such as "
                "passwords, API keys, tokens and card numbers must never be typed into a form, so "
                "it was not shown and the server was told no.",
            )
            return Reply("decline", "secret_guard", reason="secret_in_form")
        if verdict.verdict == "warn":
            e.warnings.append(_warning(e, verdict))
        return None


def _warning(e: Elicitation, verdict: FormVerdict) -> str:
    if verdict.flagged:
        what = f"{titles(e, verdict.flagged)} may be sensitive"
    else:
        what = "The message mentions a secret"
    return (
        f"{what}: servers must not ask for secrets in a form. Decline if it wants a password, key or token."
    )
