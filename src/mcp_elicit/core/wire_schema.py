"""One field's JSON schema in the `requestedSchema` of each protocol revision (spec F2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from mcp_elicit.core.revisions import REV_2025_06_18
from mcp_elicit.core.sentinels import MISSING
from mcp_elicit.errors import UnsupportedInRevision

if TYPE_CHECKING:
    from mcp_elicit.core.form_model import Field

__all__ = ["field_to_wire"]


def field_to_wire(f: Field, revision: str) -> dict[str, Any]:
    old = revision == REV_2025_06_18
    if f.kind == "multi_select" and old:
        raise UnsupportedInRevision(f.name, "multi_select", revision)
    out: dict[str, Any] = {"type": _WIRE_TYPE[f.kind]}
    if f.title is not None:
        out["title"] = f.title
    if f.description is not None:
        out["description"] = f.description
    if f.kind == "string":
        _put(out, "format", f.format)
        _put(out, "minLength", f.min_length)
        _put(out, "maxLength", f.max_length)
    elif f.kind in ("number", "integer"):
        _put(out, "minimum", f.minimum)
        _put(out, "maximum", f.maximum)
    elif f.kind == "single_select":
        if f.titled and not (f.legacy_enum_names or old):
            out["oneOf"] = [{"const": o.value, "title": o.title} for o in f.options]
        else:
            out["enum"] = [o.value for o in f.options]
            if f.titled:
                # Only 2025-06-18 and forms parsed from the legacy shape get enumNames (F2).
                out["enumNames"] = [o.title for o in f.options]
    elif f.kind == "multi_select":
        if f.titled:
            out["items"] = {"anyOf": [{"const": o.value, "title": o.title} for o in f.options]}
        else:
            out["items"] = {"type": "string", "enum": [o.value for o in f.options]}
        _put(out, "minItems", f.min_items)
        _put(out, "maxItems", f.max_items)
    # 2025-06-18 knows defaults for booleans only; the others are dropped, not sent off-spec.
    if f.default is not MISSING and (not old or f.kind == "boolean"):
        out["default"] = list(f.default) if f.kind == "multi_select" else f.default
    return out


_WIRE_TYPE: Final[dict[str, str]] = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "single_select": "string",
    "multi_select": "array",
}


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value
