"""`mixes_scripts`: a name whose letters mix scripts the way a look-alike does is caught; a name in
one script, Latin with CJK, or Latin with one script that does not pass for it is not (the rule in
docs/security.md, "Server names that mix scripts")."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mcp_elicit.core.text import CUT_MARKER, marker, mixes_scripts, passes_for_latin


def letters(*ranges: tuple[int, int]) -> str:
    """The assigned letters in the code point ranges."""
    return "".join(
        chr(c)
        for first, last in ranges
        for c in range(first, last + 1)
        if unicodedata.category(chr(c)).startswith("L")
    )


LATIN = letters((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xFF))
CYRILLIC = letters((0x410, 0x44F))
GREEK = letters((0x391, 0x3A9), (0x3B1, 0x3C9))
SCRIPTS = {
    "Latin": LATIN,
    "Cyrillic": CYRILLIC,
    "Greek": GREEK,
    "Han": letters((0x4E00, 0x4FFF)),
    "Hiragana": letters((0x3041, 0x3096)),
    "Katakana": letters((0x30A1, 0x30FA)),
    "Hangul": letters((0xAC00, 0xAFFF)),
    "Arabic": letters((0x621, 0x63A), (0x641, 0x64A)),
    "Hebrew": letters((0x5D0, 0x5EA)),
    "Devanagari": letters((0x905, 0x939)),
}
# Script Common: what every name may hold whatever its script.
COMMON = " 0123456789-_.,:;!?()[]&+/@#'\"😀…"


def one_line(alphabet: str) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=1, max_size=40)


@pytest.mark.parametrize(
    "name",
    [
        "G\u043e\u043egle Drive",  # Cyrillic о
        "G\u03bf\u03bfgle",  # Greek ο
        "\u13aapple",  # Cherokee Ꭺ
        "Яндекс Maps",  # Cyrillic with Latin: a look-alike risk even when honest
        "Bank 1\u09e6",  # Bengali digit zero after an ASCII one
        "中 ㄅ 한",  # Bopomofo with Hangul: no language writes both
    ],
)
def test_a_name_that_mixes_scripts_is_caught(name: str) -> None:
    assert mixes_scripts(name)


@pytest.mark.parametrize(
    "name",
    [
        "Google Drive",
        "GitHub 2.0 (beta)!",
        "Яндекс",
        "мой сервер",
        "Ελληνικά",
        "東京タワー MCP",  # Japanese with Latin
        "한국 MCP",
        "中文 한국",
        "ＡＢＣ株式会社",  # full-width Latin with Han
        "عربي server",
        "हिन्दी server",
        "Straße",
        "😀 bot",
        "мой" + marker("\u202e") + "сервер",  # the Latin of a marker is not the server's
        "Я" * 10 + CUT_MARKER,
    ],
)
def test_a_name_in_one_script_or_an_accepted_pairing_is_not(name: str) -> None:
    assert not mixes_scripts(name)


@given(st.sampled_from(sorted(SCRIPTS)).flatmap(lambda s: one_line(SCRIPTS[s] + COMMON)))
def test_letters_of_one_script_with_digits_and_punctuation_never_mix(name: str) -> None:
    assert not mixes_scripts(name)


@given(one_line("".join(SCRIPTS[s] for s in ("Latin", "Han", "Hiragana", "Katakana")) + COMMON))
def test_japanese_with_latin_never_mixes(name: str) -> None:
    assert not mixes_scripts(name)


@given(st.text(alphabet=st.characters(max_codepoint=0x7E), max_size=60))
def test_ascii_never_mixes(name: str) -> None:
    assert not mixes_scripts(name)


@given(
    st.sampled_from([CYRILLIC, GREEK]).flatmap(
        lambda other: st.tuples(one_line(LATIN), st.sampled_from(other), one_line(LATIN + other + COMMON))
    )
)
def test_latin_with_a_cyrillic_or_greek_letter_anywhere_always_mixes(parts: tuple[str, str, str]) -> None:
    latin, lookalike, rest = parts
    assert mixes_scripts(latin + lookalike + rest)
    assert mixes_scripts(rest + lookalike + latin)


# Cyrillic and Greek letters that pass for Latin ones (Unicode's confusables): а е о р с у х, Α Β Ε Κ Μ Ο Τ
CYRILLIC_LOOKALIKES = "\u0430\u0435\u043e\u0440\u0441\u0443\u0445"
GREEK_LOOKALIKES = "\u0391\u0392\u0395\u039a\u039c\u039f\u03a4"


@given(st.sampled_from([CYRILLIC_LOOKALIKES, GREEK_LOOKALIKES]).flatmap(lambda s: one_line(s + " -1")))
def test_a_name_wholly_of_letters_that_look_latin_passes_for_latin(name: str) -> None:
    assume(any(c.isalpha() for c in name))
    assert passes_for_latin(name)
    assert not mixes_scripts(name)  # one script: the mixed-scripts rule cannot see it


@pytest.mark.parametrize("name", ["\U0001d406oogle", "\uff27\uff4f\uff4f\uff47\uff4c\uff45", "\ufb01les"])
def test_latin_look_alikes_that_are_not_latin_letters_pass_for_latin(name: str) -> None:
    assert passes_for_latin(name)  # 𝐆oogle, fullwidth Ｇｏｏｇｌｅ, the ﬁ ligature


@given(one_line(LATIN + COMMON))
def test_plain_latin_letters_never_pass_for_latin(name: str) -> None:
    assert not passes_for_latin(name)


@pytest.mark.parametrize(
    "name", ["Kırmızı", "Café", "Straße", "Яндекс", "мой сервер", "Ελληνικά", "東京", "עברית"]
)
def test_words_that_do_not_read_as_ascii_do_not_pass_for_latin(name: str) -> None:
    assert not passes_for_latin(name)
