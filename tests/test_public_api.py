"""The public surface is a decision: adding or removing a top-level name must change this test too."""

from __future__ import annotations

import importlib

import pytest

import mcp_elicit

PUBLIC = {
    "MISSING",
    "Answer",
    "AnswerError",
    "ApiKeyHandoff",
    "AuditReadError",
    "AuditWriteError",
    "CapabilityError",
    "ClientGone",
    "ConfigError",
    "ElicitClient",
    "ElicitError",
    "ElicitSettings",
    "ElicitationTimeout",
    "Field",
    "FieldProblem",
    "Form",
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
    "OutcomeNotRecorded",
    "Question",
    "RawRequest",
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
    "mcp_elicit.ui.scripted",
    "mcp_elicit.ui.terminal",
    "mcp_elicit.ui.base",
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


def test_every_error_subclasses_the_project_base_and_a_builtin() -> None:
    from mcp_elicit import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj is not errors.ElicitError:
            assert issubclass(obj, errors.ElicitError), name
            assert any(base.__module__ == "builtins" and base is not Exception for base in obj.__mro__), name


def test_every_error_is_exported_at_the_top_level() -> None:
    from mcp_elicit import errors

    assert set(errors.__all__) - {"FieldProblem", "SchemaProblem"} <= set(mcp_elicit.__all__)
