"""The public surface is a decision: adding or removing a top-level name must change this test too."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import mcp_elicit
from mcp_elicit import errors

PUBLIC = {
    "MISSING",
    "Answer",
    "AnswerError",
    "ApiKeyHandoff",
    "AuditReadError",
    "AuditWriteError",
    "CapabilityError",
    "ClientGone",
    "ClientRefused",
    "ConfigError",
    "DataEngineError",
    "ElicitClient",
    "ElicitError",
    "ElicitSettings",
    "ElicitationTimeout",
    "FieldProblem",
    "Form",
    "FormField",
    "FormDefinitionError",
    "HandoffNotCompleted",
    "Handoffs",
    "IdentityRequired",
    "KeyRing",
    "Meta",
    "NotInstalled",
    "OAuthClient",
    "OAuthHandoff",
    "Option",
    "OutOfOrder",
    "OutcomeNotRecorded",
    "QueryRefused",
    "Question",
    "RawRequest",
    "RecordAs",
    "SchemaError",
    "SchemaProblem",
    "ScriptedUI",
    "SecretInForm",
    "ServerOutputError",
    "TerminalUI",
    "TitledEnum",
    "Titles",
    "TokenVault",
    "TooManyHandoffs",
    "UnsupportedInRevision",
    "UrlHandoffStopped",
    "UrlVerdict",
    "VaultError",
    "ask",
    # the error tree's families and new leaves (errors.py)
    "AuditError",
    "AuthProblem",
    "AuthorizationFailed",
    "ArgumentProblem",
    "CapabilityRequired",
    "ConfigProblem",
    "ToolArgumentsError",
    "HandoffError",
    "InvalidArgument",
    "InvalidRequestState",
    "PeerError",
    "DataError",
    "StopReason",
    "UnknownField",
    "UnknownRevision",
    "UpstreamLost",
    "UsageError",
    "VaultProblem",
    "WrongResponseType",
    "check_url",
    "client_supports",
    "confirm",
    "connect",
    "credential",
    "form_of",
    "gather",
    "handoff",
    "install",
    "parse_schema",
    "require",
}

MODULES_WITH_ALL = [
    "mcp_elicit.errors",
    "mcp_elicit.core.forms",
    "mcp_elicit.core.urls",
    "mcp_elicit.core.limits",
    "mcp_elicit.server",
    "mcp_elicit.client",
    "mcp_elicit.audit",
    "mcp_elicit.apps.data",
    "mcp_elicit.ui.scripted",
    "mcp_elicit.ui.terminal",
    "mcp_elicit.client.ui_protocol",
]


def test_the_top_level_exports_exactly_the_agreed_names() -> None:
    assert set(mcp_elicit.__all__) == PUBLIC


def test_every_public_name_is_documented() -> None:
    for name in mcp_elicit.__all__:
        obj = getattr(mcp_elicit, name)
        if callable(obj):
            assert obj.__doc__, name


@pytest.mark.parametrize("module", MODULES_WITH_ALL)
def test_every_name_in_a_modules_all_exists(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert missing == []


FAMILIES = (
    errors.ElicitError,
    errors.UsageError,
    errors.PeerError,
    errors.AuditError,
    errors.HandoffError,
    errors.DataError,
)


def test_every_error_subclasses_the_project_base_a_family_and_a_builtin() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj not in FAMILIES:
            assert any(issubclass(obj, family) for family in FAMILIES[1:]), name
            assert any(base.__module__ == "builtins" and base is not Exception for base in obj.__mro__), name


def test_every_error_is_exported_at_the_top_level() -> None:
    assert set(errors.__all__) <= set(mcp_elicit.__all__)


def test_the_type_checkers_view_of_the_top_level_matches_what_it_loads() -> None:
    tree = ast.parse(Path(mcp_elicit.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    seen = {
        (node.module, name)
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        for name in (errors.__all__ if alias.name == "*" else [alias.name])
    }
    assert seen == {(module, name) for module, names in mcp_elicit._EXPORTS.items() for name in names}
