"""One attribute of a Python type (a pydantic field, a dataclass field, a TypedDict key) as a form
`Field`, and the way its answer value goes back into the type. Part of `form_of`; see
`_python_types`, which walks the type and calls `_field` for each attribute.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at

from mcp_elicit.core.annotations import Meta, Titles
from mcp_elicit.core.answers import parse_date, parse_date_time
from mcp_elicit.core.form_model import Field, FieldKind, Option
from mcp_elicit.core.sentinels import MISSING
from mcp_elicit.errors import FormDefinitionError

try:  # typing_extensions (a pydantic dependency) also knows its own TypedDict and ReadOnly
    import typing_extensions as _tx

    _is_typeddict: Callable[[Any], bool] = _tx.is_typeddict
    _READ_ONLY: tuple[Any, ...] = (_tx.ReadOnly,)
except ImportError:  # pragma: no cover - typing_extensions ships with pydantic
    _is_typeddict = typing.is_typeddict
    _READ_ONLY = ()

_NONE_TYPE = type(None)
_CONTAINERS: dict[Any, Callable[[Any], Any]] = {list: list, set: set, frozenset: frozenset}


@dataclasses.dataclass(frozen=True, slots=True)
class _Slot:
    """How one answer value reaches the target: under which key, converted how."""

    wire: str  # the field name on the wire
    key: str  # the keyword / dict key the target takes it under
    convert: Callable[[Any], Any]
    none_when_absent: bool  # Optional[X] without a default of its own: pass None explicitly


@dataclasses.dataclass(slots=True)
class _Source:
    """One attribute of the Python type, before it becomes a Field."""

    attr: str
    wire: str
    annotation: Any
    metadata: list[Any]
    default: Any = MISSING  # the Python default (already produced by a factory), or MISSING
    has_own_default: bool = False  # the target fills the value in itself when it is absent
    key_required: bool = True  # False for a NotRequired TypedDict key
    title: str | None = None
    description: str | None = None


def _qualifiers(hint: Any) -> set[Any]:
    found: set[Any] = set()
    while True:
        origin = get_origin(hint)
        if origin is Annotated:
            hint = get_args(hint)[0]
        elif origin in (typing.Required, typing.NotRequired, *_READ_ONLY):
            found.add(origin)
            hint = get_args(hint)[0]
        else:
            return found


# -- one attribute -> one Field -----------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _Collected:
    """Constraints gathered from every metadata object of one attribute."""

    title: str | None = None
    description: str | None = None
    format: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: Any = None
    maximum: Any = None
    min_items: int | None = None
    max_items: int | None = None
    default: Any = MISSING
    len_min: int | None = None  # annotated-types/pydantic length: string length or item count
    len_max: int | None = None
    titles: Titles | None = None


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    """Peel Annotated and TypedDict qualifiers off; return the bare type and the metadata found."""
    metadata: list[Any] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            metadata.extend(annotation.__metadata__)
            annotation = get_args(annotation)[0]
        elif origin in (typing.Required, typing.NotRequired, *_READ_ONLY):
            annotation = get_args(annotation)[0]
        else:
            return annotation, metadata


def _field(src: _Source) -> tuple[Field, _Slot]:
    name = src.wire
    ann, metadata = _strip(src.annotation)
    optional = False
    if get_origin(ann) in (Union, types.UnionType):
        args = get_args(ann)
        others = [a for a in args if a is not _NONE_TYPE]
        if len(others) != 1 or len(others) == len(args):
            raise FormDefinitionError(name, "union", "only X | None is allowed")
        optional = True
        ann, more = _strip(others[0])
        metadata += more
        if get_origin(ann) in (Union, types.UnionType):
            raise FormDefinitionError(name, "union", "only X | None is allowed")

    c = _Collected(title=src.title, description=src.description)
    for m in [*src.metadata, *metadata]:
        _absorb(c, m, name)

    kind, fmt, convert, options, container = _kind_of(name, ann, c)
    if c.len_min is not None or c.len_max is not None:
        if kind == "string":
            c.min_length = c.len_min if c.len_min is not None else c.min_length
            c.max_length = c.len_max if c.len_max is not None else c.max_length
        elif kind == "multi_select":
            c.min_items = c.len_min if c.len_min is not None else c.min_items
            c.max_items = c.len_max if c.len_max is not None else c.max_items
        else:
            raise FormDefinitionError(name, "min_length", f"a length constraint on a {kind} field")
    if fmt is not None:
        if c.format is not None and c.format != fmt:
            raise FormDefinitionError(name, "format", f"{c.format!r} on a {fmt} type")
        c.format = fmt

    default = src.default
    if c.default is not MISSING:
        if default is not MISSING:
            raise FormDefinitionError(name, "default", "a Meta default beside a native default")
        default = c.default
    wire_default = _wire_default(default, kind, options) if not (default is None and optional) else MISSING

    field = Field(
        name,
        kind,
        required=src.key_required and not optional and not src.has_own_default and wire_default is MISSING,
        title=c.title,
        description=c.description,
        default=wire_default,
        format=c.format,  # type: ignore[arg-type]  # checked by Field
        min_length=c.min_length,
        max_length=c.max_length,
        minimum=c.minimum,
        maximum=c.maximum,
        options=options,
        titled=bool(options) and options[0].title is not None,
        min_items=c.min_items,
        max_items=c.max_items,
    )
    if container is not None:
        item_convert = convert
        convert = lambda v: container(item_convert(x) for x in v)  # noqa: E731
    slot = _Slot(
        wire=name,
        key=src.attr,
        convert=convert,
        none_when_absent=optional and not src.has_own_default and src.key_required,
    )
    return field, slot


_META_ATTRS = (
    "title",
    "description",
    "format",
    "min_length",
    "max_length",
    "minimum",
    "maximum",
    "min_items",
    "max_items",
)


def _absorb(c: _Collected, m: Any, name: str) -> None:
    if isinstance(m, Meta):
        for attr in _META_ATTRS:
            if getattr(m, attr) is not None:
                setattr(c, attr, getattr(m, attr))
        if m.default is not MISSING:
            c.default = m.default
    elif isinstance(m, Titles):
        c.titles = m
    elif isinstance(m, at.Gt | at.Lt):
        raise FormDefinitionError(name, "exclusive bound", "gt/lt; use ge/le (minimum/maximum)")
    elif isinstance(m, at.Ge):
        c.minimum = m.ge
    elif isinstance(m, at.Le):
        c.maximum = m.le
    elif isinstance(m, at.Interval):
        if m.gt is not None or m.lt is not None:
            raise FormDefinitionError(name, "exclusive bound", "gt/lt; use ge/le (minimum/maximum)")
        c.minimum = m.ge if m.ge is not None else c.minimum
        c.maximum = m.le if m.le is not None else c.maximum
    elif isinstance(m, at.MinLen):
        c.len_min = m.min_length
    elif isinstance(m, at.MaxLen):
        c.len_max = m.max_length
    elif isinstance(m, at.Len):
        c.len_min, c.len_max = m.min_length, m.max_length
    elif isinstance(m, at.MultipleOf):
        raise FormDefinitionError(name, "multiple_of", "the spec has no multipleOf")
    elif _is_pydantic_field_info(m):
        c.title = m.title if m.title is not None else c.title
        c.description = m.description if m.description is not None else c.description
        for inner in m.metadata:
            _absorb(c, inner, name)
    elif getattr(m, "pattern", None) is not None:  # pydantic's general metadata, or similar
        raise FormDefinitionError(name, "pattern", "the spec's field schemas have no pattern")
    elif getattr(m, "max_digits", None) is not None or getattr(m, "decimal_places", None) is not None:
        raise FormDefinitionError(name, "decimal places", "the spec has no digit constraints")
    # Anything else (validators, Strict, docs) does not change the wire schema; the target's own
    # validation still runs in Form.build.


_Kind = tuple[FieldKind, str | None, Callable[[Any], Any], tuple[Option, ...], Callable[[Any], Any] | None]


def _identity(v: Any) -> Any:
    return v


def _kind_of(name: str, ann: Any, c: _Collected) -> _Kind:
    """(kind, implied format, converter, options, multi-select container) for a bare annotation."""
    origin = get_origin(ann)
    if ann is bool:
        return "boolean", None, _identity, (), None
    if _is_select_type(ann):
        options, convert = _select(name, ann, c.titles)
        return "single_select", None, convert, options, None
    if ann is int:
        return "integer", None, int, (), None
    if ann is float:
        return "number", None, float, (), None
    if ann is str:
        return "string", None, _identity, (), None
    if ann is dt.datetime:
        return "string", "date-time", parse_date_time, (), None
    if ann is dt.date:
        return "string", "date", parse_date, (), None
    if _is_pydantic(ann, "pydantic.networks", "EmailStr"):
        return "string", "email", _identity, (), None
    any_url = _pydantic("pydantic.networks", "AnyUrl")
    if any_url is not None and isinstance(ann, type) and issubclass(ann, any_url):
        return "string", "uri", ann, (), None
    if origin in _CONTAINERS:
        item, item_meta = _strip(get_args(ann)[0]) if get_args(ann) else (Any, [])
        titles = next((m for m in item_meta if isinstance(m, Titles)), c.titles)
        if not _is_select_type(item):
            raise FormDefinitionError(name, "list item type", "items must be an Enum or Literal of strings")
        options, convert = _select(name, item, titles)
        return "multi_select", None, convert, options, _CONTAINERS[origin]
    if ann in _CONTAINERS:
        raise FormDefinitionError(name, "list item type", "items must be an Enum or Literal of strings")
    if ann is tuple or origin is tuple:
        raise FormDefinitionError(name, "tuple")
    if ann is dict or origin in (dict, Mapping) or ann is Mapping:
        raise FormDefinitionError(name, "dict")
    if ann is Any:
        raise FormDefinitionError(name, "Any")
    if ann in (bytes, bytearray, memoryview):
        raise FormDefinitionError(name, "bytes")
    if _is_form_type(ann):
        raise FormDefinitionError(name, "nested model", "forms are flat (F1)")
    raise FormDefinitionError(name, "unsupported type", repr(ann))


def _is_select_type(ann: Any) -> bool:
    return (isinstance(ann, type) and issubclass(ann, enum.Enum)) or get_origin(ann) is Literal


def _select(name: str, ann: Any, titles: Titles | None) -> tuple[tuple[Option, ...], Callable[[Any], Any]]:
    if get_origin(ann) is Literal:
        values = get_args(ann)
        if any(type(v) is not str for v in values):
            raise FormDefinitionError(name, "non-string literal", "options must be strings")
        own: dict[str, str | None] = dict.fromkeys(values)
        convert: Callable[[Any], Any] = _identity
    else:
        members = list(ann)
        if any(not isinstance(m.value, str) for m in members):
            raise FormDefinitionError(name, "non-string enum", "option values must be strings")
        own = {m.value: _member_title(m) for m in members}
        convert = ann
    if titles is not None:
        unknown = set(titles.titles) - set(own)
        if unknown:
            raise FormDefinitionError(name, "option titles", f"titles for unknown options {sorted(unknown)}")
        own = {v: titles.titles.get(v) for v in own}
    given = [t for t in own.values() if t is not None]
    if given and len(given) != len(own):
        raise FormDefinitionError(name, "option titles", "every option needs a title, or none may have one")
    return tuple(Option(v, t) for v, t in own.items()), convert


def _member_title(member: enum.Enum) -> str | None:
    title = getattr(member, "title", None)
    return title if isinstance(title, str) else None  # str.title (a method) on str-Enums is no title


def _wire_default(default: Any, kind: str, options: tuple[Option, ...]) -> Any:
    """The JSON form of a Python default (the Field then checks it against the constraints)."""
    if default is MISSING:
        return MISSING
    if isinstance(default, enum.Enum):
        return default.value
    if isinstance(default, dt.datetime):
        # a naive datetime has no RFC 3339 form; leave it for Field to refuse as not a string
        return default.isoformat() if default.utcoffset() is not None else default
    if isinstance(default, dt.date):
        return default.isoformat()
    if kind == "multi_select" and isinstance(default, list | tuple | set | frozenset):
        values = [v.value if isinstance(v, enum.Enum) else v for v in default]
        if isinstance(default, set | frozenset):  # sets have no order: use the options' order
            order = {o.value: i for i, o in enumerate(options)}
            values.sort(key=lambda v: order.get(v, len(order)) if isinstance(v, str) else len(order))
        return values
    if _is_pydantic_url(default):
        return str(default)
    return default


# -- pydantic, looked up lazily ------------------------------------------------------------------


def _pydantic(module: str, name: str) -> Any:
    mod = sys.modules.get(module)
    return getattr(mod, name, None) if mod is not None else None


def _is_pydantic(ann: Any, module: str, name: str) -> bool:
    cls = _pydantic(module, name)
    return cls is not None and ann is cls


def _is_pydantic_field_info(m: Any) -> bool:
    cls = _pydantic("pydantic.fields", "FieldInfo")
    return cls is not None and isinstance(m, cls)


def _is_pydantic_url(value: Any) -> bool:
    cls = _pydantic("pydantic.networks", "AnyUrl")
    return cls is not None and isinstance(value, cls)


def _is_form_type(ann: Any) -> bool:
    base_model = _pydantic("pydantic.main", "BaseModel")
    if isinstance(ann, type) and base_model is not None and issubclass(ann, base_model):
        return True
    return (isinstance(ann, type) and dataclasses.is_dataclass(ann)) or _is_typeddict(ann)
