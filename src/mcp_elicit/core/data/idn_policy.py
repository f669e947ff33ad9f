"""Character tables of the browser IDN display policy, layered on ICU's spoof checker.

The facts below (which letters of a script pass for Latin, which characters pass for digits,
which characters browsers remove from the identifier set) are those of Chromium's IDN spoof
checker, `components/url_formatter/spoof_checks/idn_spoof_checker.cc` and
`skeleton_generator.cc` (BSD-3-Clause), restated here as data; the code that applies them is
this project's own (`mcp_elicit.core.urls`). Patterns use ICU UnicodeSet syntax.
"""

from __future__ import annotations

from typing import NamedTuple


class WholeScript(NamedTuple):
    """A script some of whose letters pass for Latin ones, and the TLDs where that is normal."""

    name: str
    letters: str  # UnicodeSet pattern of the whole script
    latin_lookalikes: str  # the letters of that script that look like Latin letters
    native_tlds: tuple[str, ...]  # ASCII TLDs where labels in that script are expected


WHOLE_SCRIPT_CONFUSABLES: tuple[WholeScript, ...] = (
    WholeScript("Armenian", "[[:Armn:]]", "ագզէլհյոսւօՙ", ("am",)),
    WholeScript(
        "Cyrillic",
        "[[:Cyrl:]]",
        "аысԁеԍһіюкјӏорԗԛѕԝхуъьҽпгѵѡ",
        ("bg", "by", "kz", "pyc", "ru", "su", "ua", "uz"),
    ),
    WholeScript("Ethiopic", "[[:Ethi:]]", "ሀሠሰስበነተከዐዕዘጠፐꬅ", ("er", "et")),
    WholeScript("Georgian", "[[:Geor:]]", "იოყძხჽჿ", ("ge",)),
    WholeScript("Greek", "[[:Grek:]]", "αικνρυωηοτ", ("gr",)),
    WholeScript("Hebrew", "[[:Hebr:]]", "דוחיןסװײ׳ﬦ", ("il",)),
    WholeScript("Bengali", "[[:Beng:]]", "০৭", ()),
    WholeScript("Devanagari", "[[:Deva:]]", "ऽ०ॱ", ()),
    WholeScript("Gujarati", "[[:Gujr:]]", "ડટ૦૧", ()),
    WholeScript("Gurmukhi", "[[:Guru:]]", "੦੧", ()),
    WholeScript("Kannada", "[[:Knda:]]", "ಽ೦೧", ()),
    WholeScript("Malayalam", "[[:Mlym:]]", "ടഠധനറ൦", ()),
    WholeScript("Oriya", "[[:Orya:]]", "ଠ୦୮", ()),
    WholeScript("Tamil", "[[:Taml:]]", "டப௦", ()),
    WholeScript("Telugu", "[[:Telu:]]", "౦౧", ()),
    WholeScript("Myanmar", "[[:Mymr:]]", "ခဂငထပဝ၀၂ၔၜ\u1090\u1091\u1095\u1096\u1097", ("mm",)),
    # Chromium uses a larger Thai set on Linux only (font dependent); we take the larger one.
    WholeScript("Thai", "[[:Thai:]]", "ทนบพรหเแ๐ดลปฟม", ("th",)),
)

# Characters that are, or look like, digits: a label made only of digits and these is a spoof.
DIGIT_LOOKALIKES = "θ२২੨૨೩೭շзҙӡउওਤ੩૩౩ဒვპੜკ੫丩ㄐճ৪੪୫૭୨౨"

# Removed from ICU's identifier set (recommended + inclusion) the way Chromium does: look-alikes
# of slashes, hyphens and quotes, NV8 characters, Latin kra, and rarely used LGC blocks.
REMOVED_FROM_ALLOWED = (
    r"[\u0338\u058a\u2010\u2019\u2027\u30a0\u02bb\u02bc\u02ec\u0138"
    r"\u01cd-\u01dc\u1c80-\u1c8f\u1e00-\u1e9b\u1f00-\u1fff\ua640-\ua69f\ua720-\ua7ff]"
)

# Letters that belong to one language and are a spoofing risk anywhere else (letter -> TLDs).
TLD_SPECIFIC_LETTERS: dict[str, tuple[str, ...]] = {
    "\u00fe": ("is", "fo"),  # þ passes for b or p
    "\u00f0": ("is", "fo"),  # ð passes for o
    "\u0259": ("az",),  # ə
}

# Kana that are safe alone but need context (へべぺ / ヘベペ look alike; ・ー ヽヾ iterate).
KANA_CONTEXT_LETTERS = r"[\u3078-\u307a\u30d8-\u30da\u30fb-\u30fe]"
# Combining diacritics that stay in the allowed set; anything else combining is already refused.
COMBINING_DIACRITICS = r"[\u0300-\u0339]"
# Katakana/CJK that read as a slash when surrounded by non-Japanese characters.
SLASH_LOOKALIKES = "\u30ce\u30f3\u30bd\u30be\u4e36\u4e40\u4e41\u4e3f"
# CJK ideographs and Bopomofo that pass for Latin letters or dashes next to non-CJK characters.
CJK_LATIN_LOOKALIKES = (
    "\u4e00\u3127\u4e28\u4e5b\u4e03\u4e05\u5341\u3007\u3112\u311a"
    "\u311f\u3128\u3129\u3108\u31ba\u31b3\u5de5\u31b2\u8ba0\u4e01"
)

# Skeleton supplements: confusables the Unicode list lacks, applied before ICU's skeleton.
EXTRA_CONFUSABLES: dict[str, str] = {
    **dict.fromkeys("æӕ", "ae"),
    **dict.fromkeys("ϼҏ", "p"),
    **dict.fromkeys("ħнћңҥӈӊԋԧԩ", "h"),
    **dict.fromkeys("ĸκкқҝҟҡӄԟ", "k"),
    **dict.fromkeys("ŋпԥกח", "n"),
    **dict.fromkeys("ŧтҭԏ七丅丆丁", "t"),
    **dict.fromkeys("ƅьҍвß", "b"),
    **dict.fromkeys("ωшщพฟພຟ", "w"),
    **dict.fromkeys("мӎ", "m"),
    **dict.fromkeys("єҽҿၔ", "e"),
    "ґ": "r",
    **dict.fromkeys("ғӻ", "f"),
    **dict.fromkeys("ҫင", "c"),
    **dict.fromkeys("ұ丫", "y"),
    **dict.fromkeys("χҳӽӿ乂", "x"),
    **dict.fromkeys("ԃძ", "d"),
    **dict.fromkeys("ԍဌ", "g"),
    **dict.fromkeys("ടรຣຮ", "s"),
    "၂": "j",
    **dict.fromkeys("०০੦૦ଠ୦೦စ", "o"),
    **dict.fromkeys("৭੧૧", "q"),
    **dict.fromkeys("บບ", "u"),
    "θ": "0",
    **dict.fromkeys("२২੨૨೩೭շ", "2"),
    **dict.fromkeys("зҙӡउওਤ੩૩౩ဒვპੜკ", "3"),
    **dict.fromkeys("੫丩ㄐ", "4"),
    "ճ": "6",
    **dict.fromkeys("৪੪୫", "8"),
    **dict.fromkeys("૭୨౨", "9"),
    **dict.fromkeys("—一―⸺⸻", "-"),
    # Diacritic removal misses these Latin letters with strokes.
    "ø": "o",
    "đ": "d",
}

# Characters that pass for more than one letter: each alternative yields one more skeleton.
SKELETON_ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "\u00fe": ("b", "p"),  # þ
    "\u0153": ("ce", "oe"),  # œ
    "\u04cf": ("l", "i"),  # ӏ
    "\u0142": ("l", "t"),  # ł
}

# Real words that happen to be whole-script confusables and are not confusable with any Latin
# word, so they are displayed even under .com.
ALLOWED_WHOLE_SCRIPT_WORDS = frozenset(
    {"секс", "как", "коса", "курс", "парк", "такий", "укроп", "сахарок", "покраска"}
)
