"""A tool call's arguments that do not fit the tool, as the refusal names them (ToolArgumentsError).

The SDK validates a call's arguments with pydantic; each error it reports (a mapping with
``type``, ``loc`` and ``msg``, as ``ValidationError.errors()`` gives it) becomes one FieldProblem
here: the argument (a dotted path inside a nested one) and an ArgumentProblem. The value the
client sent is never kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp_elicit.errors import ArgumentProblem, FieldProblem

__all__ = ["argument_problem"]

# pydantic's error types for an argument not given, or given where the tool takes none.
_MISSING: Final = frozenset({"missing", "missing_argument", "missing_keyword_only_argument"})
_UNEXPECTED: Final = frozenset({"extra_forbidden", "unexpected_keyword_argument"})


def argument_problem(err: Mapping[str, Any]) -> FieldProblem:
    """One validation error of a tool's arguments as a FieldProblem: missing and unexpected
    arguments carry no detail; a wrong type (pydantic's ``*_type`` and ``*_parsing``) or another
    misfit (a bound, a choice) carries the validator's words."""
    where, kind = ".".join(str(part) for part in err.get("loc", ())), str(err.get("type", ""))
    if kind in _MISSING:
        return FieldProblem(where, ArgumentProblem.MISSING)
    if kind in _UNEXPECTED:
        return FieldProblem(where, ArgumentProblem.UNEXPECTED)
    typed = kind.endswith(("_type", "_parsing"))
    code = ArgumentProblem.WRONG_TYPE if typed else ArgumentProblem.INVALID
    return FieldProblem(where, code, str(err.get("msg", "")))
