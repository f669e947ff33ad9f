"""What `mcp-elicit check-form` says about a form: spec deviations and secret-seeking fields.

Accepts what people paste: a bare `requestedSchema`, the params of an `elicitation/create`
request (`message` + `requestedSchema`), or the whole JSON-RPC request. Pure: the caller reads
the file.

The verdict is the one a client built with this kit would reach: `block` when the schema is not
spec-valid (the schema gate refuses it) or a field asks for a secret (F5), `warn` when a field
or the message carries a weaker signal, `ok` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_elicit.core.forms import schema_problems
from mcp_elicit.core.revisions import LATEST
from mcp_elicit.core.sensitive import classify_schema

__all__ = ["form_report", "split_document"]


def split_document(document: Any) -> tuple[Any, str | None]:
    """(requestedSchema, message) from a bare schema, request params or a whole request."""
    if isinstance(document, Mapping):
        if isinstance(document.get("params"), Mapping) and "method" in document:
            document = document["params"]
        if "requestedSchema" in document:
            message = document.get("message")
            return document["requestedSchema"], message if isinstance(message, str) else None
    return document, None


def form_report(document: Any, *, revision: str = LATEST) -> dict[str, Any]:
    """`verdict`, `valid`, `schema_errors` (field, keyword, problem) and `fields` (name, verdict, reasons)."""
    schema, message = split_document(document)
    problems = schema_problems(schema, revision=revision)
    secrets = classify_schema(schema, message)
    verdict = "block" if problems or secrets.verdict == "block" else secrets.verdict
    return {
        "verdict": verdict,
        "valid": not problems,
        "revision": revision,
        "schema_errors": [{"field": p.field, "keyword": p.keyword, "problem": p.problem} for p in problems],
        "fields": [
            {"name": f.name, "verdict": f.verdict, "reasons": list(f.reasons)} for f in secrets.fields
        ],
        "message_reasons": list(getattr(secrets, "message_reasons", ())),
    }
