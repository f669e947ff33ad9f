"""The strict parser of incoming `requestedSchema`s (import it from `mcp_elicit.core.forms`).

The input is untrusted JSON from a server. Every check only looks at types and sizes and never
recurses into values, so arbitrary input costs time linear in its size and can raise nothing but
`SchemaError` (from `parse_schema`). Every deviation is reported, not just the first, so
`mcp-elicit check-form` can show a server author the whole list at once.

What is accepted is exactly F1/F2 plus harmless annotations: `$schema`, `$id`, `$comment`,
`title`, `description` and `additionalProperties: false` at the top; `title` and `description` on a
field; `type: "string"` beside `anyOf` in titled multi-select items. The field shape is chosen by
which keys are present (F2): for a string, `oneOf` means titled single select, `enum` with
`enumNames` the legacy titled enum, `enum` alone the untitled single select, none of them a plain
string; for an array, `anyOf` in `items` means titled, `enum` untitled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp_elicit.core import limits
from mcp_elicit.core.answers import check_field_value, json_type
from mcp_elicit.core.form_model import FORMATS, Field, Form, Option, is_finite_number, valid_name_problem
from mcp_elicit.core.revisions import LATEST, REV_2025_06_18, REVISIONS
from mcp_elicit.errors import FormDefinitionError, SchemaError, SchemaProblem, UnknownRevision

_TOP_KEYS: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "additionalProperties",
    }
)
_COMMON: Final = frozenset({"type", "title", "description", "default"})
_ALLOWED: Final[dict[str, frozenset[str]]] = {
    "string": _COMMON | {"format", "minLength", "maxLength"},
    "number": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "untitled_single": _COMMON | {"enum"},
    "legacy_single": _COMMON | {"enum", "enumNames"},
    "titled_single": _COMMON | {"oneOf"},
    "multi": _COMMON | {"items", "minItems", "maxItems"},
}
_SHAPE_NAMES: Final = {
    "string": "string",
    "number": "number",
    "boolean": "boolean",
    "untitled_single": "single select (enum)",
    "legacy_single": "legacy titled enum",
    "titled_single": "titled single select (oneOf)",
    "multi": "multi select",
}
# Keywords with a reason of their own, so the problem says more than "unknown keyword".
_KNOWN_REFUSALS: Final = {
    "pattern": "pattern is not in the spec's field schemas",
    "$ref": "references are not allowed (F1)",
    "$defs": "definitions are not allowed (F1)",
    "definitions": "definitions are not allowed (F1)",
    "anyOf": "combinators are not allowed here (F1)",
    "oneOf": "combinators are not allowed here (F1)",
    "allOf": "combinators are not allowed here (F1)",
    "not": "combinators are not allowed here (F1)",
    "exclusiveMinimum": "the spec has inclusive minimum only",
    "exclusiveMaximum": "the spec has inclusive maximum only",
    "multipleOf": "multipleOf is not in the spec's field schemas",
    "enumNames": "enumNames belongs to a string field with enum",
    "const": "const is allowed only inside oneOf/anyOf options",
}
_TYPES: Final = ("string", "number", "integer", "boolean", "array")


class _Problems:
    def __init__(self) -> None:
        self.items: list[SchemaProblem] = []

    def add(self, field: str, keyword: Any, problem: str) -> None:
        self.items.append(SchemaProblem(field, _label(keyword), problem))

    def __len__(self) -> int:
        return len(self.items)


def _label(name: Any) -> str:
    """A printable, bounded label for a name that came from the wire."""
    if not isinstance(name, str):
        return f"<{type(name).__name__}>"
    if len(name) > limits.MAX_FIELD_NAME_CHARS:
        return name[: limits.MAX_FIELD_NAME_CHARS] + "…"
    return name


def parse_schema(schema: Any, *, revision: str = LATEST) -> Form:
    """Parse an untrusted `requestedSchema`; raises SchemaError listing every deviation, nothing else."""
    form, problems = _parse(schema, revision)
    if problems or form is None:
        raise SchemaError(problems)
    return form


def schema_problems(schema: Any, *, revision: str = LATEST) -> tuple[SchemaProblem, ...]:
    """Every deviation of `schema` from the spec as SchemaProblem values (empty when it is valid)."""
    return _parse(schema, revision)[1]


def _parse(schema: Any, revision: str) -> tuple[Form | None, tuple[SchemaProblem, ...]]:
    if revision not in REVISIONS:
        raise UnknownRevision(revision, REVISIONS)
    p = _Problems()
    if not isinstance(schema, Mapping):
        p.add("", "", f"requestedSchema must be an object, not {json_type(schema)}")
        return None, tuple(p.items)
    for key in schema:
        if key not in _TOP_KEYS:
            reason = _KNOWN_REFUSALS.get(key) if isinstance(key, str) else None
            p.add("", key, reason or "not a keyword of requestedSchema")
    if "type" not in schema:
        p.add("", "type", 'missing; must be "object"')
    elif schema["type"] != "object":
        p.add("", "type", 'must be "object"')
    for key in ("$schema", "$id", "$comment"):
        if key in schema and not isinstance(schema[key], str):
            p.add("", key, "must be a string")
    _text(p, "", "title", schema, limits.MAX_TITLE_CHARS)
    _text(p, "", "description", schema, limits.MAX_DESCRIPTION_CHARS)
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        p.add("", "additionalProperties", "only false is accepted (unknown answers are refused anyway)")

    required = dict.fromkeys(_required(p, schema))
    properties = schema.get("properties")
    if "properties" not in schema:
        p.add("", "properties", "missing")
        properties = {}
    elif not isinstance(properties, Mapping):
        p.add("", "properties", f"must be an object, not {json_type(properties)}")
        properties = {}
    if len(properties) > limits.MAX_FIELDS:
        p.add("", "properties", f"{len(properties)} fields; at most {limits.MAX_FIELDS}")
    for name in required:
        if name not in properties:
            p.add(_label(name), "required", "names a field that is not in properties")

    fields: list[Field] = []
    for name, prop in properties.items():
        f = _field(p, name, prop, name in required, revision)
        if f is not None:
            fields.append(f)
    if p.items:
        return None, tuple(p.items)
    try:
        return Form(tuple(fields)), ()
    except FormDefinitionError as exc:  # a gap between these checks and Form's; report, never raise
        return None, (SchemaProblem(exc.field, exc.construct, exc.detail or "invalid"),)


def _text(p: _Problems, field: str, key: str, where: Mapping[Any, Any], limit: int) -> str | None:
    if key not in where:
        return None
    value = where[key]
    if not isinstance(value, str):
        p.add(field, key, f"must be a string, not {json_type(value)}")
        return None
    if len(value) > limit:
        p.add(field, key, f"{len(value)} characters; at most {limit}")
        return None
    return value


def _required(p: _Problems, schema: Mapping[Any, Any]) -> list[str]:
    if "required" not in schema:
        return []
    raw = schema["required"]
    if not isinstance(raw, list | tuple):
        p.add("", "required", f"must be an array of field names, not {json_type(raw)}")
        return []
    names: dict[str, None] = {}  # ordered and O(1) membership
    for item in raw:
        if not isinstance(item, str):
            p.add("", "required", f"must contain only strings, found {json_type(item)}")
        elif item in names:
            p.add(_label(item), "required", "listed twice")
        else:
            names[item] = None
    return list(names)


def _shape(prop: Mapping[Any, Any], typ: str) -> str:
    if typ == "string":
        if "oneOf" in prop:
            return "titled_single"
        if "enum" in prop:
            return "legacy_single" if "enumNames" in prop else "untitled_single"
        return "string"
    if typ in ("number", "integer"):
        return "number"
    return "multi" if typ == "array" else "boolean"


def _field(p: _Problems, raw_name: Any, prop: Any, required: bool, revision: str) -> Field | None:
    before = len(p)
    name = _label(raw_name)
    why = valid_name_problem(raw_name)
    if why:
        p.add(name, "properties", f"invalid field name: {why}")
    if not isinstance(prop, Mapping):
        p.add(name, "", f"a field schema must be an object, not {json_type(prop)}")
        return None
    typ = prop.get("type")
    if "type" not in prop:
        p.add(name, "type", f"missing; must be one of {', '.join(_TYPES)}")
        return None
    if typ == "object":
        p.add(name, "type", "nested objects are not allowed (F1)")
        return None
    if not isinstance(typ, str) or typ not in _TYPES:
        p.add(name, "type", f"must be one of {', '.join(_TYPES)}")
        return None
    shape = _shape(prop, typ)
    for key in prop:
        if key not in _ALLOWED[shape]:
            reason = _KNOWN_REFUSALS.get(key) if isinstance(key, str) else None
            p.add(name, key, reason or f"not a keyword of a {_SHAPE_NAMES[shape]} field")
    if revision == REV_2025_06_18 and shape in ("titled_single", "multi"):
        p.add(name, "oneOf" if shape == "titled_single" else "type", f"not in protocol revision {revision}")

    kw: dict[str, Any] = {
        "title": _text(p, name, "title", prop, limits.MAX_TITLE_CHARS),
        "description": _text(p, name, "description", prop, limits.MAX_DESCRIPTION_CHARS),
    }
    if shape == "string":
        kind = "string"
        fmt = prop.get("format")
        if "format" in prop and (not isinstance(fmt, str) or fmt not in FORMATS):
            p.add(name, "format", f"must be one of {', '.join(FORMATS)}")
        kw["format"] = fmt
        kw["min_length"], kw["max_length"] = _counts(
            p, name, prop, "minLength", "maxLength", limits.MAX_STRING_LENGTH
        )
    elif shape == "number":
        kind = typ
        kw["minimum"], kw["maximum"] = _bounds(p, name, prop)
    elif shape == "boolean":
        kind = "boolean"
    elif shape == "multi":
        kind = "multi_select"
        kw["options"], kw["titled"] = _items(p, name, prop.get("items"), "items" in prop)
        kw["min_items"], kw["max_items"] = _counts(p, name, prop, "minItems", "maxItems", limits.MAX_OPTIONS)
        if kw["min_items"] is not None and kw["options"] and kw["min_items"] > len(kw["options"]):
            p.add(name, "minItems", f"{kw['min_items']} exceeds the {len(kw['options'])} options")
    else:
        kind = "single_select"
        if shape == "titled_single":
            kw["options"] = _titled_options(p, name, "oneOf", prop["oneOf"])
            kw["titled"] = True
        else:
            values = _enum(p, name, "enum", prop["enum"])
            kw["options"] = tuple(Option(v) for v in values)
            if shape == "legacy_single":
                kw["options"] = _with_enum_names(p, name, values, prop["enumNames"])
                kw["titled"] = kw["legacy_enum_names"] = True

    if len(p) > before:
        return None
    try:
        field = Field(raw_name, kind, required=required, **kw)  # type: ignore[arg-type]
    except FormDefinitionError as exc:  # a gap between these checks and Field's; report it
        p.add(name, exc.construct, exc.detail or "invalid")
        return None
    if "default" not in prop:
        return field
    if revision == REV_2025_06_18 and kind != "boolean":
        p.add(name, "default", f"protocol revision {revision} allows defaults on booleans only")
        return None
    value, problem = check_field_value(field, prop["default"])
    if problem is not None:
        p.add(name, "default", f"does not fit the field ({problem.code}: {problem.detail})")
        return None
    try:
        return Field(raw_name, kind, required=required, default=value, **kw)  # type: ignore[arg-type]
    except FormDefinitionError as exc:
        p.add(name, exc.construct, exc.detail or "invalid")
        return None


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _counts(
    p: _Problems, name: str, prop: Mapping[Any, Any], low: str, high: str, limit: int
) -> tuple[int | None, int | None]:
    got: list[int | None] = []
    for key in (low, high):
        value: Any = prop.get(key)
        if key not in prop:
            got.append(None)
        elif not _is_count(value):
            p.add(name, key, f"must be an integer, not {json_type(value)}")
            got.append(None)
        elif not 0 <= value <= limit:
            p.add(name, key, f"must be between 0 and {limit}")
            got.append(None)
        else:
            got.append(value)
    lo, hi = got
    if lo is not None and hi is not None and lo > hi:
        p.add(name, low, f"greater than {high}")
    return lo, hi


def _bounds(p: _Problems, name: str, prop: Mapping[Any, Any]) -> tuple[Any, Any]:
    got: list[Any] = []
    for key in ("minimum", "maximum"):
        value = prop.get(key)
        if key in prop and not is_finite_number(value):
            p.add(name, key, f"must be a finite number, not {json_type(value)}")
            value = None
        got.append(value)
    lo, hi = got
    if lo is not None and hi is not None and lo > hi:
        p.add(name, "minimum", "greater than maximum")
    return lo, hi


def _option_list(p: _Problems, name: str, keyword: str, raw: Any) -> list[Any]:
    if not isinstance(raw, list | tuple):
        p.add(name, keyword, f"must be an array, not {json_type(raw)}")
        return []
    if not raw:
        p.add(name, keyword, "must list at least one option")
    if len(raw) > limits.MAX_OPTIONS:
        p.add(name, keyword, f"{len(raw)} options; at most {limits.MAX_OPTIONS}")
    return list(raw)


def _option_value(p: _Problems, name: str, keyword: str, value: Any, seen: set[str]) -> bool:
    if not isinstance(value, str):
        p.add(name, keyword, f"option values must be strings, found {json_type(value)}")
        return False
    if len(value) > limits.MAX_OPTION_CHARS:
        p.add(
            name, keyword, f"an option value has {len(value)} characters; at most {limits.MAX_OPTION_CHARS}"
        )
        return False
    if value in seen:
        p.add(name, keyword, f"duplicate option {_label(value)!r}")
        return False
    seen.add(value)
    return True


def _enum(p: _Problems, name: str, keyword: str, raw: Any) -> list[str]:
    seen: set[str] = set()
    return [v for v in _option_list(p, name, keyword, raw) if _option_value(p, name, keyword, v, seen)]


def _with_enum_names(p: _Problems, name: str, values: list[str], raw: Any) -> tuple[Option, ...]:
    if not isinstance(raw, list | tuple):
        p.add(name, "enumNames", f"must be an array, not {json_type(raw)}")
        return ()
    if len(raw) != len(values):
        p.add(name, "enumNames", f"{len(raw)} names for {len(values)} enum values")
        return ()
    for title in raw:
        if not isinstance(title, str):
            p.add(name, "enumNames", f"names must be strings, found {json_type(title)}")
            return ()
        if len(title) > limits.MAX_TITLE_CHARS:
            p.add(name, "enumNames", f"a name has {len(title)} characters; at most {limits.MAX_TITLE_CHARS}")
            return ()
    return tuple(Option(v, t) for v, t in zip(values, raw, strict=True))


def _titled_options(p: _Problems, name: str, keyword: str, raw: Any) -> tuple[Option, ...]:
    seen: set[str] = set()
    options: list[Option] = []
    for item in _option_list(p, name, keyword, raw):
        if not isinstance(item, Mapping):
            p.add(name, keyword, f"options must be objects with const and title, found {json_type(item)}")
            continue
        extra = [k for k in item if k not in ("const", "title")]
        if extra:
            p.add(name, keyword, f"an option has keys other than const and title: {_label(extra[0])!r}")
        if "const" not in item or "title" not in item:
            p.add(name, keyword, "an option lacks const or title")
            continue
        title = item["title"]
        if not isinstance(title, str):
            p.add(name, keyword, f"option titles must be strings, found {json_type(title)}")
        elif len(title) > limits.MAX_TITLE_CHARS:
            p.add(
                name,
                keyword,
                f"an option title has {len(title)} characters; at most {limits.MAX_TITLE_CHARS}",
            )
        elif _option_value(p, name, keyword, item["const"], seen):
            options.append(Option(item["const"], title))
    return tuple(options)


def _items(p: _Problems, name: str, items: Any, present: bool) -> tuple[tuple[Option, ...], bool]:
    if not present:
        p.add(name, "items", "missing; a multi select needs items with enum or anyOf")
        return (), False
    if not isinstance(items, Mapping):
        p.add(name, "items", f"must be an object, not {json_type(items)}")
        return (), False
    if "anyOf" in items:
        for key in items:
            if key not in ("anyOf", "type"):
                p.add(name, f"items.{_label(key)}", "not a keyword of titled multi-select items")
        if "type" in items and items["type"] != "string":
            p.add(name, "items.type", 'must be "string"')
        return _titled_options(p, name, "items.anyOf", items["anyOf"]), True
    if "enum" in items:
        for key in items:
            if key not in ("enum", "type"):
                reason = _KNOWN_REFUSALS.get(key) if isinstance(key, str) else None
                p.add(name, f"items.{_label(key)}", reason or "not a keyword of multi-select items")
        if items.get("type") != "string":
            p.add(name, "items.type", 'must be "string"' if "type" in items else 'missing; must be "string"')
        return tuple(Option(v) for v in _enum(p, name, "items.enum", items["enum"])), False
    if items.get("type") == "object" or "properties" in items:
        p.add(name, "items", "arrays of objects are not allowed (F1)")
    elif "$ref" in items:
        p.add(name, "items.$ref", "references are not allowed (F1)")
    else:
        p.add(name, "items", "must be an enum of strings or anyOf const/title options")
    return (), False
