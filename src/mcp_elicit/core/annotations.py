"""Annotations for building forms from Python types: `Meta` (field metadata), `Titles` (option
titles for a select) and `TitledEnum` (an Enum whose members carry a title)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from mcp_elicit.core.form_model import StringFormat
from mcp_elicit.core.sentinels import MISSING

__all__ = ["Meta", "TitledEnum", "Titles"]


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
