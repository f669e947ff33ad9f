"""mcp-elicit: human input for the Model Context Protocol, done properly.

The names below are the public surface; tests/test_public_api.py guards them. Deeper modules
(`mcp_elicit.server`, `mcp_elicit.client`, `mcp_elicit.core.*`, `mcp_elicit.audit`) have their
own `__all__` for the less common names. Names load on first use (PEP 562), so importing
the pure `mcp_elicit.core` modules never pulls in the SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_elicit.client import ElicitClient, connect
    from mcp_elicit.core.forms import (
        MISSING,
        Field,
        Form,
        Meta,
        Option,
        TitledEnum,
        Titles,
        form_of,
        parse_schema,
    )
    from mcp_elicit.core.urls import UrlVerdict, check_url
    from mcp_elicit.errors import (
        AnswerError,
        AuditReadError,
        AuditWriteError,
        CapabilityError,
        ClientGone,
        ConfigError,
        ElicitationTimeout,
        ElicitError,
        FieldProblem,
        FormDefinitionError,
        HandoffNotCompleted,
        IdentityRequired,
        NotInstalled,
        OutcomeNotRecorded,
        SchemaError,
        SchemaProblem,
        SecretInForm,
        ServerOutputError,
        TooManyHandoffs,
        UnsupportedInRevision,
        UrlHandoffStopped,
        VaultError,
    )
    from mcp_elicit.server import (
        Answer,
        ApiKeyHandoff,
        ElicitSettings,
        Handoffs,
        KeyRing,
        OAuthClient,
        OAuthHandoff,
        Question,
        RawRequest,
        TokenVault,
        ask,
        client_supports,
        confirm,
        credential,
        gather,
        handoff,
        install,
        require,
    )
    from mcp_elicit.ui.scripted import ScriptedUI
    from mcp_elicit.ui.terminal import TerminalUI

_SOURCES: dict[str, str] = {
    "OutcomeNotRecorded": "mcp_elicit.errors",
    "UrlHandoffStopped": "mcp_elicit.errors",
    "AuditReadError": "mcp_elicit.errors",
    "AuditWriteError": "mcp_elicit.errors",
    "ConfigError": "mcp_elicit.errors",
    "HandoffNotCompleted": "mcp_elicit.errors",
    "IdentityRequired": "mcp_elicit.errors",
    "TooManyHandoffs": "mcp_elicit.errors",
    "VaultError": "mcp_elicit.errors",
    "ApiKeyHandoff": "mcp_elicit.server",
    "Handoffs": "mcp_elicit.server",
    "KeyRing": "mcp_elicit.server",
    "OAuthClient": "mcp_elicit.server",
    "OAuthHandoff": "mcp_elicit.server",
    "TokenVault": "mcp_elicit.server",
    "credential": "mcp_elicit.server",
    "handoff": "mcp_elicit.server",
    "require": "mcp_elicit.server",
    "ElicitClient": "mcp_elicit.client",
    "connect": "mcp_elicit.client",
    "ScriptedUI": "mcp_elicit.ui.scripted",
    "TerminalUI": "mcp_elicit.ui.terminal",
    "MISSING": "mcp_elicit.core.forms",
    "Field": "mcp_elicit.core.forms",
    "Form": "mcp_elicit.core.forms",
    "Meta": "mcp_elicit.core.forms",
    "Option": "mcp_elicit.core.forms",
    "TitledEnum": "mcp_elicit.core.forms",
    "Titles": "mcp_elicit.core.forms",
    "form_of": "mcp_elicit.core.forms",
    "parse_schema": "mcp_elicit.core.forms",
    "UrlVerdict": "mcp_elicit.core.urls",
    "check_url": "mcp_elicit.core.urls",
    "AnswerError": "mcp_elicit.errors",
    "CapabilityError": "mcp_elicit.errors",
    "ClientGone": "mcp_elicit.errors",
    "ElicitationTimeout": "mcp_elicit.errors",
    "ElicitError": "mcp_elicit.errors",
    "FieldProblem": "mcp_elicit.errors",
    "FormDefinitionError": "mcp_elicit.errors",
    "NotInstalled": "mcp_elicit.errors",
    "SchemaError": "mcp_elicit.errors",
    "SchemaProblem": "mcp_elicit.errors",
    "SecretInForm": "mcp_elicit.errors",
    "ServerOutputError": "mcp_elicit.errors",
    "UnsupportedInRevision": "mcp_elicit.errors",
    "Answer": "mcp_elicit.server",
    "ElicitSettings": "mcp_elicit.server",
    "Question": "mcp_elicit.server",
    "RawRequest": "mcp_elicit.server",
    "ask": "mcp_elicit.server",
    "client_supports": "mcp_elicit.server",
    "confirm": "mcp_elicit.server",
    "gather": "mcp_elicit.server",
    "install": "mcp_elicit.server",
}

__all__ = [
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
]


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'mcp_elicit' has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
