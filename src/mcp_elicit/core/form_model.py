"""The form model (spec F1, F2): `Field`, `Form`, `Option`, and the checks that make every field one
the spec can express. A leaf: it needs only the answer checks (`answers`, for defaults and
`Form.validate`) and the wire shape (`wire_schema`). `mcp_elicit.core.forms` is the front door.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal, TypedDict, Unpack, get_args

from mcp_elicit.core import limits
from mcp_elicit.core.answers import check_field_value, validate_content
from mcp_elicit.core.revisions import LATEST, REVISIONS
from mcp_elicit.core.sentinels import MISSING
from mcp_elicit.core.text import has_hidden_characters
from mcp_elicit.core.wire_schema import field_to_wire
from mcp_elicit.errors import FormDefinitionError, UnknownField, UnknownRevision

__all__ = ["FORMATS", "KINDS", "Field", "FieldKind", "Form", "Option", "StringFormat", "valid_name_problem"]

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


# How a select's options may be written: values, `(value, title)` pairs or `Option`s.
OptionLike = str | Option | tuple[str, str]


class _Common(TypedDict, total=False):
    """The keywords every field constructor takes."""

    required: bool
    title: str | None
    description: str | None
    default: Any


class _Text(_Common, total=False):
    format: StringFormat | None
    min_length: int | None
    max_length: int | None


class _Range(_Common, total=False):
    minimum: float | None
    maximum: float | None


class _Items(_Common, total=False):
    min_items: int | None
    max_items: int | None


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
    # Each takes the keywords of its kind (`_Text`, `_Range`, `_Items`) plus the common ones
    # (`_Common`: required, title, description, default).

    @classmethod
    def string(cls, name: str, **keywords: Unpack[_Text]) -> Field:
        return cls(name, "string", **keywords)

    @classmethod
    def number(cls, name: str, **keywords: Unpack[_Range]) -> Field:
        return cls(name, "number", **keywords)

    @classmethod
    def integer(cls, name: str, **keywords: Unpack[_Range]) -> Field:
        return cls(name, "integer", **keywords)

    @classmethod
    def boolean(cls, name: str, **keywords: Unpack[_Common]) -> Field:
        return cls(name, "boolean", **keywords)

    @classmethod
    def single_select(cls, name: str, options: Iterable[OptionLike], **keywords: Unpack[_Common]) -> Field:
        """A choice of one; `options` are values, `(value, title)` pairs or `Option`s."""
        return cls._select(name, "single_select", options, keywords)

    @classmethod
    def multi_select(cls, name: str, options: Iterable[OptionLike], **keywords: Unpack[_Items]) -> Field:
        """A choice of several; `options` as for `single_select`, `default` a list of values."""
        return cls._select(name, "multi_select", options, keywords)

    @classmethod
    def _select(cls, name: str, kind: FieldKind, options: Iterable[OptionLike], keywords: _Common) -> Field:
        opts = _options(options)
        return cls(name, kind, options=opts, titled=any(o.title is not None for o in opts), **keywords)

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING

    @property
    def option_values(self) -> tuple[str, ...]:
        return tuple(o.value for o in self.options)


def _options(options: Iterable[OptionLike]) -> tuple[Option, ...]:
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
    # Builds `target` from validated values (set by `form_of`); not part of the form's identity.
    builder: Callable[[Mapping[str, Any]], Any] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )

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
        properties = {f.name: field_to_wire(f, revision) for f in self.fields}
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = [f.name for f in self.fields if f.required]
        if required:
            schema["required"] = required
        return schema

    def validate(self, content: Any) -> dict[str, Any]:
        """Check `content` (an ElicitResult.content) against the form; see answers.validate_content."""
        return validate_content(self, content)

    def build(self, values: Mapping[str, Any]) -> Any:
        """Turn validated values into the target type (a plain dict when there is no target)."""
        if self.builder is None:
            return dict(values)
        return self.builder(values)

    def parse(self, content: Any) -> Any:
        """Validate `content`, then build the target type from it."""
        return self.build(self.validate(content))


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
    if has_hidden_characters(name):  # the client's rule too (blank look-alikes, stray joiners, Zalgo)
        return "contains hidden characters"
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
        value, problem = check_field_value(f, f.default)
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
        # An option value travels back in the answer as it is, so it cannot be cleaned for showing:
        # the client refuses a form with hidden characters in one, and so does the builder (the
        # value itself stays out of the message: it is what hides things).
        if has_hidden_characters(o.value):
            raise FormDefinitionError(f.name, "options", "a value has hidden or control characters")
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
