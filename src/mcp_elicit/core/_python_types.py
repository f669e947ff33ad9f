"""Forms from Python types (pydantic models, dataclasses, TypedDicts), and values back into them.

Import `form_of` from `mcp_elicit.core.forms`; this module is its implementation. pydantic is
never imported here: a pydantic model can only reach `form_of` if its caller imported pydantic
already, so its classes are looked up in `sys.modules` (keeps the core light and import-cheap).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints

from mcp_elicit.core._type_fields import _field, _is_typeddict, _pydantic, _qualifiers, _Slot, _Source
from mcp_elicit.core.form_model import Form
from mcp_elicit.core.sentinels import MISSING
from mcp_elicit.errors import AnswerError, FieldProblem, FormDefinitionError


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    form: Form
    slots: tuple[_Slot, ...]
    make: Callable[[dict[str, Any]], Any]


_PLANS: weakref.WeakKeyDictionary[Any, _Plan] = weakref.WeakKeyDictionary()


def form_of(tp: Any) -> Form:
    """The form of a pydantic model class, dataclass or TypedDict (a Form is returned as is).

    Cached per type. Raises FormDefinitionError(field, construct) for anything the spec cannot
    express.
    """
    if isinstance(tp, Form):
        return tp
    return _plan(tp).form


def _build(target: Any, values: Mapping[str, Any]) -> Any:
    """Values from `validate_content` as `target` (the builder `form_of` gives each form)."""
    plan = _plan(target)
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
    return _Plan(Form(tuple(fields), target=tp, builder=functools.partial(_build, tp)), tuple(slots), make)


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
