"""Every error of the tree has one way to reach the other side (`core.refusals`)."""

from __future__ import annotations

import pytest

from mcp_elicit import errors
from mcp_elicit.core import wire_codes
from mcp_elicit.core.refusals import Refusal, mapped_classes, refusal_of

FAMILIES = {
    errors.ElicitError,
    errors.UsageError,
    errors.PeerError,
    errors.AuditError,
    errors.HandoffError,
    errors.DataError,
}
LEAVES = sorted(
    (
        obj
        for obj in (getattr(errors, name) for name in errors.__all__)
        if isinstance(obj, type) and issubclass(obj, errors.ElicitError) and obj not in FAMILIES
    ),
    key=lambda cls: cls.__name__,
)
EXAMPLES: dict[type[errors.ElicitError], errors.ElicitError] = {
    errors.FormDefinitionError: errors.FormDefinitionError("f", "pattern"),
    errors.UnsupportedInRevision: errors.UnsupportedInRevision("f", "multi select", "2025-06-18"),
    errors.InvalidArgument: errors.InvalidArgument("items", "empty"),
    errors.UnknownRevision: errors.UnknownRevision("1999-01-01", ("2025-11-25",)),
    errors.UnknownField: errors.UnknownField("f"),
    errors.ConfigError: errors.ConfigError("public_base_url", "missing"),
    errors.NotInstalled: errors.NotInstalled("middleware"),
    errors.OutOfOrder: errors.OutOfOrder("ElicitClient.sdk", "enter the client"),
    errors.SecretInForm: errors.SecretInForm({"api_key": ("secret_word",)}),
    errors.SchemaError: errors.SchemaError((errors.SchemaProblem("f", "pattern", "not allowed"),)),
    errors.AnswerError: errors.AnswerError((errors.FieldProblem("age", "minimum"),)),
    errors.ToolArgumentsError: errors.ToolArgumentsError(
        "query", (errors.FieldProblem("sql", errors.ArgumentProblem.MISSING),)
    ),
    errors.InvalidRequestState: errors.InvalidRequestState(),
    errors.WrongResponseType: errors.WrongResponseType("k", "roots/list"),
    errors.CapabilityError: errors.CapabilityError("url"),
    errors.CapabilityRequired: errors.CapabilityRequired("elicitation.form"),
    errors.ElicitationTimeout: errors.ElicitationTimeout(300),
    errors.ClientGone: errors.ClientGone("gone"),
    errors.ClientRefused: errors.ClientRefused(wire_codes.INVALID_PARAMS, "unknown mode"),
    errors.ServerOutputError: errors.ServerOutputError("bad UTF-8 on line 3"),
    errors.AuthorizationFailed: errors.AuthorizationFailed(
        "https://mcp.example/mcp", "denied", "access_denied"
    ),
    errors.UpstreamLost: errors.UpstreamLost("files", "its process exited with status 3", 3),
    errors.AuditWriteError: errors.AuditWriteError("sqlite", "x.db", "disk full"),
    errors.AuditReadError: errors.AuditReadError("sqlite", "x.db", "missing"),
    errors.OutcomeNotRecorded: errors.OutcomeNotRecorded("decline", "audit_write_failed"),
    errors.IdentityRequired: errors.IdentityRequired("mcp"),
    errors.HandoffNotCompleted: errors.HandoffNotCompleted("decline", "h1"),
    errors.TooManyHandoffs: errors.TooManyHandoffs(5),
    errors.UrlHandoffStopped: errors.UrlHandoffStopped("timeout"),
    errors.VaultError: errors.VaultError("github", "tampered"),
    errors.QueryRefused: errors.QueryRefused("not_read_only"),
    errors.DataEngineError: errors.DataEngineError("duckdb", "down"),
}


def test_every_leaf_of_the_error_tree_has_an_entry_of_its_own() -> None:
    missing = [cls.__name__ for cls in LEAVES if not any(m is cls for m in mapped_classes())]
    assert missing == []


def test_every_leaf_has_an_example_here() -> None:
    assert set(LEAVES) == set(EXAMPLES)


@pytest.mark.parametrize("cls", LEAVES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("modern", [False, True])
def test_each_refusal_is_one_readable_line_with_a_stable_reason(cls: type, modern: bool) -> None:
    refusal = refusal_of(EXAMPLES[cls], modern=modern)
    assert isinstance(refusal, Refusal)
    assert refusal.text
    assert "\n" not in refusal.text
    assert refusal.reason.isidentifier()
    assert refusal.code in {
        wire_codes.INVALID_PARAMS,
        wire_codes.INTERNAL_ERROR,
        wire_codes.MISSING_REQUIRED_CLIENT_CAPABILITY,
    }


def test_a_missing_capability_on_2026_07_28_is_the_specifications_minus_32021() -> None:
    refusal = refusal_of(errors.CapabilityRequired("elicitation.url"), modern=True)
    assert refusal.protocol
    assert refusal.code == wire_codes.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refusal.error_data() == {"requiredCapabilities": {"elicitation": {"url": {}}}}


def test_a_missing_capability_on_2025_11_25_is_a_tool_error_naming_the_capability() -> None:
    refusal = refusal_of(errors.CapabilityError("form"), modern=False)
    assert not refusal.protocol
    assert refusal.reason == "missing_capability"
    assert refusal.error_data()["requiredCapabilities"] == {"elicitation": {"form": {}}}


def test_a_bad_request_state_is_minus_32602_with_its_reason() -> None:
    refusal = refusal_of(errors.InvalidRequestState(), modern=True)
    assert (refusal.protocol, refusal.code) == (True, wire_codes.INVALID_PARAMS)
    assert refusal.error_data() == {"reason": "invalid_request_state"}


@pytest.mark.parametrize(
    "exc",
    [
        errors.ElicitationTimeout(5),
        errors.ClientGone("x"),
        errors.ClientRefused(wire_codes.INTERNAL_ERROR, "x"),
        errors.HandoffNotCompleted("cancel", "h"),
    ],
)
def test_ordinary_outcomes_are_marked_so_they_are_logged_as_one_line(exc: errors.ElicitError) -> None:
    assert refusal_of(exc, modern=False).ordinary


def test_a_hand_off_refusal_carries_its_flows_kind_and_only_an_oauth_hand_off_reads_as_a_sign_in() -> None:
    """The model reads these: an API key page (or a custom flow's page) is not a sign-in."""
    api_key = refusal_of(errors.HandoffNotCompleted("decline", "h", "api_key"), modern=False)
    oauth = refusal_of(errors.HandoffNotCompleted("decline", "h", "oauth"), modern=False)
    custom = refusal_of(errors.HandoffNotCompleted("decline", "h", "ticket"), modern=False)
    unknown = refusal_of(errors.HandoffNotCompleted("cancel", "h"), modern=True)
    assert api_key.error_data() == {"reason": "handoff_declined", "action": "decline", "kind": "api_key"}
    assert custom.data == {"action": "decline", "kind": "ticket"}
    assert unknown.data == {"action": "cancel"}
    assert len({api_key.text, oauth.text, custom.text}) == 3
    signs = ["sign" in r.text.lower() for r in (api_key, oauth, custom, unknown)]
    assert signs == [False, True, False, False]


def test_too_many_open_hand_offs_names_the_bound_and_no_kind_of_step() -> None:
    """The bound counts every kind of hand-off the person has open, so the refusal names none."""
    refusal = refusal_of(errors.TooManyHandoffs(16), modern=False)
    assert refusal.error_data() == {"reason": "too_many_handoffs", "limit": 16}
    assert "sign" not in refusal.text.lower()


def test_a_client_that_left_gets_no_reply() -> None:
    assert not refusal_of(errors.ClientGone("x"), modern=False).reply


def test_a_client_that_refused_is_still_there_and_its_code_and_words_reach_the_model() -> None:
    refusal = refusal_of(errors.ClientRefused(wire_codes.INVALID_PARAMS, "unknown mode"), modern=False)
    assert (refusal.reply, refusal.protocol, refusal.reason) == (True, False, "client_refused")
    assert refusal.error_data() == {"reason": "client_refused", "code": wire_codes.INVALID_PARAMS}
    assert "unknown mode" in refusal.text


def test_a_client_refusal_without_words_names_its_code() -> None:
    refusal = refusal_of(errors.ClientRefused(wire_codes.INTERNAL_ERROR, ""), modern=False)
    assert str(wire_codes.INTERNAL_ERROR) in refusal.text


def test_secret_fields_are_named_in_the_refusal() -> None:
    refusal = refusal_of(errors.SecretInForm({"token": ("secret_word",), "pin": ("pin",)}), modern=False)
    assert refusal.data == {"fields": ["pin", "token"]}


def test_reason_fields_are_enumerations_that_still_compare_as_strings() -> None:
    stopped = errors.UrlHandoffStopped("declined")
    assert stopped.reason is errors.StopReason.DECLINED
    assert stopped.reason == "declined"
    with pytest.raises(ValueError, match="no such reason"):
        errors.UrlHandoffStopped("no such reason")


def test_a_server_without_hand_off_settings_names_them_and_does_not_say_it_cannot_ask_at_all() -> None:
    """`handoff` on a server installed without `Handoffs`: its forms still work."""
    handoffs = refusal_of(errors.NotInstalled("handoffs"), modern=False, method="tools/call")
    middleware = refusal_of(errors.NotInstalled("middleware"), modern=True, method="tools/call")
    assert (handoffs.reason, middleware.reason) == ("not_installed", "not_installed")
    assert handoffs.error_data() == {"reason": "not_installed", "missing": "handoffs"}
    assert middleware.error_data() == {"reason": "not_installed", "missing": "middleware"}
    assert handoffs.text != middleware.text


def test_tool_arguments_that_do_not_fit_are_a_tool_error_naming_each_argument_and_its_problem() -> None:
    problems = (
        errors.FieldProblem("sql", errors.ArgumentProblem.MISSING),
        errors.FieldProblem("limit", errors.ArgumentProblem.WRONG_TYPE, "Input should be a valid integer"),
        errors.FieldProblem("x", errors.ArgumentProblem.UNEXPECTED),
    )
    refusal = refusal_of(errors.ToolArgumentsError("query", problems), modern=False, method="tools/call")
    assert (refusal.protocol, refusal.reason) == (False, "invalid_arguments")
    named = [["sql", "missing"], ["limit", "wrong_type"], ["x", "unexpected"]]
    assert refusal.data == {"tool": "query", "arguments": named}
    assert all(f"'{p.field}'" in refusal.text for p in problems)
