"""Forms from Python types (form_of), by hand (Field), to the wire (to_wire) and back (build).

Rules proved here: F1 (flat forms), F2 (field shapes per revision), and this project's stricter
rules (refuse what the spec cannot express, at definition time).
"""

# No `from __future__ import annotations`: several tests define types inside the test body, and
# get_type_hints can only resolve those when the annotations are real objects.

import dataclasses
import datetime as dt
import decimal
import enum
import typing
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import annotated_types as at
import pydantic
import pytest
import typing_extensions

from mcp_elicit.core import limits
from mcp_elicit.core.forms import (
    MISSING,
    Field,
    Form,
    Meta,
    Option,
    TitledEnum,
    Titles,
    form_of,
)
from mcp_elicit.core.revisions import REV_2025_06_18, REV_2025_11_25, REV_2026_07_28
from mcp_elicit.errors import AnswerError, FormDefinitionError, UnsupportedInRevision

MODERN = (REV_2025_11_25, REV_2026_07_28)


class Color(str, enum.Enum):  # noqa: UP042 (the str mixin has a `title` method that is no title)
    RED = "red"
    GREEN = "green"


class Size(enum.StrEnum):
    S = "s"
    M = "m"


class Shape(enum.Enum):  # no str mixin: values are still strings
    ROUND = "round"
    SQUARE = "square"


class Plan(TitledEnum):
    FREE = "free", "Free"
    PRO = "pro", "Pro ($10/month)"


class Half(TitledEnum):
    A = "a", "Titled"
    B = "b"


class Number(enum.IntEnum):
    ONE = 1


class Mixed(enum.Enum):
    A = "a"
    B = 2


class Empty(enum.Enum):
    pass


# -- one attribute in each of the three container kinds -----------------------------------------

CONTAINERS = ("pydantic", "dataclass", "typeddict")


def container(kind: str, annotation: Any, default: Any = MISSING) -> Any:
    """A one-field pydantic model / dataclass / TypedDict with attribute `x` (TypedDict defaults via Meta)."""
    if kind == "pydantic":
        spec = (annotation, ...) if default is MISSING else (annotation, default)
        return pydantic.create_model("P", x=spec)
    if kind == "dataclass":
        if default is MISSING:
            fld = dataclasses.field()
        elif isinstance(default, list | set):
            fld = dataclasses.field(default_factory=lambda: type(default)(default))
        else:
            fld = dataclasses.field(default=default)
        return dataclasses.make_dataclass("D", [("x", annotation, fld)])
    if default is not MISSING:
        annotation = Annotated[annotation, Meta(default=default)]
    return TypedDict("T", {"x": annotation})  # type: ignore[operator]


def wire_of(tp: Any, revision: str = REV_2026_07_28) -> dict[str, Any]:
    return form_of(tp).to_wire(revision)


MAPPINGS = [
    # (id, annotation, default, expected property, expected required)
    ("str", str, MISSING, {"type": "string"}, True),
    ("int", int, MISSING, {"type": "integer"}, True),
    ("float", float, MISSING, {"type": "number"}, True),
    ("bool", bool, MISSING, {"type": "boolean"}, True),
    ("date", dt.date, MISSING, {"type": "string", "format": "date"}, True),
    ("datetime", dt.datetime, MISSING, {"type": "string", "format": "date-time"}, True),
    (
        "meta email",
        Annotated[str, Meta(format="email")],
        MISSING,
        {"type": "string", "format": "email"},
        True,
    ),
    (
        "meta uri with title and description",
        Annotated[str, Meta(format="uri", title="Site", description="Your home page")],
        MISSING,
        {"type": "string", "title": "Site", "description": "Your home page", "format": "uri"},
        True,
    ),
    (
        "meta lengths",
        Annotated[str, Meta(min_length=2, max_length=5)],
        MISSING,
        {"type": "string", "minLength": 2, "maxLength": 5},
        True,
    ),
    (
        "annotated-types lengths",
        Annotated[str, at.MinLen(2), at.MaxLen(5)],
        MISSING,
        {"type": "string", "minLength": 2, "maxLength": 5},
        True,
    ),
    (
        "meta bounds",
        Annotated[int, Meta(minimum=1, maximum=5)],
        MISSING,
        {"type": "integer", "minimum": 1, "maximum": 5},
        True,
    ),
    (
        "annotated-types ge le",
        Annotated[int, at.Ge(1), at.Le(5)],
        MISSING,
        {"type": "integer", "minimum": 1, "maximum": 5},
        True,
    ),
    (
        "annotated-types interval",
        Annotated[float, at.Interval(ge=0, le=1.5)],
        MISSING,
        {"type": "number", "minimum": 0, "maximum": 1.5},
        True,
    ),
    ("str enum", Color, MISSING, {"type": "string", "enum": ["red", "green"]}, True),
    ("StrEnum", Size, MISSING, {"type": "string", "enum": ["s", "m"]}, True),
    ("plain enum of strings", Shape, MISSING, {"type": "string", "enum": ["round", "square"]}, True),
    (
        "titled enum",
        Plan,
        MISSING,
        {
            "type": "string",
            "oneOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro ($10/month)"}],
        },
        True,
    ),
    ("literal", Literal["a", "b"], MISSING, {"type": "string", "enum": ["a", "b"]}, True),
    (
        "literal with titles",
        Annotated[Literal["s", "m"], Titles(s="Small", m="Medium")],
        MISSING,
        {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"}]},
        True,
    ),
    (
        "enum with titles keyed by member",
        Annotated[Color, Titles({Color.RED: "Red", Color.GREEN: "Green"})],
        MISSING,
        {"type": "string", "oneOf": [{"const": "red", "title": "Red"}, {"const": "green", "title": "Green"}]},
        True,
    ),
    (
        "list of enum",
        list[Color],
        MISSING,
        {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}},
        True,
    ),
    (
        "set of titled enum",
        set[Plan],
        MISSING,
        {
            "type": "array",
            "items": {
                "anyOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro ($10/month)"}]
            },
        },
        True,
    ),
    (
        "frozenset of literal",
        frozenset[Literal["a", "b"]],
        MISSING,
        {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        True,
    ),
    (
        "list with meta item counts",
        Annotated[list[Color], Meta(min_items=1, max_items=2)],
        MISSING,
        {
            "type": "array",
            "items": {"type": "string", "enum": ["red", "green"]},
            "minItems": 1,
            "maxItems": 2,
        },
        True,
    ),
    (
        "list with annotated-types length means items",
        Annotated[list[Color], at.MinLen(1)],
        MISSING,
        {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}, "minItems": 1},
        True,
    ),
    (
        "list of titled literal items",
        list[Annotated[Literal["a", "b"], Titles(a="A", b="B")]],
        MISSING,
        {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}},
        True,
    ),
    ("optional str", Optional[str], MISSING, {"type": "string"}, False),  # noqa: UP045 (both spellings)
    ("str or none", str | None, MISSING, {"type": "string"}, False),
    (
        "optional annotated",
        Annotated[int, Meta(minimum=0)] | None,
        MISSING,
        {"type": "integer", "minimum": 0},
        False,
    ),
    ("str default", str, "x", {"type": "string", "default": "x"}, False),
    ("int default", int, 3, {"type": "integer", "default": 3}, False),
    ("float default", float, 0.5, {"type": "number", "default": 0.5}, False),
    ("bool default", bool, True, {"type": "boolean", "default": True}, False),
    (
        "enum default",
        Color,
        Color.GREEN,
        {"type": "string", "enum": ["red", "green"], "default": "green"},
        False,
    ),
    (
        "literal default",
        Literal["a", "b"],
        "b",
        {"type": "string", "enum": ["a", "b"], "default": "b"},
        False,
    ),
    (
        "date default",
        dt.date,
        dt.date(2020, 1, 2),
        {"type": "string", "format": "date", "default": "2020-01-02"},
        False,
    ),
    (
        "aware datetime default",
        dt.datetime,
        dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        {"type": "string", "format": "date-time", "default": "2020-01-02T03:04:05+00:00"},
        False,
    ),
    (
        "list default",
        list[Color],
        [Color.GREEN],
        {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}, "default": ["green"]},
        False,
    ),
    (
        "set default in option order",
        set[Color],
        {Color.GREEN, Color.RED},
        {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}, "default": ["red", "green"]},
        False,
    ),
    ("optional with None default", int | None, None, {"type": "integer"}, False),
    ("optional with a default", int | None, 5, {"type": "integer", "default": 5}, False),
]


@pytest.mark.parametrize("kind", CONTAINERS)
@pytest.mark.parametrize(
    ("annotation", "default", "expected", "required"), [m[1:] for m in MAPPINGS], ids=[m[0] for m in MAPPINGS]
)
def test_a_python_type_maps_to_its_spec_field_shape(
    kind: str, annotation: Any, default: Any, expected: dict[str, Any], required: bool
) -> None:
    """F2: every supported annotation becomes exactly one spec shape, in each container kind."""
    wire = wire_of(container(kind, annotation, default))
    assert wire["properties"] == {"x": expected}
    assert wire.get("required", []) == (["x"] if required else [])


# -- pydantic-native spellings --------------------------------------------------------------------


class Account(pydantic.BaseModel):
    name: str = pydantic.Field(min_length=1, max_length=40, title="Name", description="As on your card")
    email: pydantic.EmailStr
    site: pydantic.AnyUrl | None = None
    home: pydantic.HttpUrl | None = None
    age: int = pydantic.Field(default=30, ge=0, le=150)
    tags: list[Color] = pydantic.Field(default_factory=list, max_length=2)
    nick: str = pydantic.Field(default="n", alias="nickName")


def test_pydantic_field_constraints_map_to_spec_keywords() -> None:
    props = wire_of(Account)["properties"]
    assert props["name"] == {
        "type": "string",
        "title": "Name",
        "description": "As on your card",
        "minLength": 1,
        "maxLength": 40,
    }
    assert props["email"] == {"type": "string", "format": "email"}
    assert props["site"] == {"type": "string", "format": "uri"}
    assert props["home"] == {"type": "string", "format": "uri"}
    assert props["age"] == {"type": "integer", "minimum": 0, "maximum": 150, "default": 30}
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["red", "green"]},
        "maxItems": 2,
        "default": [],
    }


def test_a_pydantic_alias_is_the_wire_name() -> None:
    form = form_of(Account)
    assert "nickName" in form.names
    assert "nick" not in form.names
    built = form.parse({"name": "A", "email": "a@example.com", "nickName": "zed"})
    assert built.nick == "zed"


def test_pydantic_description_from_field_and_title_from_annotated_meta() -> None:
    class M(pydantic.BaseModel):
        a: Annotated[str, Meta(title="A title")] = pydantic.Field(description="A description")

    assert wire_of(M)["properties"]["a"] == {
        "type": "string",
        "title": "A title",
        "description": "A description",
    }


def test_a_pydantic_field_inside_annotated_works_in_a_dataclass() -> None:
    @dataclasses.dataclass
    class D:
        a: Annotated[str, pydantic.Field(max_length=3, title="T")]

    assert wire_of(D)["properties"]["a"] == {"type": "string", "title": "T", "maxLength": 3}


def test_a_pydantic_dataclass_takes_field_defaults() -> None:
    @pydantic.dataclasses.dataclass
    class D:
        a: int = pydantic.Field(default=2, ge=1)

    assert wire_of(D)["properties"]["a"] == {"type": "integer", "minimum": 1, "default": 2}
    assert form_of(D).parse({}).a == 2


# -- refusals -------------------------------------------------------------------------------------


@dataclasses.dataclass
class Inner:
    a: str


class InnerModel(pydantic.BaseModel):
    a: str


class InnerDict(typing_extensions.TypedDict):  # pydantic needs this spelling on Python 3.11
    a: str


REFUSALS = [
    # (id, annotation, default, construct)
    ("nested dataclass", Inner, MISSING, "nested model"),
    ("nested pydantic model", InnerModel, MISSING, "nested model"),
    ("nested typeddict", InnerDict, MISSING, "nested model"),
    ("union of two types", int | str, MISSING, "union"),
    ("optional union of two types", int | str | None, MISSING, "union"),
    ("integer enum", Number, MISSING, "non-string enum"),
    ("enum with a non-string value", Mixed, MISSING, "non-string enum"),
    ("integer literal", Literal[1, 2], MISSING, "non-string literal"),
    ("mixed literal", Literal["a", 1], MISSING, "non-string literal"),
    ("enum member literal", Literal[Color.RED], MISSING, "non-string literal"),
    ("list of str", list[str], MISSING, "list item type"),
    ("list of int", list[int], MISSING, "list item type"),
    ("bare list", list, MISSING, "list item type"),
    ("list of optional enum", list[Color | None], MISSING, "list item type"),
    ("dict", dict[str, str], MISSING, "dict"),
    ("mapping", typing.Mapping[str, str], MISSING, "dict"),
    ("Any", Any, MISSING, "Any"),
    ("tuple", tuple[str, ...], MISSING, "tuple"),
    ("bytes", bytes, MISSING, "bytes"),
    ("decimal", decimal.Decimal, MISSING, "unsupported type"),
    ("complex", complex, MISSING, "unsupported type"),
    ("None", type(None), MISSING, "unsupported type"),
    ("exclusive lower bound", Annotated[int, at.Gt(0)], MISSING, "exclusive bound"),
    ("exclusive upper bound", Annotated[float, at.Lt(1)], MISSING, "exclusive bound"),
    ("exclusive interval", Annotated[float, at.Interval(gt=0)], MISSING, "exclusive bound"),
    ("multiple of", Annotated[int, at.MultipleOf(2)], MISSING, "multiple_of"),
    ("pattern", Annotated[str, pydantic.Field(pattern="^a")], MISSING, "pattern"),
    ("digits", Annotated[float, pydantic.Field(max_digits=3)], MISSING, "decimal places"),
    ("length on an int", Annotated[int, at.MinLen(1)], MISSING, "min_length"),
    ("meta min_length on an int", Annotated[int, Meta(min_length=1)], MISSING, "min_length"),
    ("meta min_length on a list", Annotated[list[Color], Meta(min_length=1)], MISSING, "min_length"),
    ("meta minimum on a str", Annotated[str, Meta(minimum=1)], MISSING, "minimum"),
    ("meta format on an int", Annotated[int, Meta(format="email")], MISSING, "format"),
    ("conflicting format", Annotated[dt.datetime, Meta(format="date")], MISSING, "format"),
    ("unknown format", Annotated[str, Meta(format="hostname")], MISSING, "format"),  # type: ignore[arg-type]
    ("meta min_items on a str", Annotated[str, Meta(min_items=1)], MISSING, "min_items"),
    ("more min_items than options", Annotated[list[Color], Meta(min_items=3)], MISSING, "min_items"),
    ("min length above max length", Annotated[str, Meta(min_length=5, max_length=2)], MISSING, "min_length"),
    ("minimum above maximum", Annotated[int, Meta(minimum=5, maximum=2)], MISSING, "minimum"),
    ("negative length", Annotated[str, Meta(max_length=-1)], MISSING, "max_length"),
    ("absurd length", Annotated[str, Meta(max_length=limits.MAX_STRING_LENGTH + 1)], MISSING, "max_length"),
    ("partial option titles", Annotated[Literal["a", "b"], Titles(a="A")], MISSING, "option titles"),
    ("titles for unknown options", Annotated[Literal["a"], Titles(a="A", z="Z")], MISSING, "option titles"),
    ("partially titled enum", Half, MISSING, "option titles"),
    ("empty enum", Empty, MISSING, "options"),
    ("too many options", Literal[tuple(f"o{i}" for i in range(limits.MAX_OPTIONS + 1))], MISSING, "options"),
    ("too long title", Annotated[str, Meta(title="t" * (limits.MAX_TITLE_CHARS + 1))], MISSING, "title"),
    (
        "too long description",
        Annotated[str, Meta(description="d" * (limits.MAX_DESCRIPTION_CHARS + 1))],
        MISSING,
        "description",
    ),
    ("default longer than max length", Annotated[str, Meta(max_length=2)], "abc", "default"),
    ("default below minimum", Annotated[int, Meta(minimum=5)], 1, "default"),
    ("default not an option", Color, "purple", "default"),
    ("default of the wrong type", int, "3", "default"),
    ("bool default for an int", int, True, "default"),
    ("None default on a required type", str, None, "default"),
    ("naive datetime default", dt.datetime, dt.datetime(2020, 1, 1), "default"),
    ("email default that is no email", Annotated[str, Meta(format="email")], "nope", "default"),
    ("list default with an unknown item", list[Color], ["blue"], "default"),
    ("list default with too few items", Annotated[list[Color], Meta(min_items=1)], [], "default"),
]


@pytest.mark.parametrize("kind", CONTAINERS)
@pytest.mark.parametrize(
    ("annotation", "default", "construct"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_what_the_spec_cannot_express_is_refused_at_definition_time(
    kind: str, annotation: Any, default: Any, construct: str
) -> None:
    with pytest.raises(FormDefinitionError) as caught:
        form_of(container(kind, annotation, default))
    assert caught.value.field == "x"
    assert caught.value.construct == construct


def test_pydantic_gt_and_multiple_of_are_refused() -> None:
    class Gt(pydantic.BaseModel):
        a: int = pydantic.Field(gt=0)

    class Mul(pydantic.BaseModel):
        a: int = pydantic.Field(multiple_of=2)

    class Pat(pydantic.BaseModel):
        a: str = pydantic.Field(pattern="^x")

    for model, construct in ((Gt, "exclusive bound"), (Mul, "multiple_of"), (Pat, "pattern")):
        with pytest.raises(FormDefinitionError) as caught:
            form_of(model)
        assert (caught.value.field, caught.value.construct) == ("a", construct)


def test_a_meta_default_beside_a_native_default_is_refused() -> None:
    @dataclasses.dataclass
    class D:
        a: Annotated[int, Meta(default=1)] = 2

    with pytest.raises(FormDefinitionError) as caught:
        form_of(D)
    assert (caught.value.field, caught.value.construct) == ("a", "default")


def test_a_default_factory_that_fails_is_refused() -> None:
    def boom() -> list[Color]:
        raise RuntimeError("no")

    @dataclasses.dataclass
    class D:
        a: list[Color] = dataclasses.field(default_factory=boom)

    with pytest.raises(FormDefinitionError) as caught:
        form_of(D)
    assert (caught.value.field, caught.value.construct) == ("a", "default")


def test_a_validation_alias_other_than_the_alias_is_refused() -> None:
    class M(pydantic.BaseModel):
        a: str = pydantic.Field(validation_alias="b")

    with pytest.raises(FormDefinitionError) as caught:
        form_of(M)
    assert (caught.value.field, caught.value.construct) == ("a", "alias")


def test_an_alias_longer_than_the_name_limit_is_refused() -> None:
    long = "n" * (limits.MAX_FIELD_NAME_CHARS + 1)
    model = pydantic.create_model("M", a=(str, pydantic.Field(alias=long)))
    with pytest.raises(FormDefinitionError) as caught:
        form_of(model)
    assert caught.value.construct == "name"


def test_an_init_var_is_refused() -> None:
    @dataclasses.dataclass
    class D:
        a: dataclasses.InitVar[int]

    with pytest.raises(FormDefinitionError) as caught:
        form_of(D)
    assert (caught.value.field, caught.value.construct) == ("a", "InitVar")


def test_an_unresolvable_annotation_is_refused() -> None:
    @dataclasses.dataclass
    class D:
        a: "NoSuchType"  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(FormDefinitionError) as caught:
        form_of(D)
    assert (caught.value.field, caught.value.construct) == ("", "unresolvable annotation")


def test_more_fields_than_the_limit_are_refused() -> None:
    many = dataclasses.make_dataclass("Many", [(f"f{i}", str) for i in range(limits.MAX_FIELDS + 1)])
    with pytest.raises(FormDefinitionError) as caught:
        form_of(many)
    assert (caught.value.field, caught.value.construct) == ("", "too many fields")


@pytest.mark.parametrize("thing", [int, list[int], "a string", 3, None, pydantic.RootModel[int]])
def test_something_that_is_no_model_dataclass_or_typeddict_is_not_a_form_type(thing: Any) -> None:
    with pytest.raises(FormDefinitionError) as caught:
        form_of(thing)
    assert (caught.value.field, caught.value.construct) == ("", "not a form type")


def test_a_form_definition_error_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        form_of(container("dataclass", dict[str, str]))


# -- TypedDict specifics, Optional and requiredness ------------------------------------------------


class Profile(TypedDict, total=False):
    nickname: str
    age: typing.Required[int]


class Signup(TypedDict):
    email: Annotated[str, Meta(format="email")]
    newsletter: NotRequired[bool]
    referrer: NotRequired[Annotated[str, Meta(default="none", title="Referrer")]]
    note: str | None


def test_typeddict_totality_and_not_required_decide_requiredness() -> None:
    assert wire_of(Profile)["required"] == ["age"]
    assert wire_of(Signup)["required"] == ["email"]
    assert wire_of(Signup)["properties"]["referrer"] == {
        "type": "string",
        "title": "Referrer",
        "default": "none",
    }


def test_a_typeddict_answer_keeps_absent_optional_keys_absent_and_optional_types_none() -> None:
    built = form_of(Signup).parse({"email": "a@example.com"})
    assert built == {"email": "a@example.com", "referrer": "none", "note": None}


# -- Field by hand ------------------------------------------------------------------------------------


def test_convenience_constructors_build_the_same_fields_as_the_dataclass() -> None:
    assert Field.string("a", format="email") == Field("a", "string", format="email")
    assert Field.single_select(
        "c", [("r", "Red"), "g"] if False else [("r", "Red"), ("g", "Green")]
    ) == Field("c", "single_select", options=(Option("r", "Red"), Option("g", "Green")), titled=True)
    assert Field.multi_select("m", ["a", "b"], default=["a"]).default == ("a",)


FIELD_REFUSALS = [
    ("empty name", lambda: Field("", "string"), "", "name"),
    ("control character in name", lambda: Field("a\x00", "string"), "a\x00", "name"),
    ("bidi override in name", lambda: Field("a\u202eb", "string"), "a\u202eb", "name"),
    ("line separator in name", lambda: Field("a\u2028b", "string"), "a\u2028b", "name"),
    ("unknown kind", lambda: Field("a", "date"), "a", "kind"),  # type: ignore[arg-type]
    ("bounds on a string", lambda: Field("a", "string", minimum=1), "a", "minimum"),
    ("format on a number", lambda: Field("a", "number", format="email"), "a", "format"),
    ("options on a string", lambda: Field("a", "string", options=(Option("x"),)), "a", "options"),
    ("select without options", lambda: Field.single_select("a", []), "a", "options"),
    ("duplicate option", lambda: Field.single_select("a", ["x", "x"]), "a", "duplicate option"),
    ("mixed titles", lambda: Field.single_select("a", [("x", "X"), "y"]), "a", "option titles"),
    (
        "titles on an untitled select",
        lambda: Field("a", "single_select", options=(Option("x", "X"),)),
        "a",
        "option titles",
    ),
    ("titled flag on a string", lambda: Field("a", "string", titled=True), "a", "titled"),
    (
        "legacy flag on an untitled select",
        lambda: Field("a", "single_select", options=(Option("x"),), legacy_enum_names=True),
        "a",
        "legacy_enum_names",
    ),
    (
        "legacy flag on a multi select",
        lambda: Field("a", "multi_select", options=(Option("x", "X"),), titled=True, legacy_enum_names=True),
        "a",
        "legacy_enum_names",
    ),
    (
        "item counts on a single select",
        lambda: Field("a", "single_select", options=(Option("x"),), min_items=1),
        "a",
        "min_items",
    ),
    ("infinite minimum", lambda: Field.number("a", minimum=float("inf")), "a", "minimum"),
    ("bool as a bound", lambda: Field.integer("a", maximum=True), "a", "maximum"),
    ("bound too large to print", lambda: Field.integer("a", maximum=10**5000), "a", "maximum"),
    ("float length", lambda: Field.string("a", max_length=2.0), "a", "max_length"),  # type: ignore[arg-type]
    ("non-boolean default for a boolean", lambda: Field.boolean("a", default=1), "a", "default"),
    ("fractional default for an integer", lambda: Field.integer("a", default=1.5), "a", "default"),
    ("null default", lambda: Field.string("a", default=None), "a", "default"),
]


@pytest.mark.parametrize(
    ("make", "field", "construct"), [r[1:] for r in FIELD_REFUSALS], ids=[r[0] for r in FIELD_REFUSALS]
)
def test_a_field_the_spec_cannot_express_cannot_be_constructed(make: Any, field: str, construct: str) -> None:
    with pytest.raises(FormDefinitionError) as caught:
        make()
    assert (caught.value.field, caught.value.construct) == (field, construct)


def test_a_form_refuses_two_fields_with_one_name() -> None:
    with pytest.raises(FormDefinitionError) as caught:
        Form((Field.string("a"), Field.boolean("a")))
    assert (caught.value.field, caught.value.construct) == ("a", "duplicate field")


def test_a_form_refuses_more_fields_than_the_limit() -> None:
    with pytest.raises(FormDefinitionError) as caught:
        Form(tuple(Field.string(f"f{i}") for i in range(limits.MAX_FIELDS + 1)))
    assert caught.value.construct == "too many fields"


def test_a_form_with_exactly_the_limits_is_accepted() -> None:
    options = [f"o{i}" for i in range(limits.MAX_OPTIONS)]
    fields = [Field.single_select("s", options)] + [
        Field.string(f"f{i}") for i in range(limits.MAX_FIELDS - 1)
    ]
    assert len(Form(tuple(fields)).fields) == limits.MAX_FIELDS


def test_an_integer_default_given_as_a_whole_float_is_stored_as_an_int() -> None:
    assert Field.integer("a", default=3.0).default == 3
    assert type(Field.integer("a", default=3.0).default) is int


def test_an_empty_form_is_legal() -> None:
    assert Form(()).to_wire() == {"type": "object", "properties": {}}


def test_form_field_finds_a_field_by_name_and_raises_key_error_otherwise() -> None:
    form = Form((Field.string("a"),))
    assert form.field("a").kind == "string"
    with pytest.raises(KeyError):
        form.field("b")


# -- to_wire --------------------------------------------------------------------------------------

TITLED = (Option("r", "Red"), Option("g", "Green"))


@pytest.mark.parametrize("revision", MODERN)
def test_every_field_shape_has_its_f2_wire_form(revision: str) -> None:
    form = Form(
        (
            Field.string(
                "s",
                title="S",
                description="D",
                format="date",
                min_length=1,
                max_length=10,
                default="2020-01-01",
            ),
            Field.number("n", minimum=-1.5, maximum=2, default=0.5),
            Field.integer("i", minimum=0, default=2),
            Field.boolean("b", default=False),
            Field.single_select("u", ["x", "y"], default="y"),
            Field.single_select("t", TITLED, default="g"),
            Field.multi_select("m", ["x", "y"], min_items=1, max_items=2, default=["x"]),
            Field.multi_select("mt", TITLED, default=[]),
        )
    )
    assert form.to_wire(revision) == {
        "type": "object",
        "properties": {
            "s": {
                "type": "string",
                "title": "S",
                "description": "D",
                "format": "date",
                "minLength": 1,
                "maxLength": 10,
                "default": "2020-01-01",
            },
            "n": {"type": "number", "minimum": -1.5, "maximum": 2, "default": 0.5},
            "i": {"type": "integer", "minimum": 0, "default": 2},
            "b": {"type": "boolean", "default": False},
            "u": {"type": "string", "enum": ["x", "y"], "default": "y"},
            "t": {
                "type": "string",
                "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
                "default": "g",
            },
            "m": {
                "type": "array",
                "items": {"type": "string", "enum": ["x", "y"]},
                "minItems": 1,
                "maxItems": 2,
                "default": ["x"],
            },
            "mt": {
                "type": "array",
                "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
                "default": [],
            },
        },
        "required": ["s", "n", "i", "b", "u", "t", "m", "mt"],
    }


def test_required_is_omitted_when_no_field_is_required() -> None:
    assert "required" not in Form((Field.string("a", required=False),)).to_wire()


def test_the_wire_order_is_the_definition_order() -> None:
    names = ["zeta", "alpha", "mid"]
    form = Form(tuple(Field.string(n) for n in names))
    assert list(form.to_wire()["properties"]) == names
    assert form.to_wire()["required"] == names


def test_to_wire_returns_a_fresh_dict_each_time() -> None:
    form = Form((Field.multi_select("m", ["a"], default=["a"]),))
    first = form.to_wire()
    first["properties"]["m"]["default"].append("b")
    assert form.to_wire()["properties"]["m"]["default"] == ["a"]


def test_new_titled_selects_never_carry_enum_names_on_modern_revisions() -> None:
    form = Form((Field.single_select("t", TITLED),))
    for revision in MODERN:
        assert "enumNames" not in form.to_wire(revision)["properties"]["t"]
        assert "enum" not in form.to_wire(revision)["properties"]["t"]


def test_a_field_parsed_from_legacy_enum_names_keeps_its_shape_on_the_wire() -> None:
    field = Field("t", "single_select", options=TITLED, titled=True, legacy_enum_names=True)
    assert Form((field,)).to_wire(REV_2026_07_28)["properties"]["t"] == {
        "type": "string",
        "enum": ["r", "g"],
        "enumNames": ["Red", "Green"],
    }


def test_2025_06_18_downgrades_titled_selects_to_enum_names_and_drops_non_boolean_defaults() -> None:
    form = Form(
        (
            Field.single_select("t", TITLED, default="g"),
            Field.string("s", default="x"),
            Field.integer("i", default=1),
            Field.boolean("b", default=True),
        )
    )
    assert form.to_wire(REV_2025_06_18)["properties"] == {
        "t": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "b": {"type": "boolean", "default": True},
    }


def test_2025_06_18_cannot_express_a_multi_select() -> None:
    form = Form((Field.string("a"), Field.multi_select("m", ["x"])))
    with pytest.raises(UnsupportedInRevision) as caught:
        form.to_wire(REV_2025_06_18)
    assert (caught.value.field, caught.value.construct, caught.value.revision) == (
        "m",
        "multi_select",
        "2025-06-18",
    )


def test_an_unknown_revision_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="revision"):
        Form(()).to_wire("2024-01-01")


# -- build --------------------------------------------------------------------------------------------


class Order(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    when: dt.date
    at: dt.datetime
    plan: Plan
    colors: set[Color]
    shapes: frozenset[Shape] = frozenset()
    ratio: float
    count: int
    site: pydantic.AnyUrl
    note: str | None = None
    extra: int | None


@dataclasses.dataclass
class OrderDC:
    when: dt.date
    at: dt.datetime
    plan: Plan
    colors: set[Color]
    ratio: float
    count: int
    note: str | None
    size: Literal["s", "m"] = "m"


ORDER_CONTENT = {
    "when": "2024-02-29",
    "at": "2024-02-29T12:30:00.123456789+05:30",
    "plan": "pro",
    "colors": ["green", "red"],
    "ratio": 3,
    "count": 4.0,
    "site": "https://example.com/x",
}


def test_build_gives_a_pydantic_model_natural_python_values() -> None:
    order = form_of(Order).parse(ORDER_CONTENT)
    assert order.when == dt.date(2024, 2, 29)
    assert order.at == dt.datetime(
        2024, 2, 29, 12, 30, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))
    )
    assert order.plan is Plan.PRO
    assert order.colors == {Color.GREEN, Color.RED}
    assert order.shapes == frozenset()
    assert order.ratio == 3.0
    assert type(order.ratio) is float
    assert order.count == 4
    assert type(order.count) is int
    assert str(order.site) == "https://example.com/x"
    assert order.note is None
    assert order.extra is None


def test_build_gives_a_dataclass_natural_python_values() -> None:
    content = {k: v for k, v in ORDER_CONTENT.items() if k != "site"}
    order = form_of(OrderDC).parse(content)
    assert order == OrderDC(
        when=dt.date(2024, 2, 29),
        at=dt.datetime(2024, 2, 29, 12, 30, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
        plan=Plan.PRO,
        colors={Color.GREEN, Color.RED},
        ratio=3.0,
        count=4,
        note=None,
        size="m",
    )


def test_a_form_without_a_target_builds_a_plain_dict_of_json_values() -> None:
    form = Form((Field.string("d", format="date"), Field.multi_select("m", ["a", "b"])))
    assert form.parse({"d": "2020-01-01", "m": ["b"]}) == {"d": "2020-01-01", "m": ["b"]}


def test_a_refusal_by_the_models_own_validator_becomes_an_answer_error_naming_the_field() -> None:
    class M(pydantic.BaseModel):
        code: str

        @pydantic.field_validator("code")
        @classmethod
        def upper(cls, v: str) -> str:
            if v != v.upper():
                raise ValueError("must be upper case")
            return v

    with pytest.raises(AnswerError) as caught:
        form_of(M).parse({"code": "abc"})
    assert [(p.field, p.code) for p in caught.value.problems] == [("code", "invalid")]


def test_a_refusal_by_a_dataclass_post_init_becomes_an_answer_error() -> None:
    @dataclasses.dataclass
    class D:
        low: int
        high: int

        def __post_init__(self) -> None:
            if self.low > self.high:
                raise ValueError("low above high")

    with pytest.raises(AnswerError) as caught:
        form_of(D).parse({"low": 2, "high": 1})
    assert [(p.field, p.code) for p in caught.value.problems] == [("", "invalid")]


def test_form_of_is_cached_per_type_and_returns_a_form_as_is() -> None:
    assert form_of(Account) is form_of(Account)
    form = Form((Field.string("a"),))
    assert form_of(form) is form
    assert form_of(Account).target is Account
