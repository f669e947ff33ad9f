"""mcp-elicit: human input for the Model Context Protocol, done properly.

The names below are the public surface; tests/test_public_api.py guards them. Deeper modules
(`mcp_elicit.server`, `mcp_elicit.client`, `mcp_elicit.core.*`, `mcp_elicit.audit`) have their
own `__all__` for the less common names.
"""

from __future__ import annotations

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
    CapabilityError,
    ClientGone,
    ElicitationTimeout,
    ElicitError,
    FieldProblem,
    FormDefinitionError,
    NotInstalled,
    SchemaError,
    SchemaProblem,
    UnsupportedInRevision,
)
from mcp_elicit.server import (
    Answer,
    ElicitSettings,
    Question,
    RawRequest,
    ask,
    client_supports,
    confirm,
    gather,
    install,
)

__all__ = [
    "MISSING",
    "Answer",
    "AnswerError",
    "CapabilityError",
    "ClientGone",
    "ElicitError",
    "ElicitSettings",
    "ElicitationTimeout",
    "Field",
    "FieldProblem",
    "Form",
    "FormDefinitionError",
    "Meta",
    "NotInstalled",
    "Option",
    "Question",
    "RawRequest",
    "SchemaError",
    "SchemaProblem",
    "TitledEnum",
    "Titles",
    "UnsupportedInRevision",
    "UrlVerdict",
    "ask",
    "check_url",
    "client_supports",
    "confirm",
    "form_of",
    "gather",
    "install",
    "parse_schema",
]
