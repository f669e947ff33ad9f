"""The fast secret guard (trigger-word prefilter, ASCII tokenizing, early exits) decides as the full one.

The reference below is the classifier without any shortcut: the full tokenizer, every text through
the whole rule matcher, every hint keyword read. Both run over the rule tables, the test tables
and generated fields, and must agree on every verdict and reason.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_elicit.core import sensitive
from mcp_elicit.core.sensitive import (
    BENIGN_PHRASES,
    META_WORDS,
    RULES,
    FieldVerdict,
    FormVerdict,
    classify_field,
    classify_schema,
)
from mcp_elicit.core.verdicts import VERDICTS

from .test_sensitive import BENIGN_FIELDS, HELD_OUT_BENIGN, HELD_OUT_SECRET, SECRET_FIELDS, WARN_FIELDS


def _full_tokenize(text: str) -> list[str]:
    text = unicodedata.normalize("NFKD", text[: sensitive.MAX_SCAN_CHARS])
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = sensitive._POSSESSIVE.sub("", text)
    text = sensitive._CAMEL.sub(" ", text)
    text = sensitive._DIGIT_EDGE.sub(" ", text)
    return [w for raw in sensitive._WORD.findall(text) for w in sensitive._split_glued(raw.casefold())]


@contextmanager
def _no_shortcuts() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sensitive, "tokenize", _full_tokenize)
        patch.setattr(sensitive, "_may_fire", lambda text, trigger: True)
        yield


def _reference_field(name: str, schema: Any) -> FieldVerdict:
    with _no_shortcuts():
        fired = list(sensitive._match_text_uncached(name, "name"))
        if isinstance(schema, Mapping):
            for key, where in (("title", "title"), ("description", "description")):
                if isinstance(schema.get(key), str):
                    fired += sensitive._match_text_uncached(schema[key], where)  # type: ignore[arg-type]
            for keyword in sensitive._HINT_KEYWORDS:
                if isinstance(schema.get(keyword), str):
                    fired += sensitive._match_hint(schema[keyword])
            fired += [rule for rule in sensitive._FLAG_RULES if schema.get(rule.phrase) is True]
    verdict = "ok"
    reasons: list[str] = []
    for rule in fired:
        if VERDICTS.index(rule.level) > VERDICTS.index(verdict):
            verdict = rule.level
        if rule.reason not in reasons:
            reasons.append(rule.reason)
    cap = sensitive._choice_cap(schema) if isinstance(schema, Mapping) else None
    if cap is not None and VERDICTS.index(verdict) > VERDICTS.index(cap):
        verdict = cap
        reasons.append("fixed_choices")
    return FieldVerdict(name, verdict, tuple(reasons))  # type: ignore[arg-type]


def _agree(name: str, schema: Any) -> None:
    sensitive._match_text_cached.cache_clear()
    expected = _reference_field(name, schema)
    assert classify_field(name, schema) == expected, (name, schema)
    assert classify_field(name, schema) == expected, (name, schema)  # now from the cache


def _styles(phrase: str) -> list[str]:
    words = phrase.split(" ")
    camel = words[0] + "".join(w.title() for w in words[1:])
    return ["_".join(words), camel, "".join(words), phrase.title(), phrase.upper(), "-".join(words)]


def test_every_rule_and_benign_phrase_in_every_naming_style_gets_the_reference_verdict() -> None:
    phrases = [r.phrase for r in RULES if "flag" not in r.where] + list(BENIGN_PHRASES)
    for phrase in phrases:
        for text in _styles(phrase):
            _agree(text, {"type": "string"})
            _agree("x", {"type": "string", "title": text})
            _agree("x", {"type": "string", "description": f"Please enter your {text} here."})
            _agree("x", {"type": "string", "description": f"We never ask for your {text}."})
            _agree("x", {"type": "string", "format": text, "autocomplete": text})
            _agree(text, {"type": "boolean"})
            _agree(text, {"type": "string", "enum": ["a"]})
        for meta in sorted(META_WORDS):
            _agree(f"{phrase} {meta}".replace(" ", "_"), {"type": "string"})
    for rule in RULES:
        if "flag" in rule.where:
            _agree("x", {"type": "string", rule.phrase: True})
            _agree("x", {"type": "string", rule.phrase: "true"})


def test_every_table_field_gets_the_reference_verdict() -> None:
    for name, schema, _ in [*SECRET_FIELDS, *BENIGN_FIELDS, *WARN_FIELDS]:
        _agree(name, schema)
    for entry in [*HELD_OUT_SECRET, *HELD_OUT_BENIGN]:
        name, title = (entry, None) if isinstance(entry, str) else entry
        _agree(name, {"type": "string"} if title is None else {"type": "string", "title": title})


_rule_words = sorted({w for r in RULES for w in r.phrase.split(" ")} | set(META_WORDS))
_word = st.one_of(
    st.sampled_from(_rule_words),
    st.sampled_from(["the", "your", "never", "send", "db", "my", "new", "1", "2", "ID", "Key", "PASS"]),
    st.text(st.sampled_from("abcdeiknoprstwyACKPS\u00e9\u00df\uff30\u0301'\u2019"), min_size=1, max_size=6),
)
_sep = st.sampled_from([" ", "_", "-", ".", "", ", ", "? ", "'s "])
_text = st.lists(st.tuples(_word, _sep), max_size=7).map(lambda ws: "".join(w + s for w, s in ws))
_schemas = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "boolean", "array"])},
    optional={
        "title": _text,
        "description": _text,
        "format": _text,
        "autocomplete": _text,
        "enum": st.just(["a", "b"]),
        "writeOnly": st.booleans(),
        "x-sensitive": st.booleans(),
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_text, _schemas)
def test_generated_fields_get_the_reference_verdict(name: str, schema: dict[str, Any]) -> None:
    _agree(name, schema)


def _agree_form(form: dict[str, Any], message: str | None) -> None:
    """The whole form, message rules and `secret_in_message` included, fast and cached as full."""
    sensitive._match_text_cached.cache_clear()
    with _no_shortcuts():
        expected: FormVerdict = classify_schema(form, message)
    sensitive._match_text_cached.cache_clear()
    assert classify_schema(form, message) == expected, (form, message)
    assert classify_schema(form, message) == expected, (form, message)  # now from the cache


def test_every_message_rule_in_every_naming_style_gets_the_reference_form_verdict() -> None:
    generic = {"type": "object", "properties": {"value": {"type": "string", "title": "Value"}}}
    for phrase in [r.phrase for r in RULES if "message" in r.where] + list(BENIGN_PHRASES):
        for text in _styles(phrase):
            for message in (f"Please paste {text} here.", f"We never ask for {text}.", text):
                _agree_form(generic, message)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_text, _schemas, max_size=4), st.one_of(st.none(), _text))
def test_generated_forms_with_messages_get_the_reference_verdict(
    properties: dict[str, Any], message: str | None
) -> None:
    _agree_form({"type": "object", "properties": properties}, message)
