"""Cleaning server text for display (core/text.py): escapes, controls, bidi, invisibles, length, F8."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_elicit.core.limits import MAX_COMBINING_MARKS
from mcp_elicit.core.text import CUT_MARKER, clean_text, marker, sanitize

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"

# Text a hostile server would write: escape sequence pieces, controls, bidi, invisibles, emoji parts.
nasty_chars = st.sampled_from(
    [
        "\x1b",
        "[",
        "]",
        "\\",
        "\x07",
        "\x9b",
        "\x9c",
        "\x9d",
        "\x90",
        "P",
        "8",
        ";",
        "m",
        "\r",
        "\n",
        "\t",
        "\x00",
        "\x7f",
        "\u200b",
        "\u200d",
        "\ufe0f",
        "\ufe0e",
        "\U000e0041",
        "\u0301",
        "\u00ad",
        "\u2028",
        "\ud800",
        "\uffff",
        "\u3164",
        "👩",
        "💻",
        "🏻",
        "a",
        " ",
        ":",
        "/",
        *BIDI,
    ]
)
texts = st.one_of(st.text(), st.lists(nasty_chars, max_size=60).map("".join), st.text(alphabet=nasty_chars))
limits = st.integers(min_value=len(CUT_MARKER), max_value=120)


def _forbidden(ch: str, multiline: bool) -> bool:
    if ch == "\n":
        return not multiline
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F or ch in BIDI or 0xD800 <= code <= 0xDFFF


@settings(max_examples=200)
@given(texts, limits, st.booleans())
@example("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", 40, True)
@example("a\u200d", 7, True)
@example("👩\u200d💻", 7, True)
def test_cleaned_text_has_no_escape_no_control_no_bidi_and_fits_the_limit(
    text: str, limit: int, multiline: bool
) -> None:
    out = clean_text(text, limit=limit, multiline=multiline)
    assert not [ch for ch in out if _forbidden(ch, multiline)]
    assert len(out) <= limit
    assert "://" not in out


@settings(max_examples=200)
@given(texts, limits, st.booleans())
def test_cleaning_is_idempotent(text: str, limit: int, multiline: bool) -> None:
    once = clean_text(text, limit=limit, multiline=multiline)
    assert clean_text(once, limit=limit, multiline=multiline) == once


@settings(max_examples=100)
@given(st.text(alphabet=st.characters(categories=["L", "N", "P", "Zs"]), max_size=80))
def test_ordinary_text_passes_unchanged(text: str) -> None:
    cleaned = sanitize(text, limit=100)
    assert cleaned.text == text.replace("\r", "\n")
    assert not cleaned.suspicious


def test_an_osc8_hyperlink_loses_its_link_and_keeps_its_visible_words_F8() -> None:
    cleaned = sanitize("Open \x1b]8;;https://evil.example/\x1b\\the docs\x1b]8;;\x1b\\ now", limit=100)
    assert cleaned.text == "Open the docs now"
    assert cleaned.escapes == 2


def test_csi_colour_cursor_and_clear_screen_sequences_are_removed() -> None:
    cleaned = sanitize("\x1b[2J\x1b[H\x1b[1;31mServer: trusted-bank\x1b[0m\x1b[1A\x1b7\x9b2K", limit=100)
    assert cleaned.text == "Server: trusted-bank"
    assert cleaned.escapes == 7


def test_a_carriage_return_cannot_overwrite_the_line() -> None:
    assert clean_text("pay 10 EUR\rpay 9999 EUR", limit=100) == "pay 10 EUR\npay 9999 EUR"


def test_a_lone_escape_and_other_controls_become_visible_markers() -> None:
    assert clean_text("bell\x07 esc\x1b", limit=100) == "bell⟨U+0007⟩ esc⟨U+001B⟩"


def test_a_right_to_left_override_is_shown_not_obeyed() -> None:
    # "invoice_\u202etxt.exe" would display as "invoice_exe.txt"
    cleaned = sanitize("invoice_\u202etxt.exe", limit=100)
    assert cleaned.text == "invoice_⟨U+202E⟩txt.exe"
    assert cleaned.marked == 1
    assert cleaned.suspicious


@pytest.mark.parametrize(
    "hidden",
    ["\u200b", "\u2060", "\ufeff", "\u00ad", "\U000e0049", "\u3164", "\u2800", "\u034f", "\ud800", "\uffff"],
)
def test_invisible_characters_are_made_visible(hidden: str) -> None:
    assert clean_text(f"a{hidden}b", limit=100) == f"a{marker(hidden)}b"


def test_tag_characters_smuggling_ascii_are_all_visible() -> None:
    smuggled = "".join(chr(0xE0000 + ord(c)) for c in "ignore previous")
    cleaned = sanitize("Name" + smuggled, limit=1000)
    assert cleaned.marked == len("ignore previous")


def test_emoji_sequences_survive_cleaning() -> None:
    for emoji in ["👩\u200d💻", "👨\u200d👩\u200d👧", "❤\ufe0f", "🏳\ufe0f\u200d🌈", "👍🏻"]:
        assert clean_text(emoji, limit=100) == emoji


def test_a_run_of_variation_selectors_keeps_only_the_first() -> None:
    assert clean_text("❤\ufe0f\ufe0e\ufe0f", limit=100) == "❤\ufe0f⟨U+FE0E⟩⟨U+FE0F⟩"


def test_a_joiner_outside_emoji_is_marked() -> None:
    assert clean_text("pay\u200dpal", limit=100) == "pay⟨U+200D⟩pal"


def test_zalgo_text_keeps_at_most_the_limit_of_combining_marks() -> None:
    cleaned = sanitize("e" + "\u0301" * 40, limit=100)
    assert cleaned.text == "e" + "\u0301" * MAX_COMBINING_MARKS
    assert cleaned.dropped == 40 - MAX_COMBINING_MARKS


def test_urls_are_defanged_so_no_terminal_links_them_F8() -> None:
    cleaned = sanitize("Go to https://example.org/login", limit=100)
    assert cleaned.text == "Go to https[:]//example.org/login"
    assert cleaned.defanged == 1
    assert not cleaned.suspicious


def test_single_line_text_has_no_line_breaks() -> None:
    assert clean_text("a\nb\u2028c\r\nd", limit=100, multiline=False) == "a b c d"


def test_long_text_is_cut_with_a_marker_within_the_limit() -> None:
    cleaned = sanitize("x" * 500, limit=100)
    assert cleaned.cut
    assert len(cleaned.text) == 100
    assert cleaned.text.endswith(CUT_MARKER)


def test_a_cut_never_splits_a_marker() -> None:
    out = clean_text("\u202e" * 50, limit=30)
    body = out.removesuffix(CUT_MARKER)
    assert body == "⟨U+202E⟩" * (len(body) // len("⟨U+202E⟩"))


def test_a_limit_below_the_cut_marker_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="limit"):
        clean_text("x", limit=2)


def test_every_format_character_is_marked() -> None:
    # Category Cf is the family of bidi controls and zero-width characters; none may pass as itself
    # except a joiner inside an emoji sequence.
    for code in range(0x0000, 0x3000):
        ch = chr(code)
        if unicodedata.category(ch) == "Cf":
            assert clean_text(f"a{ch}b", limit=100) == f"a{marker(ch)}b"
