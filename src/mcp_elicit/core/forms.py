"""The form model: field types, building forms from Python types, the wire schema of each revision.

A `Form` is a flat tuple of `Field`s (spec F1). Each field is one of the shapes the spec defines
(F2): a string (optionally with a `format` and length bounds), a number or integer (with bounds), a
boolean, a single select or a multi select (options optionally titled). Nothing else exists here,
so a form can only ever produce a spec-valid `requestedSchema`.

Three ways in:

- `form_of(tp)` builds a form from a pydantic model, a dataclass or a TypedDict, refusing at
  definition time (`FormDefinitionError(field, construct)`) anything the spec cannot express;
- `Form(fields=(Field.string("name"), ...))` builds one by hand;
- `parse_schema(schema)` parses an incoming, untrusted `requestedSchema` and refuses any deviation
  (`SchemaError(problems)`); `schema_problems(schema)` returns the same list without raising.

And three ways out: `Form.to_wire(revision)` (the `requestedSchema`), `Form.validate(content)`
(answers, see `mcp_elicit.core.answers`), `Form.build(values)` (the caller's own type).

Stricter than the spec, on purpose:

- `pattern`, exclusive bounds, `multipleOf` and every other keyword outside F2 are refused;
- a default must satisfy its own field's constraints;
- a select has at least one option, no duplicates, and its options are either all titled or none;
- the sizes in `mcp_elicit.core.limits` apply to every form, built or parsed.

An empty form (no fields) is legal in the spec and here. `confirm` does not use one: it asks a
single boolean field, so the person's answer is an explicit value in the content (and in the
audit record) rather than an accept of nothing.

Revision 2025-06-18 can express neither multi selects nor non-boolean defaults: `to_wire` drops
those defaults (the server still applies them when it validates) and raises
`UnsupportedInRevision` for a multi select.

Constructs named by `FormDefinitionError.construct` (stable strings):

| construct | meaning |
|---|---|
| `name` | empty field name, too long, or with control/format/line-break characters |
| `kind` | not one of the six field kinds |
| `required` | not a bool |
| `title`, `description` | not a string, or longer than the limit |
| `format`, `min_length`, `max_length` | on a non-string field, or an invalid value / min > max |
| `minimum`, `maximum` | on a non-number field, not a finite number, or min > max |
| `min_items`, `max_items` | on a non-multi-select field, invalid, min > max or min > options |
| `options` | a select without options, too many, or options on a non-select field |
| `duplicate option` | two options with the same value |
| `option titles` | some options titled and some not, or titles on an untitled select |
| `titled`, `legacy_enum_names` | the flag on a field kind that cannot carry it |
| `default` | a default the field itself would refuse, two defaults, or a default factory that fails |
| `duplicate field`, `too many fields`, `fields` | form-level problems |
| `pattern` | a regular expression constraint (not in the spec's schema) |
| `exclusive bound` | `gt`/`lt` (the spec has only inclusive `minimum`/`maximum`) |
| `multiple_of`, `decimal places` | numeric constraints the spec lacks |
| `union` | a union other than `Optional[X]` |
| `nested model` | a pydantic model, dataclass or TypedDict as a field type |
| `non-string enum`, `non-string literal` | options that are not strings |
| `list item type` | a list/set of anything but an Enum or Literal of strings |
| `tuple`, `dict`, `bytes`, `Any` | container and catch-all types the spec lacks |
| `unsupported type` | any other annotation |
| `alias`, `InitVar`, `unresolvable annotation`, `not a form type` | definition problems |
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, get_args

from mcp_elicit.core import limits
from mcp_elicit.core.revisions import LATEST, REV_2025_06_18, REVISIONS
from mcp_elicit.errors import (
    FormDefinitionError,
    SchemaProblem,
    UnknownField,
    UnknownRevision,
    UnsupportedInRevision,
)

__all__ = [
    "FORMATS",
    "KINDS",
    "MISSING",
    "Field",
    "FieldKind",
    "Form",
    "Meta",
    "Option",
    "StringFormat",
    "TitledEnum",
    "Titles",
    "form_of",
    "parse_schema",
    "schema_problems",
]


class _Missing(enum.Enum):
    # An enum member is a singleton that survives copy and pickle, and `Literal[_Missing.MISSING]`
    # lets type checkers narrow `default is MISSING`.
    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
"""Sentinel for "no default" (None cannot serve: it is a meaningful Python value)."""

FieldKind = Literal["string", "number", "integer", "boolean", "single_select", "multi_select"]
StringFormat = Literal["email", "uri", "date", "date-time"]
KINDS: Final[tuple[FieldKind, ...]] = get_args(FieldKind)
FORMATS: Final[tuple[StringFormat, ...]] = get_args(StringFormat)

_SELECTS: Final = ("single_select", "multi_select")


@dataclasses.dataclass(frozen=True, slots=True)
class Option:
    """One choice of a select: the `value` sent on the wire and an optional display `title`."""

    value: str
    title: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """One form field; construct through the class methods (`Field.string(...)`) for readability.

    Every instance is checked on creation: a `Field` that exists is one the spec can express.
    """

    name: str
    kind: FieldKind
    required: bool = True
    title: str | None = None
    description: str | None = None
    default: Any = MISSING
    format: StringFormat | None = None  # string only
    min_length: int | None = None  # string only
    max_length: int | None = None
    minimum: int | float | None = None  # number/integer only
    maximum: int | float | None = None
    options: tuple[Option, ...] = ()  # selects
    titled: bool = False  # oneOf/anyOf const+title shapes
    legacy_enum_names: bool = False  # parsed from legacy `enum`+`enumNames`
    min_items: int | None = None  # multi_select only
    max_items: int | None = None

    def __post_init__(self) -> None:
        # Options and a multi-select default are stored as tuples so fields stay hashable and
        # compare equal across construction paths (JSON brings lists).
        if not isinstance(self.options, tuple) and isinstance(self.options, Iterable):
            object.__setattr__(self, "options", tuple(self.options))
        _check_field(self)

    # -- convenience constructors ------------------------------------------------------------

    @classmethod
    def string(
        cls,
        name: str,
        *,
        required: bool = True,
        title: str | None = None,
        description: str | None = None,
        default: Any = MISSING,
        format: StringFormat | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
    ) -> Field:
        return cls(
            name,
            "string",
            required=required,
            title=title,
            description=description,
            default=default,
            format=format,
            min_length=min_length,
            max_length=max_length,
        )

    @classmethod
    def number(
        cls,
        name: str,
        *,
        required: bool = True,
        title: str | None = None,
        description: str | None = None,
        default: Any = MISSING,
        minimum: int | float | None = None,
        maximum: int | float | None = None,
    ) -> Field:
        return cls(
            name,
            "number",
            required=required,
            title=title,
            description=description,
            default=default,
            minimum=minimum,
            maximum=maximum,
        )

    @classmethod
    def integer(
        cls,
        name: str,
        *,
        required: bool = True,
        title: str | None = None,
        description: str | None = None,
        default: Any = MISSING,
        minimum: int | float | None = None,
        maximum: int | float | None = None,
    ) -> Field:
        return cls(
            name,
            "integer",
            required=required,
            title=title,
            description=description,
            default=default,
            minimum=minimum,
            maximum=maximum,
        )

    @classmethod
    def boolean(
        cls,
        name: str,
        *,
        required: bool = True,
        title: str | None = None,
        description: str | None = None,
        default: Any = MISSING,
    ) -> Field:
        return cls(name, "boolean", required=required, title=title, description=description, default=default)

    @classmethod
    def single_select(
        cls,
        name: str,
        options: Iterable[str | Option | tuple[str, str]],
        *,
        required: bool = True,
        title: str | None = None,
        description: str | None = None,
        default: Any = MISSING,
    ) -> Field:
        """A choice of one; `options` are values, `(value, title)` pairs or `Option`s."""
        opts = _options(options)
        return cls(
            name,
            "single_select",
            required=required,
            title=title,
            description=description,
            default=default,
            options=opts,
            titled=any(o.title is not None for o in opts),
        )

    @classmethod
    def multi_select(
        cls,
        name: str,
        options: Iterable[str | Option | tuple[str, str]],
        *,
        required: bool = True,
        title: str | None = None,
        description: str | None = None,
        default: Any = MISSING,
        min_items: int | None = None,
        max_items: int | None = None,
    ) -> Field:
        """A choice of several; `options` as for `single_select`, `default` a list of values."""
        opts = _options(options)
        return cls(
            name,
            "multi_select",
            required=required,
            title=title,
            description=description,
            default=default,
            options=opts,
            titled=any(o.title is not None for o in opts),
            min_items=min_items,
            max_items=max_items,
        )

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING

    @property
    def option_values(self) -> tuple[str, ...]:
        return tuple(o.value for o in self.options)


def _options(options: Iterable[str | Option | tuple[str, str]]) -> tuple[Option, ...]:
    out: list[Option] = []
    for o in options:
        if isinstance(o, Option):
            out.append(o)
        elif isinstance(o, tuple) and len(o) == 2:
            out.append(Option(o[0], o[1]))
        else:
            out.append(Option(o))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Form:
    """A flat form (F1): fields in definition order, and the Python type answers become."""

    fields: tuple[Field, ...]
    target: Any = None  # pydantic model class, dataclass, TypedDict, or None (answers stay a dict)

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))
        seen: set[str] = set()
        for f in self.fields:
            if not isinstance(f, Field):
                raise FormDefinitionError("", "fields", f"not a Field: {type(f).__name__}")
            if f.name in seen:
                raise FormDefinitionError(f.name, "duplicate field")
            seen.add(f.name)
        if len(self.fields) > limits.MAX_FIELDS:
            raise FormDefinitionError("", "too many fields", f"{len(self.fields)} > {limits.MAX_FIELDS}")

    def field(self, name: str) -> Field:
        """The field called `name`; UnknownField (a KeyError) if there is none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise UnknownField(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def to_wire(self, revision: str = LATEST) -> dict[str, Any]:
        """The `requestedSchema` of this form in `revision` (deterministic, definition order)."""
        if revision not in REVISIONS:
            raise UnknownRevision(revision, REVISIONS)
        properties = {f.name: _field_to_wire(f, revision) for f in self.fields}
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = [f.name for f in self.fields if f.required]
        if required:
            schema["required"] = required
        return schema

    def validate(self, content: Any) -> dict[str, Any]:
        """Check `content` (an ElicitResult.content) against the form; see answers.validate_content."""
        from mcp_elicit.core.answers import validate_content

        return validate_content(self, content)

    def build(self, values: Mapping[str, Any]) -> Any:
        """Turn validated values into the target type (a plain dict when there is no target)."""
        from mcp_elicit.core._python_types import build

        return build(self, values)

    def parse(self, content: Any) -> Any:
        """Validate `content`, then build the target type from it."""
        return self.build(self.validate(content))


# -- annotations for building forms from Python types --------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Meta:
    """Field metadata for `Annotated[...]`, understood in pydantic models, dataclasses and TypedDicts.

    `Annotated[str, Meta(title="E-mail", format="email", max_length=200)]`. Every keyword maps to
    the spec keyword of the same meaning; `default` gives TypedDict keys a default (and may replace
    a native default elsewhere, but not sit beside one).
    """

    title: str | None = None
    description: str | None = None
    format: StringFormat | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_items: int | None = None
    max_items: int | None = None
    default: Any = MISSING


class Titles:
    """Option titles for a select: `Annotated[Literal["s", "m"], Titles(s="Small", m="Medium")]`.

    Keys are option values (or Enum members); a mapping can be passed positionally for values that
    are not identifiers. Every option must get a title.
    """

    __slots__ = ("titles",)

    def __init__(self, mapping: Mapping[Any, str] | None = None, /, **titles: str) -> None:
        merged: dict[str, str] = {}
        for key, title in [*(mapping or {}).items(), *titles.items()]:
            value = key.value if isinstance(key, enum.Enum) else key
            merged[str(value)] = title
        self.titles: Mapping[str, str] = merged

    def __repr__(self) -> str:
        return f"Titles({self.titles!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Titles) and dict(self.titles) == dict(other.titles)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.titles.items())))


class TitledEnum(enum.Enum):
    """An Enum whose members carry a display title: `PRO = "pro", "Pro plan ($10/month)"`.

    The value is the wire value; `title` is shown to the person. Members given only a value have
    no title (then none of the members may have one).
    """

    _value_: str
    title: str | None

    def __new__(cls, value: str, title: str | None = None) -> TitledEnum:
        member = object.__new__(cls)
        member._value_ = value
        member.title = title
        return member


# -- entry points implemented in sibling modules -------------------------------------------------


def form_of(tp: Any) -> Form:
    """The form of a pydantic model class, dataclass or TypedDict (a Form is returned as is).

    Cached per type. Raises FormDefinitionError(field, construct) for anything the spec cannot
    express.
    """
    from mcp_elicit.core._python_types import form_of as impl

    return impl(tp)


def parse_schema(schema: Any, *, revision: str = LATEST) -> Form:
    """Parse an untrusted `requestedSchema`; raises SchemaError listing every deviation, nothing else."""
    from mcp_elicit.core._schema_parser import parse_schema as impl

    return impl(schema, revision=revision)


def schema_problems(schema: Any, *, revision: str = LATEST) -> tuple[SchemaProblem, ...]:
    """Every deviation of `schema` from the spec as SchemaProblem values (empty when it is valid)."""
    from mcp_elicit.core._schema_parser import schema_problems as impl

    return impl(schema, revision=revision)


# -- checks on a Field ---------------------------------------------------------------------------


def valid_name_problem(name: object) -> str | None:
    """Why `name` cannot be a field name, or None. Shared with the schema parser."""
    if not isinstance(name, str):
        return "not a string"
    if not name:
        return "empty"
    if len(name) > limits.MAX_FIELD_NAME_CHARS:
        return f"longer than {limits.MAX_FIELD_NAME_CHARS} characters"
    # Control and format characters (bidi overrides, zero-width joiners) and line breaks have no
    # place in an identifier and are the raw material of spoofing when a name is shown to a person.
    if any(unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp") for ch in name):
        return "contains control, format or line-break characters"
    return None


def is_finite_number(value: object) -> bool:
    """A JSON number usable as a bound: int or finite float within a double's range, never bool."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= sys.float_info.max  # beyond a double no peer can read it (nor print it)
    return isinstance(value, float) and math.isfinite(value)


def _is_count(value: object, upper: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= upper


def _check_field(f: Field) -> None:
    name = f.name
    why = valid_name_problem(name)
    if why:
        raise FormDefinitionError(str(name), "name", why)

    def fail(construct: str, detail: str = "") -> None:
        raise FormDefinitionError(name, construct, detail)

    if f.kind not in KINDS:
        fail("kind", f"{f.kind!r} is not one of {KINDS}")
    if not isinstance(f.required, bool):
        fail("required", "not a bool")
    for attr, limit in (("title", limits.MAX_TITLE_CHARS), ("description", limits.MAX_DESCRIPTION_CHARS)):
        text = getattr(f, attr)
        if text is not None and (not isinstance(text, str) or len(text) > limit):
            fail(attr, f"must be a string of at most {limit} characters")

    is_string, is_number = f.kind == "string", f.kind in ("number", "integer")
    is_select, is_multi = f.kind in _SELECTS, f.kind == "multi_select"
    for attr, allowed in (
        ("format", is_string),
        ("min_length", is_string),
        ("max_length", is_string),
        ("minimum", is_number),
        ("maximum", is_number),
        ("min_items", is_multi),
        ("max_items", is_multi),
    ):
        if getattr(f, attr) is not None and not allowed:
            fail(attr, f"not allowed on a {f.kind} field")
    if f.options and not is_select:
        fail("options", f"not allowed on a {f.kind} field")
    if f.titled is not False and not is_select:
        fail("titled", f"not allowed on a {f.kind} field")
    if f.legacy_enum_names is not False and not (f.kind == "single_select" and f.titled is True):
        fail("legacy_enum_names", "only for a titled single select")

    if f.format is not None and f.format not in FORMATS:
        fail("format", f"{f.format!r} is not one of {FORMATS}")
    _check_range(f, "min_length", "max_length", lambda v: _is_count(v, limits.MAX_STRING_LENGTH))
    _check_range(f, "minimum", "maximum", is_finite_number)
    if is_select:
        _check_options(f)
        _check_range(f, "min_items", "max_items", lambda v: _is_count(v, limits.MAX_OPTIONS))
        if f.min_items is not None and f.min_items > len(f.options):
            fail("min_items", f"{f.min_items} exceeds the {len(f.options)} options")
    if f.default is not MISSING:
        from mcp_elicit.core.answers import _check

        value, problem = _check(f, f.default)
        if problem is not None:
            fail("default", f"{problem.code}: {problem.detail}")
        # Store the JSON form (3.0 -> 3 for an integer, a str-Enum member -> its string).
        object.__setattr__(f, "default", tuple(value) if f.kind == "multi_select" else value)


def _check_range(f: Field, low: str, high: str, ok: Any) -> None:
    lo, hi = getattr(f, low), getattr(f, high)
    for attr, v in ((low, lo), (high, hi)):
        if v is not None and not ok(v):
            raise FormDefinitionError(f.name, attr, f"invalid value {_brief(v)}")
    if lo is not None and hi is not None and lo > hi:
        raise FormDefinitionError(f.name, low, f"{low} {_brief(lo)} is greater than {high} {_brief(hi)}")


def _brief(v: object) -> str:
    # repr() of an int past Python's digit limit raises ValueError; never let a message do that
    if isinstance(v, int) and v.bit_length() > 1024:
        return "<a very large integer>"
    return repr(v)


def _check_options(f: Field) -> None:
    if not isinstance(f.options, tuple) or not f.options:
        raise FormDefinitionError(f.name, "options", "a select needs at least one option")
    if len(f.options) > limits.MAX_OPTIONS:
        raise FormDefinitionError(f.name, "options", f"{len(f.options)} > {limits.MAX_OPTIONS} options")
    if not isinstance(f.titled, bool):
        raise FormDefinitionError(f.name, "titled", "not a bool")
    seen: set[str] = set()
    for o in f.options:
        if not isinstance(o, Option) or not isinstance(o.value, str):
            raise FormDefinitionError(f.name, "options", f"not an Option with a string value: {o!r}")
        if len(o.value) > limits.MAX_OPTION_CHARS:
            raise FormDefinitionError(f.name, "options", f"value longer than {limits.MAX_OPTION_CHARS}")
        if o.value in seen:
            raise FormDefinitionError(f.name, "duplicate option", o.value)
        seen.add(o.value)
        if f.titled and not isinstance(o.title, str):
            raise FormDefinitionError(f.name, "option titles", f"option {o.value!r} has no title")
        if not f.titled and o.title is not None:
            raise FormDefinitionError(f.name, "option titles", "titles on an untitled select")
        if o.title is not None and len(o.title) > limits.MAX_TITLE_CHARS:
            raise FormDefinitionError(f.name, "option titles", f"title longer than {limits.MAX_TITLE_CHARS}")


# -- rendering ---------------------------------------------------------------------------------


def _field_to_wire(f: Field, revision: str) -> dict[str, Any]:
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
