"""The URL stages `UrlMode.install` puts in a pipeline (`check_url`, and `ask` wrapped), and what the
person sees of a URL: its prompt and the warnings for each reason code. See `client/url.py`.

The stages reach their `UrlMode` through the small `UrlModeLike` protocol, so this module does not
import `client/url.py` (which imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Protocol

from mcp_elicit.client.model import Decision, Elicitation, Refuse, Reply
from mcp_elicit.client.stages import Stage
from mcp_elicit.client.ui_protocol import Requester, UrlPrompt
from mcp_elicit.client.url_flow import Consent, UrlCall
from mcp_elicit.core.urls import UrlVerdict, check_url, escape_for_display

__all__ = [
    "MAX_ELICITATION_ID_CHARS",
    "CheckUrl",
    "UrlAsk",
    "UrlModeLike",
    "page_key",
    "url_prompt",
    "url_warnings",
]

# Longest elicitationId accepted (the server kit's are 32 characters): the ids are kept in memory.
MAX_ELICITATION_ID_CHARS: Final = 256


class UrlModeLike(Protocol):
    """What the URL stages need from their `UrlMode`."""

    trusted_domains: tuple[str, ...]

    def prompt(self, e: Elicitation, verdict: UrlVerdict) -> UrlPrompt: ...

    async def tell(self, requester: Requester, text: str) -> None: ...

    async def check_again(self, e: Elicitation, consent: Consent) -> Decision: ...

    def call_of(self) -> UrlCall | None: ...

    async def open_consented(
        self, e: Elicitation, verdict: UrlVerdict, decision: Reply, call: UrlCall | None
    ) -> Decision: ...


# What each reason code of core/urls.py means to the person (U3: warn on suspicious URLs).
_REASON_TEXT: Final[Mapping[str, str]] = {
    "unparseable": "This is not a valid web address.",
    "input_too_long": "The address is far too long to be a real page; it was not even read.",
    "scheme_not_allowed": "Only https pages can be opened; this address is of another kind "
    "(javascript:, data:, file: and the like are never opened).",
    "http_not_loopback": "Plain http to another machine: anyone on the way could read or change the page.",
    "credentials": "The address carries a user name or password.",
    "empty_host": "The address names no site.",
    "host_too_long": "The site name is longer than any real one can be.",
    "control_chars": "The address contains control characters.",
    "bidi_chars": "The address contains characters that reverse the text direction: "
    "it may not go where it seems to.",
    "invisible_chars": "The address contains invisible characters.",
    "ip_obfuscated": "The site is a network address written in a disguised form.",
    "link_local": "The site is a link-local network address.",
    "reserved_address": "The site is a reserved network address.",
    "mixed_script": "The site name mixes alphabets in a way used to imitate other sites.",
    "digit_lookalike": "The site name is made of characters that imitate digits.",
    "disallowed_chars": "The site name contains characters browsers refuse to show.",
    "dangerous_pattern": "The site name contains a character pattern used to imitate other sites.",
    "check_failed": "The address could not be checked.",
    "too_long": "The address is very long: check where it really goes.",
    "ip_literal": "The site is a bare network address, not a name you can recognise.",
    "private_address": "The site is a private network address.",
    "no_registrable_domain": "No site name can be shown for this address.",
    "punycode": "The site name uses international characters: check it letter by letter.",
    "whole_script_confusable": "The site name is written entirely in letters that look Latin but are not.",
    "embedded_domain": "A well-known site name appears inside the address of a different site.",
}


def url_warnings(verdict: UrlVerdict) -> tuple[str, ...]:
    """The verdict's reasons in words, each ending with its code (`loopback` says nothing)."""
    shown = []
    for code in verdict.reasons:
        if code == "lookalike":
            text = (
                f"The site name looks like {escape_for_display(verdict.lookalike_of or 'a well-known site')} "
                "but is a different site."
            )
        elif code in _REASON_TEXT:
            text = _REASON_TEXT[code]
        else:
            continue
        shown.append(f"{text} ({code})")
    return tuple(shown)


def page_key(verdict: UrlVerdict) -> str:
    """What makes two requests ask for the same page: the canonical URL."""
    return verdict.canonical if verdict.canonical is not None else verdict.raw


class CheckUrl:
    """The URL check (U3, U4); a page asked for again within a call is waited on, not re-asked (U8)."""

    name = "check_url"

    def __init__(self, mode: UrlModeLike) -> None:
        self.mode = mode

    async def __call__(self, e: Elicitation) -> Decision | None:
        if e.mode != "url":
            return None
        verdict = check_url(e.url or "", trusted_domains=self.mode.trusted_domains)
        e.url_verdict = verdict
        params = e.params
        if e.delivery == "push":
            eid = params.get("elicitationId")
            if not isinstance(eid, str) or not 1 <= len(eid) <= MAX_ELICITATION_ID_CHARS:
                return Refuse(
                    "elicitation_id",
                    f"a URL request needs an elicitationId of 1 to {MAX_ELICITATION_ID_CHARS} characters",
                )
            e.elicitation_id = eid
            return None
        call = self.mode.call_of()
        if call is None:
            return None
        key = page_key(verdict)
        consent = call.consented.get(key)
        if consent is not None:
            return await self.mode.check_again(e, consent)
        if key in call.refused:
            await self.mode.tell(
                e.requester,
                "The server asked again for a page this request already "
                f"answered ({call.refused[key]}): the request was stopped.",
            )
            return Refuse(
                "url_asked_again", "the server asked again for a page this request already answered"
            )
        return None


class UrlAsk:
    """The `ask` stage with URL mode: consent through the UI, then open (U2, U3); forms pass through."""

    name = "ask"

    def __init__(self, inner: Stage, mode: UrlModeLike) -> None:
        self.inner = inner
        self.mode = mode

    async def __call__(self, e: Elicitation) -> Decision | None:
        call = self.mode.call_of()
        if call is not None:
            call.asking()  # a waiting screen gives way to any question
        verdict = e.url_verdict
        if e.mode != "url" or verdict is None:
            return await self.inner(e)  # forms; a URL nobody checked is cancelled by the inner stage
        e.url_prompt = self.mode.prompt(e, verdict)
        decision = await self.inner(e)
        if not isinstance(decision, Reply):
            return decision
        key = page_key(verdict)
        if verdict.verdict == "block":
            # Never opened, whatever the UI said; the server hears decline (an explicit no).
            if call is not None:
                call.refused[key] = "blocked"
            return Reply("decline", decision.decided_by, reason="url_blocked:" + ",".join(verdict.reasons))
        if decision.action != "accept":
            if call is not None:
                call.refused[key] = decision.action
            return decision
        # Open only once the consent is on record (the observers run first, and an audit sink that
        # cannot write turns the answer into a decline before anything is opened: fail closed).
        e.after_recorded = lambda: self.mode.open_consented(e, verdict, decision, call)
        return decision


def url_prompt(e: Elicitation, verdict: UrlVerdict) -> UrlPrompt:
    """What the person sees of a checked URL: who asks, the message, the URL and its parts, escaped."""
    parts = verdict.parts
    display = {
        "scheme": escape_for_display(parts.scheme),
        "subdomain": escape_for_display(parts.subdomain),
        "registrable_domain": escape_for_display(parts.registrable_domain),
        "rest": escape_for_display(parts.rest),
        "host": escape_for_display(verdict.host_display or ""),
    }
    raw = escape_for_display(verdict.raw)
    if raw != escape_for_display(verdict.display_url):
        display["raw"] = raw  # what the server sent, when it differs from what opens
    return UrlPrompt(
        e.requester,
        e.purpose,
        e.message,
        escape_for_display(verdict.display_url),
        display,
        tuple(e.warnings) + url_warnings(verdict),
        verdict.verdict,
        verdict.reasons,
    )
