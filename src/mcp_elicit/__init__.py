"""mcp-elicit: human input for the Model Context Protocol, done properly.

The names below are the public surface; tests/test_public_api.py guards them.
"""

from __future__ import annotations

from mcp_elicit.errors import (
    AnswerError,
    CapabilityError,
    ElicitationTimeout,
    ElicitError,
    FieldProblem,
    FormDefinitionError,
    NotInstalled,
    SchemaError,
    SchemaProblem,
    UnsupportedInRevision,
)

__all__ = [
    "AnswerError",
    "CapabilityError",
    "ElicitError",
    "ElicitationTimeout",
    "FieldProblem",
    "FormDefinitionError",
    "NotInstalled",
    "SchemaError",
    "SchemaProblem",
    "UnsupportedInRevision",
]
