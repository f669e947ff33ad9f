"""The protocol revisions mcp-elicit speaks, as named constants."""

from __future__ import annotations

from typing import Final, Literal

REV_2025_06_18: Final = "2025-06-18"
REV_2025_11_25: Final = "2025-11-25"
REV_2026_07_28: Final = "2026-07-28"

Revision = Literal["2025-06-18", "2025-11-25", "2026-07-28"]
REVISIONS: Final[tuple[Revision, ...]] = (REV_2025_06_18, REV_2025_11_25, REV_2026_07_28)
LATEST: Final[Revision] = REV_2026_07_28


def is_modern(protocol_version: str | None) -> bool:
    """True when elicitation travels inside InputRequiredResult (2026-07-28 and later)."""
    return protocol_version is not None and protocol_version >= REV_2026_07_28


def wire_revision(protocol_version: str | None) -> Revision:
    """The schema revision to emit for a negotiated version (unknown older ones map to 2025-06-18)."""
    if protocol_version is None:
        return REV_2025_11_25
    if protocol_version >= REV_2026_07_28:
        return REV_2026_07_28
    if protocol_version >= REV_2025_11_25:
        return REV_2025_11_25
    return REV_2025_06_18


def usable_capabilities(protocol_version: str | None, declared: frozenset[str]) -> frozenset[str]:
    """What a client's declaration allows on the revision it negotiated (capability and revision
    decide together): elicitation exists from 2025-06-18 on, and only as forms before 2025-11-25,
    whatever modes a client lists; URL mode, its elicitationId and -32042 begin with 2025-11-25."""
    if protocol_version is None:  # outside a request: take the declaration as it is
        return declared
    if protocol_version < REV_2025_06_18:
        return frozenset(c for c in declared if not c.startswith("elicitation."))
    if protocol_version < REV_2025_11_25:
        has_elicitation = any(c.startswith("elicitation.") for c in declared)
        rest = {c for c in declared if not c.startswith("elicitation.")}
        return frozenset(rest | ({"elicitation.form"} if has_elicitation else set()))
    return declared
