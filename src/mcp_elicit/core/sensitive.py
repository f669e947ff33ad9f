"""Does this form ask for a secret? (spec rule F5)

Servers MUST NOT ask for secrets through form mode: passwords, API keys, access tokens, payment
credentials. This module reads a wire `requestedSchema` (a plain dict, exactly as it travels, so the
server can check what it is about to emit and the client can check what an untrusted server sent)
and gives each field a verdict:

- ``block``: a strong signal that the field wants a secret (a password hint, a card-number
  autocomplete token, a name such as ``api_key`` or a title such as "One-time code").
- ``warn``: a weaker signal (``credential``, a field named just ``key`` or ``token``, an account
  number, a security question): show a caution, don't refuse.
- ``ok``: nothing found.

How it decides, in order (every step is data in the tables below, not scattered ifs):

1. Text is split into words across snake_case, camelCase, kebab-case, dots, digits and spaces
   (``APIKey`` → ``api key``, ``cvv2`` → ``cvv 2``, ``db_passwd`` → ``db passwd``); accents and
   full-width forms are folded; a few glued compounds are split (``apikey``, ``dbpassword``).
2. ``RULES`` are word sequences matched as whole words in a field's name, title, description or
   format-like hints (``format``, ``autocomplete``, …) or flags (``writeOnly``, ``x-sensitive``).
   A rule marked ``head`` matches in a name or title only as its last word (the head noun: a
   ``sort_key`` is about a key, a ``key_points`` is not).
3. A match is dropped when it overlaps a ``BENIGN_PHRASES`` entry ("primary key", "token
   count"), when a ``META_WORDS`` word follows it ("password length", "api key id": data about the
   secret, not the secret), or, in prose only (descriptions and the message), when a negation or a
   "we will send it" word precedes it within ``CONTEXT_WINDOW`` words of the same clause ("never
   share your password", "we'll text you a verification code").
4. A field whose value is picked from fixed choices cannot carry a typed secret: booleans are
   capped at ``ok`` and selects (``enum``, ``oneOf``, arrays) at ``warn``; the reason
   ``fixed_choices`` records that the cap applied, next to the codes that matched.

The form's ``message`` is scanned with the prose rules (and a few of its own: "your token", "your
PAT") and on its own can only add ``warn``: a message talks about the request ("to reset your
password, confirm your email"), the fields are what get sent. Except when the fields say nothing
themselves (reason ``secret_in_message``): when the message names a secret (a reason in
``SECRET_MESSAGE_REASONS``: "Paste your GitHub token", "Enter your password", "your API key",
"the secret", "credentials", an OTP), then

- a free-text field whose own signal is weak (``CONFIRMABLE_REASONS``: a field named ``token``,
  ``key``, ``auth``, ``credentials``) is blocked: it is that secret;
- when every free-text field (a string without choices or a format) is generic (name, title and
  description only of ``GENERIC_FIELD_WORDS``: ``value``, ``input``, ``text``, ``answer``, …) or
  already flagged, the generic ones are blocked: FastMCP's ``ctx.elicit("Paste your GitHub token",
  str)`` sends exactly one field ``value`` titled "Value", and what it wants is in the message.

Numbers, booleans, selects and formatted strings are never blocked by a message ("How many tokens
may the summary use?" with an integer, "Pick a password policy" with a select); nor is a form with
a free-text field that names what it holds (``email`` under "Enter your email and password": the
message may be talking about the whole flow, and ``warn`` says so).

What this does NOT do: it is a guard against honest-but-careless servers and a second opinion for
reviewers, not a defence against a hostile server, which can always name a field ``x`` and ask
for the password in a picture. It reads English (and a handful of common foreign words for
"password"), does not look at `enum` option texts, and does not see look-alike letters (Cyrillic
``р`` in "раssword"); the URL checks in urls.py handle spoofing where it matters.

Never raises: non-dict schemas, properties or keywords are skipped and count as ``ok``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_elicit.core.sensitive_rules import (
    _COMPOUNDS,
    _FIELD_TEXT,
    _FLAG,
    _GLUED_HEADS,
    _HINT,
    _HINT_KEYWORDS,
    _TAIL_NOISE,
    _TEXT,
    BENIGN_PHRASES,
    CONFIRMABLE_REASONS,
    DELIVERY_WORDS,
    GENERIC_FIELD_WORDS,
    META_WORDS,
    NEGATIONS,
    RULES,
    SECRET_MESSAGE_REASONS,
    Rule,
    Where,
)
from mcp_elicit.core.verdicts import Verdict, worst

__all__ = [
    "BENIGN_PHRASES",
    "CONFIRMABLE_REASONS",
    "GENERIC_FIELD_WORDS",
    "META_WORDS",
    "RULES",
    "SECRET_MESSAGE_REASONS",
    "FieldVerdict",
    "FormVerdict",
    "Rule",
    "Verdict",
    "classify_field",
    "classify_schema",
    "tokenize",
]

# Characters of any one text (name, title, description, hint, message) that are scanned. Texts
# this long are already refused by the form size limits (core/limits.py: descriptions ≤ 2,000,
# messages ≤ 4,000); the cap only bounds the work a hostile schema can cause here.
MAX_SCAN_CHARS: Final = 20_000

# Words before a match, in the same clause, that are searched for a negation or a "we will send
# it" word. Eight reaches across a short coordination ("do not paste your password or API key")
# while clauses end at punctuation anyway ("No account? Enter your API key" stays a match).
CONTEXT_WINDOW: Final = 8

# Distinct (text, place) pairs whose matches are remembered. Field names and titles repeat across
# the forms of a session and across audit records; 4,096 holds far more than any client sees.
MATCH_CACHE_SIZE: Final = 4_096
# Only texts up to this many characters are cached (names, titles, short help), so a hostile server
# sending endless new long descriptions cannot make the cache hold more than about 4 MiB.
MAX_CACHED_TEXT_CHARS: Final = 256


_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W\d_]+|\d+")
_DIGIT_EDGE = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
_CLAUSE = re.compile(r"[.!?;:,\n()\[\]]+")


@dataclass(frozen=True, slots=True)
class FieldVerdict:
    """The verdict for one field and the stable reason codes behind it (empty when nothing matched)."""

    name: str
    verdict: Verdict
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FormVerdict:
    """The verdict for a whole form: the strongest field verdict, or ``warn`` from the message."""

    verdict: Verdict
    fields: tuple[FieldVerdict, ...]
    message_reasons: tuple[str, ...] = ()

    @property
    def blocked(self) -> tuple[str, ...]:
        """Names of the fields judged ``block``."""
        return tuple(f.name for f in self.fields if f.verdict == "block")

    @property
    def flagged(self) -> tuple[str, ...]:
        """Names of the fields judged ``block`` or ``warn`` (their values are never audited)."""
        return tuple(f.name for f in self.fields if f.verdict != "ok")


def tokenize(text: str) -> list[str]:
    """Lower-case words of `text`, split across case, digits and punctuation, glued compounds split."""
    text = text[:MAX_SCAN_CHARS]
    if not text.isascii():  # ASCII has nothing to decompose or fold
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    text = _POSSESSIVE.sub("", text)
    text = _CAMEL.sub(" ", text)
    text = _DIGIT_EDGE.sub(" ", text)
    words: list[str] = []
    for raw in _WORD.findall(text):
        word = raw.casefold()
        words.extend(_split_glued(word))
    return words


def _split_glued(word: str) -> tuple[str, ...]:
    if word in _COMPOUNDS:
        return _COMPOUNDS[word]
    for head in _GLUED_HEADS:
        if word.endswith(head) and len(word) > len(head):
            return (*_split_glued(word[: -len(head)]), *_COMPOUNDS.get(head, (head,)))
    return (word,)


def _index(rules: Iterable[Rule]) -> dict[str, list[tuple[tuple[str, ...], Rule]]]:
    by_first: dict[str, list[tuple[tuple[str, ...], Rule]]] = {}
    for rule in rules:
        words = tuple(rule.phrase.split(" ")) if "flag" not in rule.where else (rule.phrase,)
        by_first.setdefault(words[0], []).append((words, rule))
    return by_first


_TEXT_RULES: Final = _index(r for r in RULES if r.where & _TEXT)
_HINT_RULES: Final = _index(r for r in RULES if r.where & _HINT)
_FLAG_RULES: Final = tuple(r for r in RULES if r.where & _FLAG)
_HINT_AND_FLAG_KEYS: Final = frozenset(_HINT_KEYWORDS) | {r.phrase for r in _FLAG_RULES}
_BENIGN: Final = _index(Rule(p, _TEXT, "warn", "benign", "") for p in BENIGN_PHRASES)


# Everyday words a rule's trigger should not be when the rule has a rarer one.
_COMMON_WORDS: Final = frozenset({"your", "number", "code", "time", "one", "words", "details", "sort"})


def _rarest(words: list[str]) -> str:
    rare = [w for w in words if w not in _COMMON_WORDS] or words
    return max(rare, key=len)


def _trigger(rules: Iterable[Rule]) -> re.Pattern[str]:
    """A search for the longest (rarest) word of each rule: a rule cannot fire without it.

    A word that contains another trigger word adds nothing (where it occurs, so does the other).
    """
    longest = {_rarest(rule.phrase.split(" ")) for rule in rules}
    words = {w for w in longest if not any(o != w and o in w for o in longest)}
    return re.compile(_trie_pattern(sorted(words)))


def _trie_pattern(words: list[str]) -> str:
    """An alternation nested by first letter: the regex engine rejects a position in one step."""
    by_first: dict[str, list[str]] = {}
    for word in words:
        by_first.setdefault(word[0], []).append(word[1:])
    branches = []
    for first, rests in by_first.items():
        if "" in rests:  # a shorter word covers every longer one with the same start
            branches.append(re.escape(first))
        elif len(rests) == 1:
            branches.append(re.escape(first + rests[0]))
        else:
            branches.append(re.escape(first) + "(?:" + _trie_pattern(rests) + ")")
    return "|".join(branches)


# Field texts and the message have their own trigger words: the message-only rules ("your pat")
# must not send every field text containing "path" down the full matcher.
_FIELD_TRIGGER: Final = _trigger(r for r in RULES if r.where & _FIELD_TEXT)
_MESSAGE_TRIGGER: Final = _trigger(r for r in RULES if "message" in r.where)
_HINT_TRIGGER: Final = _trigger(r for r in RULES if r.where & _HINT)


def _spans(
    words: list[str], index: dict[str, list[tuple[tuple[str, ...], Rule]]]
) -> list[tuple[int, int, Rule]]:
    found: list[tuple[int, int, Rule]] = []
    for i, word in enumerate(words):
        for phrase, rule in index.get(word, ()):
            end = i + len(phrase)
            if tuple(words[i:end]) == phrase:
                found.append((i, end, rule))
    return found


def _head_end(words: list[str]) -> int:
    end = len(words)
    while end > 1 and (words[end - 1] in _TAIL_NOISE or words[end - 1].isdigit()):
        end -= 1
    return end


def _match_text(text: str, where: Where) -> tuple[Rule, ...]:
    """Rules that fire on `text` read as `where` (a label or prose), after the context filters."""
    if len(text) <= MAX_CACHED_TEXT_CHARS:
        return _match_text_cached(text, where)
    return _match_text_uncached(text, where)


def _may_fire(text: str, trigger: re.Pattern[str]) -> bool:
    """False only if no rule can fire on `text`: an ASCII text missing every rule's trigger word.

    Every word tokenize() yields from ASCII text is a substring of the lower-cased text (it only
    lowers, cuts and drops "'s"), so a rule whose rarest word is absent cannot match. Non-ASCII text
    (folding can create letters) always takes the full path.
    """
    return not text.isascii() or trigger.search(text.lower()) is not None


def _match_text_uncached(text: str, where: Where) -> tuple[Rule, ...]:
    if not _may_fire(text, _MESSAGE_TRIGGER if where == "message" else _FIELD_TRIGGER):
        return ()
    prose = where in ("description", "message")
    clauses = _CLAUSE.split(text[:MAX_SCAN_CHARS]) if prose else [text]
    fired: list[Rule] = []
    for clause in clauses:
        words = tokenize(clause)
        if not words:
            continue
        benign = [(s, e) for s, e, _ in _spans(words, _BENIGN)]
        head_end = _head_end(words)
        for start, end, rule in _spans(words, _TEXT_RULES):
            if where not in rule.where:
                continue
            if rule.head and end != head_end:
                continue
            if any(s < end and start < e for s, e in benign):
                continue
            if end < len(words) and words[end] in META_WORDS:
                continue
            before = words[max(0, start - CONTEXT_WINDOW) : start]
            if prose and any(w in NEGATIONS or w in DELIVERY_WORDS for w in before):
                continue
            fired.append(rule)
    return tuple(fired)


def _match_hint(value: str) -> list[Rule]:
    if not _may_fire(value, _HINT_TRIGGER):
        return []
    return [rule for _, _, rule in _spans(tokenize(value), _HINT_RULES)]


def _choice_cap(schema: Mapping[str, Any]) -> Verdict | None:
    """The highest verdict a fixed-choice field can get: booleans ok, selects warn, else None."""
    kind = schema.get("type")
    if kind == "boolean":
        return "ok"
    if kind == "array" or "enum" in schema or "oneOf" in schema:
        return "warn"
    return None


def classify_field(name: str, schema: Any) -> FieldVerdict:
    """Classify one field: `name` is its `properties` key, `schema` its (possibly garbage) schema."""
    fired: list[Rule] = []
    fired += _match_text(name, "name")
    is_mapping = type(schema) is dict or isinstance(schema, Mapping)
    if is_mapping:
        title, description = schema.get("title"), schema.get("description")
        if isinstance(title, str):
            fired += _match_text(title, "title")
        if isinstance(description, str):
            fired += _match_text(description, "description")
        if not _HINT_AND_FLAG_KEYS.isdisjoint(schema):  # most fields have neither
            for keyword in _HINT_KEYWORDS:
                value = schema.get(keyword)
                if isinstance(value, str):
                    fired += _match_hint(value)
            fired += [rule for rule in _FLAG_RULES if schema.get(rule.phrase) is True]
    if not fired:  # no cap can lower "ok"
        return FieldVerdict(name=name, verdict="ok", reasons=())
    verdict = worst(*(rule.level for rule in fired))
    reasons = list(dict.fromkeys(rule.reason for rule in fired))
    cap = _choice_cap(schema) if is_mapping else None
    if cap is not None and worst(verdict, cap) != cap:
        verdict = cap
        reasons.append("fixed_choices")
    return FieldVerdict(name=name, verdict=verdict, reasons=tuple(reasons))


def classify_schema(requested_schema: Any, message: str | None = None) -> FormVerdict:
    """Classify every field of a wire `requestedSchema`; the message adds ``warn``, and blocks only
    free-text fields that say nothing themselves (``secret_in_message``, see the module docstring).

    Reason codes of the message are prefixed ``message:`` (for example ``message:password``).
    """
    fields: list[FieldVerdict] = []
    schemas: list[Any] = []
    properties = requested_schema.get("properties") if isinstance(requested_schema, Mapping) else None
    if isinstance(properties, Mapping):
        for key, schema in properties.items():
            fields.append(classify_field(key if isinstance(key, str) else str(key), schema))
            schemas.append(schema)
    message_reasons: list[str] = []
    names_secret = False
    if isinstance(message, str):
        for rule in _match_text(message, "message"):
            names_secret = names_secret or rule.reason in SECRET_MESSAGE_REASONS
            code = f"message:{rule.reason}"
            if code not in message_reasons:
                message_reasons.append(code)
    if names_secret:
        fields = _secret_in_message(fields, schemas)
    verdict = worst("warn" if message_reasons else "ok", *(field.verdict for field in fields))
    return FormVerdict(verdict=verdict, fields=tuple(fields), message_reasons=tuple(message_reasons))


_NOT_FREE: Final = frozenset({"enum", "oneOf", "const", "format"})

# ASCII text made only of generic words, digits, separators and "'s": what every ASCII text that
# tokenize() turns into generic words and digits is made of (so a miss here settles it at once).
_MAYBE_GENERIC: Final = re.compile(
    r"(?:[\W_\d]|'s|" + "|".join(sorted(GENERIC_FIELD_WORDS, key=len, reverse=True)) + ")*", re.IGNORECASE
)


def _free_text(schema: Any) -> bool:
    """A string typed freely: no choices (enum, oneOf, const) and no format (email, date, …)."""
    return (
        (type(schema) is dict or isinstance(schema, Mapping))
        and schema.get("type") == "string"
        and _NOT_FREE.isdisjoint(schema)
    )


def _generic(name: str, schema: Mapping[str, Any]) -> bool:
    """The field's name, title and description use only GENERIC_FIELD_WORDS (and digits)."""
    for text in (name, schema.get("title"), schema.get("description")):
        if text is None:
            continue
        if not isinstance(text, str) or (text.isascii() and _MAYBE_GENERIC.fullmatch(text) is None):
            return False
        if not all(w in GENERIC_FIELD_WORDS or w.isdigit() for w in tokenize(text)):
            return False
    return True


def _secret_in_message(fields: list[FieldVerdict], schemas: list[Any]) -> list[FieldVerdict]:
    """The message names a secret: block the free-text fields that can only be it."""
    texts = [i for i, schema in enumerate(schemas) if _free_text(schema)]
    generic: set[int] = set()
    for i in texts:  # stops at the first free-text field that names what it holds
        if fields[i].verdict == "ok":
            if not _generic(fields[i].name, schemas[i]):
                generic.clear()
                break
            generic.add(i)
    all_generic = bool(generic)
    out = list(fields)
    for i in texts:
        field = fields[i]
        weak = field.verdict == "warn" and not CONFIRMABLE_REASONS.isdisjoint(field.reasons)
        if weak or (all_generic and i in generic):
            out[i] = FieldVerdict(field.name, "block", (*field.reasons, "secret_in_message"))
    return out


_match_text_cached = functools.lru_cache(maxsize=MATCH_CACHE_SIZE)(_match_text_uncached)
