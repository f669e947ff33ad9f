"""Forms from Python types (pydantic models, dataclasses, TypedDicts), and values back into them.

Import `form_of` from `mcp_elicit.core.forms`; this module is its implementation. pydantic is
never imported here: a pydantic model can only reach `form_of` if its caller imported pydantic
already, so its classes are looked up in `sys.modules` (keeps the core light and import-cheap).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import sys
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import annotated_types as at

from mcp_elicit.core.answers import parse_date, parse_date_time
from mcp_elicit.core.forms import MISSING, Field, FieldKind, Form, Meta, Option, Titles
from mcp_elicit.errors import AnswerError, FieldProblem, FormDefinitionError

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


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    form: Form
    slots: tuple[_Slot, ...]
    make: Callable[[dict[str, Any]], Any]


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


_PLANS: weakref.WeakKeyDictionary[Any, _Plan] = weakref.WeakKeyDictionary()


def form_of(tp: Any) -> Form:
    if isinstance(tp, Form):
        return tp
    return _plan(tp).form


def build(form: Form, values: Mapping[str, Any]) -> Any:
    """Values from `validate_content` as the form's target type (a dict when there is none)."""
    if form.target is None:
        return dict(values)
    plan = _plan(form.target)
    data: dict[str, Any] = {}
    try:
        for slot in plan.slots:
            if slot.wire in values:
                data[slot.key] = slot.convert(values[slot.wire])
            elif slot.none_when_absent:
                data[slot.key] = None
        return plan.make(data)
    except ValueError as exc:  # the target's own validation (pydantic ValidationError is one)
        raise AnswerError(_invalid(exc)) from exc


def _invalid(exc: ValueError) -> tuple[FieldProblem, ...]:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic.ValidationError
        problems = []
        for err in errors():
            loc = err.get("loc") or ("",)
            problems.append(FieldProblem(str(loc[0]), "invalid", str(err.get("msg", ""))))
        if problems:
            return tuple(problems)
    return (FieldProblem("", "invalid", str(exc)),)


def _plan(tp: Any) -> _Plan:
    try:
        cached = _PLANS.get(tp)
    except TypeError:  # not weak-referenceable: build every time
        cached = None
    if cached is not None:
        return cached
    plan = _make_plan(tp)
    with contextlib.suppress(TypeError):  # not weak-referenceable: no cache
        _PLANS[tp] = plan
    return plan


def _make_plan(tp: Any) -> _Plan:
    base_model = _pydantic("pydantic.main", "BaseModel")
    if isinstance(tp, type) and base_model is not None and issubclass(tp, base_model):
        if getattr(tp, "__pydantic_root_model__", False):
            raise FormDefinitionError("", "not a form type", "a RootModel has no fields")
        sources = _pydantic_sources(tp)
        make: Callable[[dict[str, Any]], Any] = tp.model_validate  # type: ignore[attr-defined]
    elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
        sources = _dataclass_sources(tp)
        make = lambda data: tp(**data)  # noqa: E731
    elif _is_typeddict(tp):
        sources = _typeddict_sources(tp)
        make = dict
    else:
        raise FormDefinitionError(
            "", "not a form type", f"{tp!r} is not a pydantic model, dataclass or TypedDict"
        )
    fields, slots = [], []
    for src in sources:
        f, slot = _field(src)
        fields.append(f)
        slots.append(slot)
    return _Plan(Form(tuple(fields), target=tp), tuple(slots), make)


# -- the three kinds of container ---------------------------------------------------------------


def _hints(tp: Any) -> dict[str, Any]:
    try:
        return get_type_hints(tp, include_extras=True)
    except Exception as exc:  # NameError, or anything a broken forward reference raises
        raise FormDefinitionError("", "unresolvable annotation", str(exc)) from exc


def _pydantic_sources(tp: Any) -> list[_Source]:
    sources = []
    for attr, info in tp.model_fields.items():
        alias = info.alias if isinstance(info.alias, str) else None
        if info.validation_alias is not None and info.validation_alias != alias:
            raise FormDefinitionError(attr, "alias", "validation_alias other than the alias")
        sources.append(
            _Source(
                attr=alias or attr,  # model_validate takes the alias
                wire=alias or attr,
                annotation=info.annotation,
                metadata=list(info.metadata),
                default=_field_info_default(attr, info),
                has_own_default=not info.is_required(),
                title=info.title,
                description=info.description,
            )
        )
    return sources


def _field_info_default(name: str, info: Any) -> Any:
    """The default of a pydantic FieldInfo (calling its factory), or MISSING."""
    if info.is_required():
        return MISSING
    try:
        default = info.get_default(call_default_factory=True, validated_data={})
    except Exception as exc:  # a factory that needs other fields' values
        raise FormDefinitionError(name, "default", f"default factory failed: {exc}") from exc
    return MISSING if default is _pydantic("pydantic_core", "PydanticUndefined") else default


def _dataclass_sources(tp: Any) -> list[_Source]:
    hints = _hints(tp)
    for name, hint in hints.items():
        if isinstance(hint, dataclasses.InitVar):
            raise FormDefinitionError(name, "InitVar", "an init-only value cannot be asked for")
    sources = []
    for fld in dataclasses.fields(tp):
        if not fld.init:
            continue
        src = _Source(attr=fld.name, wire=fld.name, annotation=hints[fld.name], metadata=[])
        default: Any = MISSING
        if fld.default is not dataclasses.MISSING:
            default = fld.default
        elif fld.default_factory is not dataclasses.MISSING:
            try:
                default = fld.default_factory()
            except Exception as exc:
                raise FormDefinitionError(fld.name, "default", f"default factory failed: {exc}") from exc
        field_info = _pydantic("pydantic.fields", "FieldInfo")
        if field_info is not None and isinstance(default, field_info):
            # a pydantic dataclass written as `x: int = Field(ge=1)`: constraints and the real default
            src.metadata.append(default)
            default = _field_info_default(fld.name, default)
        src.default = default
        src.has_own_default = default is not MISSING
        sources.append(src)
    return sources


def _typeddict_sources(tp: Any) -> list[_Source]:
    hints = _hints(tp)
    required_keys = getattr(tp, "__required_keys__", frozenset(hints))
    sources = []
    for key, hint in hints.items():
        qualifiers = _qualifiers(hint)
        if typing.NotRequired in qualifiers:
            key_required = False
        elif typing.Required in qualifiers:
            key_required = True
        else:
            key_required = key in required_keys
        sources.append(_Source(attr=key, wire=key, annotation=hint, metadata=[], key_required=key_required))
    return sources


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
