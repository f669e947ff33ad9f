"""The secret guard's form rule `secret_in_message`: a form whose free-text fields say nothing of their
own (FastMCP's `ctx.elicit(message, str)`: one field `value`) is judged by its message; and where the
message does not ask for a secret, or the fields are numbers, choices or name what they hold, nothing
is blocked."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.core.sensitive import GENERIC_FIELD_WORDS, RULES, SECRET_MESSAGE_REASONS, classify_schema

# What FastMCP 4.1.2 and 4.2.3 send for `ctx.elicit("Paste your GitHub token", str)`, byte for byte
# (tests/peers/test_secret_in_message.py sends it through a real FastMCP server).
FASTMCP_STR = {
    "type": "object",
    "properties": {"value": {"title": "Value", "type": "string"}},
    "required": ["value"],
}
VALUE = {"type": "string", "title": "Value"}


def form(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


SECRET_MESSAGES = [
    "Paste your GitHub token",
    "Paste your token",
    "Enter your password",
    "Please type the passphrase for your SSH key",
    "What is your API key?",
    "Your OpenAI secret key, please",
    "Paste the private key",
    "Enter your credentials",
    "What's your PAT?",
    "Enter the 6-digit code from your authenticator app",
    "Enter your 2FA code",
    "Type the one-time password we just showed you",
    "What is the client secret of your OAuth app?",
    "Enter the secret",
    "Your Hugging Face token:",
]

BENIGN_MESSAGES = [
    "How many tokens should the summary use?",
    "What's the secret santa budget?",
    "What should we tell Pat?",
    "Pick a password policy",
    "What is the password length you want?",
    "We will never ask for your password. Which city are you in?",
    "Which repository should I clone?",
    "What is the API key name?",
    "What is the token budget for this run?",
    "Should I reset your password?",
    "Which file path holds the report?",
]


@pytest.mark.parametrize("message", SECRET_MESSAGES)
def test_a_lone_generic_field_under_a_message_naming_a_secret_is_blocked(message: str) -> None:
    verdict = classify_schema(FASTMCP_STR, message)
    assert verdict.verdict == "block"
    assert verdict.blocked == ("value",)
    assert verdict.fields[0].reasons[-1] == "secret_in_message"


@pytest.mark.parametrize("message", BENIGN_MESSAGES)
def test_a_generic_field_under_a_message_that_names_no_secret_is_not_blocked(message: str) -> None:
    assert classify_schema(FASTMCP_STR, message).verdict != "block"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "string", "enum": ["strict", "lax"]},
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
        {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        {"type": "string", "format": "email"},
        {"type": "string", "format": "date"},
    ],
)
@pytest.mark.parametrize("message", ["Paste your GitHub token", "Enter your password", "How many tokens?"])
def test_numbers_choices_and_formatted_strings_are_never_blocked_by_a_message(
    schema: dict[str, Any], message: str
) -> None:
    assert classify_schema(form(value=schema), message).verdict != "block"


def test_the_sdk_one_field_model_named_token_is_blocked_when_the_message_names_the_token() -> None:
    # What the SDK's ctx.elicit sends for `class Tok(BaseModel): token: str`.
    schema = {**form(token={"title": "Token", "type": "string"}), "title": "Tok"}
    assert classify_schema(schema, "Which city?").verdict == "warn"
    verdict = classify_schema(schema, "Paste your GitHub token")
    assert verdict.blocked == ("token",)
    assert verdict.fields[0].reasons == ("token", "secret_in_message")


def test_a_field_that_names_what_it_holds_keeps_the_message_to_a_warning() -> None:
    verdict = classify_schema(form(email={"type": "string"}, value=VALUE), "Enter your email and password")
    assert verdict.verdict == "warn"
    assert verdict.blocked == ()
    assert verdict.message_reasons == ("message:password",)


def test_several_generic_fields_beside_a_checkbox_are_all_blocked() -> None:
    schema = form(value=VALUE, input={"type": "string"}, remember={"type": "boolean"})
    verdict = classify_schema(schema, "Paste your API key")
    assert verdict.blocked == ("value", "input")
    assert verdict.fields[2].verdict == "ok"


def test_a_generic_field_with_a_description_of_its_own_is_not_generic() -> None:
    schema = form(value={"type": "string", "description": "The repository to clone"})
    assert classify_schema(schema, "Paste your GitHub token").verdict == "warn"


def test_a_secret_named_in_passing_still_blocks_a_lone_generic_field_as_documented() -> None:
    # The known cost of reading the message (docs/guardrails.md, "What it does not do").
    assert classify_schema(FASTMCP_STR, "What is the secret of a good sourdough?").verdict == "block"
    assert classify_schema(FASTMCP_STR, "Name the new API key").verdict == "block"


def test_a_field_already_blocked_stays_blocked_with_its_own_reasons() -> None:
    verdict = classify_schema(form(password={"type": "string"}), "Enter your password")
    assert verdict.fields[0].reasons == ("password",)


def test_every_message_reason_the_rule_counts_comes_from_a_rule() -> None:
    assert {r.reason for r in RULES} >= SECRET_MESSAGE_REASONS
    assert all(w == w.lower() and " " not in w for w in GENERIC_FIELD_WORDS)


_generic_name = st.lists(st.sampled_from([*sorted(GENERIC_FIELD_WORDS), "1", "2"]), min_size=1, max_size=3)
_style = st.sampled_from(["_", "-", " ", "."])
_secret = st.sampled_from(["GitHub token", "password", "API key", "passphrase", "private key", "token"])
_lead = st.sampled_from(["Paste your", "Please enter your", "What is your", "Type your", "your"])
_tail = st.sampled_from(["", "?", ".", " here", " for the deploy", ", please"])


@given(_generic_name, _style, _lead, _secret, _tail, st.booleans())
def test_any_generic_field_name_under_any_request_for_a_secret_is_blocked(
    words: list[str], sep: str, lead: str, secret: str, tail: str, titled: bool
) -> None:
    name = sep.join(words)
    schema: dict[str, Any] = {"type": "string"}
    if titled:
        schema["title"] = " ".join(words).title()
    verdict = classify_schema(form(**{name: schema}), f"{lead} {secret}{tail}")
    assert verdict.blocked == (name,)


_not_free_text = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["integer", "number", "boolean"])}),
    st.fixed_dictionaries({"type": st.just("string"), "enum": st.just(["a", "b"])}),
    st.fixed_dictionaries({"type": st.just("string"), "format": st.sampled_from(["email", "uri", "date"])}),
)


@given(
    st.dictionaries(st.sampled_from(["value", "input", "count", "answer"]), _not_free_text, min_size=1),
    st.text(),
)
def test_no_message_blocks_a_form_without_free_text_that_no_field_blocks_alone(
    properties: dict[str, Any], message: str
) -> None:
    assert classify_schema(form(**properties), message).verdict != "block"


_benign_word = st.sampled_from(
    [
        "how",
        "many",
        "tokens",
        "should",
        "the",
        "summary",
        "use",
        "what",
        "is",
        "budget",
        "city",
        "your",
        "name",
        "favourite",
        "colour",
        "pick",
        "a",
        "repository",
        "branch",
        "santa",
        "count",
        "limit",
    ]
)


@given(st.lists(_benign_word, min_size=1, max_size=10), st.sampled_from(["?", ".", ""]))
def test_messages_of_everyday_words_never_block_a_generic_field(words: list[str], end: str) -> None:
    assert classify_schema(FASTMCP_STR, " ".join(words) + end).verdict != "block"
