"""Make text a server wrote safe to show to a person (issue 3, stage 4 of the client pipeline).

Everything a server writes into an elicitation (the message, field and option titles,
descriptions, its own name) reaches a terminal or a page. A server can hide instructions there,
repaint the screen, forge a hyperlink or reorder what the person reads. `sanitize` neutralises that
and says what it did; `clean_text` returns only the text. Pure: no I/O, no state.

What happens to each kind of character (the choices, so a UI author knows what to expect):

- Terminal escape sequences are removed: CSI (`ESC [`, U+009B), OSC (`ESC ]`, U+009D, e.g. OSC 8
  hyperlinks), DCS/SOS/PM/APC (`ESC P X ^ _`, U+0090/98/9E/9F) up to their terminator, and every
  other `ESC` + final byte. They are commands to the terminal (colours, cursor moves, clear screen,
  window title, links), never content.
- `\r\n` and `\r` become `\n` (a bare CR returns to the start of the line and overwrites it);
  `\t` becomes one space; `\n`, U+2028 and U+2029 stay line breaks in multi-line text (messages,
  descriptions) and become a space in single-line text (titles, names).
- Any other C0/C1 control, DEL and a lone `ESC` become a visible marker such as `⟨U+001B⟩`.
- Bidirectional controls (U+202A–202E, U+2066–2069, U+200E/200F, U+061C) and every other format
  character (Unicode category Cf: zero-width space and joiners, U+2060–2064, U+FEFF, the soft
  hyphen U+00AD, tag characters U+E0000–E007F, …) become a visible marker, e.g. `⟨U+202E⟩`: the
  person sees that a trick was attempted instead of being fooled by it.
- Blank look-alikes (Hangul fillers U+115F/1160/3164/FFA0, braille blank U+2800, combining grapheme
  joiner U+034F, Khmer U+17B4/17B5), lone surrogates and noncharacters (U+FDD0–FDEF, U+xFFFE/xFFFF)
  become markers too: they render as nothing or cannot be encoded.
- A variation selector directly after an ordinary character is kept (emoji presentation); a second
  one, or one after nothing, is marked (runs of selectors smuggle data). A zero-width joiner between
  two emoji is kept (family and profession emoji); anywhere else it is marked.
- More than `MAX_COMBINING_MARKS` combining marks on one character: the extra marks are dropped
  ("Zalgo" text spills over the lines above and below, e.g. over the server's name).
- `://` is written `[:]//` (F8: no URL in form text may become clickable, and terminals link any
  `scheme://` they see).
- Text longer than the limit is cut and ends with `…⟨cut⟩`; the result is never longer than the
  limit.

Guarantees (tested with hypothesis): the result contains no ESC, no C0/C1 control other than
`\\n` (and no `\\n` at all in single-line text), no bidi control, no lone surrogate; it is at most
`limit` characters long; and cleaning it again changes nothing (idempotent).

For UI authors: show the cleaned text as plain text. Never turn anything in it into a link or
interpret it as markup (Rich markup, HTML, Markdown): escape it for the medium (`rich.markup.escape`,
`html.escape`). Only the `url` of a URL-mode request may become clickable, after the URL checks.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from mcp_elicit.core.limits import MAX_COMBINING_MARKS, MAX_STRING_LENGTH
from mcp_elicit.errors import InvalidArgument

__all__ = [
    "CUT_MARKER",
    "Cleaned",
    "clean_text",
    "has_hidden_characters",
    "marker",
    "mixes_scripts",
    "sanitize",
]

CUT_MARKER: Final = "…⟨cut⟩"

# ESC followed by: a CSI (parameters, intermediates, final byte), a string command (OSC, DCS, SOS,
# PM, APC) up to its terminator (BEL for OSC, ST = ESC \ or U+009C), or any other sequence
# (intermediates then a final byte). The 8-bit C1 introducers are matched the same way.
_ESCAPES: Final = re.compile(
    r"""
      (?:\x1b\[|\x9b) [0-?]* [ -/]* [@-~]                    # CSI
    | (?:\x1b\]|\x9d) [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)  # OSC, ended by BEL or ST
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f]) [^\x1b\x9c]* (?:\x1b\\|\x9c)  # DCS SOS PM APC, ended by ST
    | \x1b [ -/]* [0-~]                                      # any other escape sequence
    """,
    re.VERBOSE,
)

# In ASCII text only these need work; everything else can skip the per-character pass.
_ASCII_WORK: Final = re.compile(r"[\x00-\x1f\x7f]")
_ESCAPE_START: Final = re.compile(r"[\x1b\x90-\x9f]")

_BLANK_LOOKALIKES: Final = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
_LINE_BREAKS: Final = frozenset("\u2028\u2029")
# What single-line text shows as a space: in an identifier it would pass for one.
_ONE_LINE_BREAKERS: Final = re.compile("[\t\n\r\u2028\u2029]")
_ZWJ: Final = "\u200d"
_SKIN_TONES: Final = range(0x1F3FB, 0x1F400)


@dataclass(frozen=True, slots=True)
class Cleaned:
    """The cleaned `text` and counts of what was changed (the pipeline turns them into warnings)."""

    text: str
    escapes: int = 0  # terminal escape sequences removed
    marked: int = 0  # characters replaced by a visible ⟨U+XXXX⟩ marker
    dropped: int = 0  # excess combining marks dropped
    defanged: int = 0  # `://` written as `[:]//`
    cut: bool = False  # the text was longer than the limit

    @property
    def changed(self) -> bool:
        return bool(self.escapes or self.marked or self.dropped or self.defanged or self.cut)

    @property
    def suspicious(self) -> bool:
        """Something only a trick would need: escapes, hidden or reordering characters, Zalgo."""
        return bool(self.escapes or self.marked or self.dropped)


def marker(ch: str) -> str:
    """The visible stand-in for a character that must not be shown as itself."""
    return f"⟨U+{ord(ch):04X}⟩"


def clean_text(text: str, *, limit: int, multiline: bool = True, defang: bool = True) -> str:
    """`sanitize(text, ...).text`."""
    return sanitize(text, limit=limit, multiline=multiline, defang=defang).text


def has_hidden_characters(identifier: str) -> bool:
    """True when `identifier` holds what cleaning would mark, remove or drop (escapes, control and
    format characters such as bidi overrides and zero-width ones, blank look-alikes, Zalgo).

    The one rule for text that travels back in an answer unchanged and so cannot be cleaned (field
    names, option values): the client refuses a form that has such text, and the form builder
    refuses to build one. Tabs and line breaks count too: a one-line label shows them as a space,
    so `"a\tb"` would look like `"a b"` and two options could not be told apart.
    """
    if _ONE_LINE_BREAKERS.search(identifier):
        return True
    return sanitize(identifier, limit=MAX_STRING_LENGTH, multiline=False).suspicious


# What `mixes_scripts` leaves out: the cut marker and ⟨U+…⟩ markers cleaning wrote (their Latin
# letters are not the text's), so cleaned text is judged by what the server wrote.
_MARKERS: Final = re.compile(re.escape(CUT_MARKER) + r"|⟨U\+[0-9A-F]{4,6}⟩")


def mixes_scripts(text: str) -> bool:
    """True when `text` mixes writing systems the way a look-alike name does ("Gооgle" with
    Cyrillic о): the rule of docs/security.md, "Server names that mix scripts".

    Letters count by their Unicode script (with Script_Extensions); digits, punctuation, symbols,
    spaces, emoji and combining marks (scripts Common and Inherited) do not. The text passes when
    its letters are of one script; or of Latin with Han, Hiragana and Katakana (Japanese), Han and
    Bopomofo (Chinese) or Han and Hangul (Korean); or of Latin and one other script that is not
    Cyrillic, Greek or Cherokee, whose letters pass for Latin ones. That is UTS #39's "moderately
    restrictive" level (section 5.2), as ICU's spoof checker implements it. Decimal digits of
    two numbering systems ("1" and Bengali "০") mix too. The cut marker and ⟨U+…⟩ markers of
    cleaned text are left out. Pure ASCII never mixes.
    """
    if text.isascii():
        return False
    text = _MARKERS.sub("", text)
    return bool(_script_checker().check(text))


def passes_for_latin(text: str) -> bool:
    """True when `text` is not plain ASCII yet reads as if it were, without mixing scripts: a
    whole name in one look-alike script ("аррӏе", all Cyrillic), or Latin look-alikes of script
    Common or compatibility forms ("𝐆oogle", fullwidth "Ｇｏｏｇｌｅ"). The rule: the confusable
    skeleton of its NFKC form (UTS #39, section 4, as ICU computes it) is ASCII with a letter in
    it, and one of its letters is not a plain Latin letter (another script, or a form NFKC
    changes). Latin letters of other languages ("Kırmızı", "Café") and words whose letters pass
    for no Latin ones ("Яндекс") do not. The cut marker and ⟨U+…⟩ markers of cleaned text are
    left out; pure ASCII never passes.
    """
    if text.isascii():
        return False
    text = _MARKERS.sub("", text)
    skeleton = _script_checker().getSkeleton(0, unicodedata.normalize("NFKC", text))
    if not skeleton.isascii() or not any(c.isalpha() for c in skeleton):
        return False
    return any(not c.isascii() and c.isalpha() and not _plain_latin(c) for c in text)


def _plain_latin(letter: str) -> bool:
    import icu  # loaded only when a name is not ASCII

    latin = icu.Script.getScript(ord(letter)).getShortName() == "Latn"
    return latin and unicodedata.normalize("NFKC", letter) == letter


@cache
def _script_checker() -> Any:
    """ICU's spoof checker, set to the two checks of `mixes_scripts` (built once, on first use)."""
    import icu  # loaded only when a name is not ASCII

    checker = icu.SpoofChecker()
    checker.setChecks(icu.USpoofChecks.RESTRICTION_LEVEL | icu.USpoofChecks.MIXED_NUMBERS)
    checker.setRestrictionLevel(icu.URestrictionLevel.MODERATELY_RESTRICTIVE)
    return checker


def sanitize(text: str, *, limit: int, multiline: bool = True, defang: bool = True) -> Cleaned:
    """Clean `text` as the module docstring says; the result is at most `limit` characters.

    `defang=False` leaves `://` alone, for text that is not the server's (the URL a person typed
    to reach it): everything else still applies.
    """
    if limit < len(CUT_MARKER):
        raise InvalidArgument("limit", f"must be at least {len(CUT_MARKER)}")
    escapes = 0
    if _ESCAPE_START.search(text):
        text, escapes = _ESCAPES.subn("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    defanged = text.count("://") if defang else 0
    if defanged:
        text = text.replace("://", "[:]//")
    if not multiline:
        text = text.replace("\n", " ")
    if text.isascii() and not _ASCII_WORK.search(text):
        tokens: list[str] | None = None
        marked = dropped = 0
    else:
        tokens, marked, dropped = _scan(text, multiline)
        text = "".join(tokens)
    cut = len(text) > limit
    if cut:
        text = _cut(tokens if tokens is not None else list(text), limit)
    return Cleaned(text, escapes, marked, dropped, defanged, cut)


def _scan(text: str, multiline: bool) -> tuple[list[str], int, int]:
    """The per-character pass: one output token per input character ("" when dropped)."""
    out: list[str] = []
    marked = dropped = 0
    base = False  # the last token is an ordinary character a selector or mark may attach to
    marks = 0  # combining marks on the current base so far
    for i, ch in enumerate(text):
        cat = unicodedata.category(ch)
        if ch == "\n" or ch in _LINE_BREAKS:
            out.append("\n" if multiline else " ")
            base, marks = False, 0
            continue
        if _is_selector(ch):
            if base and not _is_selector(text[i - 1]):
                out.append(ch)
                continue
        elif ch == _ZWJ:
            if _emoji_before(text, i) and i + 1 < len(text) and _is_emoji(text[i + 1]):
                out.append(ch)
                base = False
                continue
        elif cat in ("Mn", "Me") and ch not in _BLANK_LOOKALIKES:
            if marks >= MAX_COMBINING_MARKS:
                dropped += 1
                continue
            out.append(ch)
            marks += 1
            continue
        elif cat not in ("Cc", "Cf", "Cs") and ch not in _BLANK_LOOKALIKES and not _is_noncharacter(ch):
            out.append(ch)
            base, marks = True, 0
            continue
        out.append(marker(ch))
        marked += 1
        base, marks = False, 0
    return out, marked, dropped


def _is_selector(ch: str) -> bool:
    return "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef"


def _is_emoji(ch: str) -> bool:
    return unicodedata.category(ch) == "So" or ord(ch) in _SKIN_TONES


def _emoji_before(text: str, i: int) -> bool:
    """An emoji ends at i-1, possibly followed by one selector or skin tone."""
    j = i - 1
    if j >= 0 and (_is_selector(text[j]) or ord(text[j]) in _SKIN_TONES):
        j -= 1
    return j >= 0 and _is_emoji(text[j])


def _is_noncharacter(ch: str) -> bool:
    code = ord(ch)
    return 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE


def _cut(tokens: list[str], limit: int) -> str:
    """Whole tokens (a marker is never split) up to `limit`, ending with the cut marker."""
    budget = limit - len(CUT_MARKER)
    kept: list[str] = []
    size = 0
    for token in tokens:
        if size + len(token) > budget:
            break
        kept.append(token)
        size += len(token)
    # A joiner or selector left dangling at the end would attach to the marker, and a second
    # cleaning would then treat it differently: drop it so cleaning stays idempotent.
    while kept and (kept[-1] == _ZWJ or (len(kept[-1]) == 1 and _is_selector(kept[-1]))):
        kept.pop()
    return "".join(kept) + CUT_MARKER
