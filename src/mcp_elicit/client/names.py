"""A server's name, title and version as prompts and records show them (`cleaned_requester`):
cleaned to one line (`core.text`), and marked where the shown name is not simply what the server
sent: escapes or control characters removed (`CLEANED_NAME_MARK`), or letters that mix scripts,
as a look-alike of another server's name does (`MIXED_SCRIPTS_MARK`, `core.text.mixes_scripts`),
or letters that are not the Latin ones they pass for (`NOT_LATIN_MARK`, `core.text.passes_for_latin`).
"""

from __future__ import annotations

import re
from typing import Final

from mcp_elicit.client.ui_protocol import Requester
from mcp_elicit.core import limits
from mcp_elicit.core.text import CUT_MARKER, clean_text, mixes_scripts, passes_for_latin, sanitize

__all__ = ["CLEANED_NAME_MARK", "MIXED_SCRIPTS_MARK", "NOT_LATIN_MARK", "cleaned_requester"]


def cleaned_requester(raw: Requester) -> Requester:
    """The server as prompts and records show it: every text cleaned to one line, a name that lost
    escapes or control characters marked, a name or title that mixes scripts marked too
    (`core.text.mixes_scripts`). Cleaning a cleaned requester changes nothing."""
    return Requester(
        name=_marked_name(raw.name),
        where=clean_text(raw.where, limit=limits.MAX_SERVER_NAME_CHARS, multiline=False, defang=False),
        title=_marked(_line(raw.title), "") if raw.title is not None else None,
        version=_line(raw.version) if raw.version is not None else None,
    )


def _line(text: str) -> str:
    return clean_text(text, limit=limits.MAX_SERVER_NAME_CHARS, multiline=False)


# Added to a server name that had terminal escapes or control characters removed, so the prompt and
# the audit trail (`audit list`) show that the name is not what the server sent.
CLEANED_NAME_MARK: Final = " [name cleaned]"
# Added to a server name or title whose letters mix scripts (a Cyrillic о in "Gооgle Drive"): it
# may pass for another server's name (docs/security.md, "Server names that mix scripts").
MIXED_SCRIPTS_MARK: Final = " [mixed scripts]"
# Added instead to a name or title in one script that passes for a Latin one ("аррӏе", all
# Cyrillic; "𝐆oogle"): it reads as another server's ASCII name (docs/security.md, same section).
NOT_LATIN_MARK: Final = " [not Latin letters]"
_MARKS: Final = (CLEANED_NAME_MARK, MIXED_SCRIPTS_MARK, NOT_LATIN_MARK)


def _marked_name(name: str) -> str:
    cleaned = sanitize(name, limit=limits.MAX_SERVER_NAME_CHARS, multiline=False)
    # escapes removed without a trace (other characters are ⟨marked⟩ in place)
    return _marked(cleaned.text, CLEANED_NAME_MARK if cleaned.escapes or cleaned.dropped else "")


def _marked(text: str, mark: str) -> str:
    """`text` (cleaned, one line) with `mark` and, when its letters mix scripts, the mixed-scripts
    mark added (or the not-Latin mark, when they pass for Latin ones), within
    `MAX_SERVER_NAME_CHARS` (the text is cut to make room). The marks already at its end are not
    what is judged, and one that is there is not added again: marking a marked
    text changes nothing."""
    base, present = text, list[str]()
    while (found := next((m for m in _MARKS if base.endswith(m)), None)) is not None:
        base, present = base.removesuffix(found), [found, *present]
    if MIXED_SCRIPTS_MARK not in present and NOT_LATIN_MARK not in present:
        if mixes_scripts(base):
            mark += MIXED_SCRIPTS_MARK
        elif passes_for_latin(base):
            mark += NOT_LATIN_MARK
    if not mark:
        return text
    room = limits.MAX_SERVER_NAME_CHARS - len(mark)
    head = text.rstrip()
    if len(head) > room:  # cut as cleaning cuts, never inside a ⟨U+…⟩ marker
        body = clean_text(head, limit=room, multiline=False, defang=False).removesuffix(CUT_MARKER)
        head = _PARTIAL_MARKER.sub("", body).rstrip() + CUT_MARKER
    return head + mark


_PARTIAL_MARKER: Final = re.compile(r"⟨[U+0-9A-F]*$")
