"""mcp-elicit: human input for the Model Context Protocol, done properly.

The names below are the public surface; tests/test_public_api.py guards them. Deeper modules
(`mcp_elicit.server`, `mcp_elicit.client`, `mcp_elicit.core.*`, `mcp_elicit.audit`) have their
own `__all__` for the less common names. Names load on first use (PEP 562), so importing
the pure `mcp_elicit.core` modules never pulls in the SDK.

`_EXPORTS` is the one list of them: `__all__` and the lazy loader are derived from it, and the
`TYPE_CHECKING` imports (for type checkers, which cannot run it) are checked against it by a test.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mcp_elicit import errors  # pure: the tree imports only its reasons (error_reasons)

if TYPE_CHECKING:
    from mcp_elicit.client import ElicitClient, connect
    from mcp_elicit.core.forms import (
        MISSING,
        Form,
        FormField,
        Meta,
        Option,
        TitledEnum,
        Titles,
        form_of,
        parse_schema,
    )
    from mcp_elicit.core.urls import UrlVerdict, check_url
    from mcp_elicit.errors import *  # every error (errors.__all__)
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
        RecordAs,
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

_EXPORTS: dict[str, tuple[str, ...]] = {
    "mcp_elicit.client": ("ElicitClient", "connect"),
    "mcp_elicit.core.forms": (
        "MISSING",
        "Form",
        "FormField",
        "Meta",
        "Option",
        "TitledEnum",
        "Titles",
        "form_of",
        "parse_schema",
    ),
    "mcp_elicit.core.urls": ("UrlVerdict", "check_url"),
    "mcp_elicit.errors": tuple(errors.__all__),  # the whole error tree
    "mcp_elicit.server": (
        "Answer",
        "ApiKeyHandoff",
        "ElicitSettings",
        "Handoffs",
        "KeyRing",
        "OAuthClient",
        "OAuthHandoff",
        "Question",
        "RawRequest",
        "RecordAs",
        "TokenVault",
        "ask",
        "client_supports",
        "confirm",
        "credential",
        "gather",
        "handoff",
        "install",
        "require",
    ),
    "mcp_elicit.ui.scripted": ("ScriptedUI",),
    "mcp_elicit.ui.terminal": ("TerminalUI",),
}
_SOURCES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_SOURCES)


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'mcp_elicit' has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
