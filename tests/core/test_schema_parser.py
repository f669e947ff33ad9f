"""The strict parser of incoming requestedSchemas (F1, F2): shapes, every deviation, limits, fuzzing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.core import limits
from mcp_elicit.core.forms import Field, Form, Option, parse_schema, schema_problems
from mcp_elicit.core.revisions import REV_2025_06_18, REV_2025_11_25, REV_2026_07_28
from mcp_elicit.errors import SchemaError, SchemaProblem
from tests.core.strategies import forms, json_values, near_schemas

MODERN = (REV_2025_11_25, REV_2026_07_28)


def one(prop: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {"x": prop}}
    if required:
        schema["required"] = ["x"]
    return schema


SHAPES = [
    # (id, property, expected field)
    ("string", {"type": "string"}, Field.string("x")),
    (
        "string with everything",
        {
            "type": "string",
            "title": "T",
            "description": "D",
            "format": "email",
            "minLength": 3,
            "maxLength": 50,
            "default": "a@example.com",
        },
        Field.string(
            "x",
            title="T",
            description="D",
            format="email",
            min_length=3,
            max_length=50,
            default="a@example.com",
        ),
    ),
    (
        "number",
        {"type": "number", "minimum": 0.5, "maximum": 9, "default": 1.25},
        Field.number("x", minimum=0.5, maximum=9, default=1.25),
    ),
    ("integer", {"type": "integer", "minimum": -3, "default": 2}, Field.integer("x", minimum=-3, default=2)),
    ("boolean", {"type": "boolean", "default": False}, Field.boolean("x", default=False)),
    (
        "untitled single select",
        {"type": "string", "enum": ["a", "b"], "default": "b"},
        Field.single_select("x", ["a", "b"], default="b"),
    ),
    (
        "titled single select",
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
        Field.single_select("x", [("a", "A"), ("b", "B")]),
    ),
    (
        "legacy titled enum",
        {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"], "default": "a"},
        Field(
            "x",
            "single_select",
            default="a",
            options=(Option("a", "A"), Option("b", "B")),
            titled=True,
            legacy_enum_names=True,
        ),
    ),
    (
        "untitled multi select",
        {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "minItems": 1,
            "maxItems": 2,
            "default": ["a"],
        },
        Field.multi_select("x", ["a", "b"], min_items=1, max_items=2, default=["a"]),
    ),
    (
        "titled multi select",
        {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}, "default": []},
        Field.multi_select("x", [("a", "A")], default=[]),
    ),
    (
        "titled multi select items may say type string",
        {"type": "array", "items": {"type": "string", "anyOf": [{"const": "a", "title": "A"}]}},
        Field.multi_select("x", [("a", "A")]),
    ),
]


@pytest.mark.parametrize(("prop", "expected"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("revision", MODERN)
def test_each_f2_shape_parses_into_its_field(revision: str, prop: dict[str, Any], expected: Field) -> None:
    assert parse_schema(one(prop), revision=revision) == Form((expected,))


def test_a_field_missing_from_required_is_optional() -> None:
    assert parse_schema(one({"type": "string"}, required=False)).field("x").required is False


def test_a_legacy_enum_with_enum_names_round_trips_with_its_names() -> None:
    schema = one({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]})
    assert parse_schema(schema).to_wire() == schema


def test_harmless_annotations_at_the_top_are_accepted() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        "$comment": "c",
        "title": "Shipping",
        "description": "Where to ship",
        "additionalProperties": False,
        "type": "object",
        "properties": {"x": {"type": "string", "title": "X"}},
    }
    assert schema_problems(schema) == ()


def test_what_the_official_sdk_renders_for_a_pydantic_model_parses() -> None:
    """mcp's render_elicitation_schema: model_json_schema with titles everywhere and no $defs."""
    import pydantic
    from mcp.server.elicitation import render_elicitation_schema

    class Booking(pydantic.BaseModel):
        name: str = pydantic.Field(title="Your name", min_length=1)
        guests: int = pydantic.Field(default=2, ge=1, le=8)
        vegan: bool = False
        seat: str = pydantic.Field(default="window", json_schema_extra={"enum": ["window", "aisle"]})

    form = parse_schema(render_elicitation_schema(Booking))
    assert form.names == ("name", "guests", "vegan", "seat")
    assert form.field("guests") == Field.integer(
        "guests", title="Guests", minimum=1, maximum=8, default=2, required=False
    )


DEVIATIONS = [
    # (id, schema, (field, keyword) that must be among the problems)
    ("not an object", [], ("", "")),
    ("null", None, ("", "")),
    ("no type", {"properties": {}}, ("", "type")),
    ("wrong type", {"type": "array", "properties": {}}, ("", "type")),
    ("no properties", {"type": "object"}, ("", "properties")),
    ("properties not an object", {"type": "object", "properties": []}, ("", "properties")),
    ("required not a list", {"type": "object", "properties": {}, "required": "x"}, ("", "required")),
    ("required with a non-string", {"type": "object", "properties": {}, "required": [1]}, ("", "required")),
    (
        "required names an unknown field",
        {"type": "object", "properties": {}, "required": ["ghost"]},
        ("ghost", "required"),
    ),
    ("required lists a name twice", {**one({"type": "string"}), "required": ["x", "x"]}, ("x", "required")),
    ("$ref at the top", {"type": "object", "properties": {}, "$ref": "#/x"}, ("", "$ref")),
    ("$defs at the top", {"type": "object", "properties": {}, "$defs": {}}, ("", "$defs")),
    ("anyOf at the top", {"type": "object", "properties": {}, "anyOf": []}, ("", "anyOf")),
    ("oneOf at the top", {"type": "object", "properties": {}, "oneOf": []}, ("", "oneOf")),
    (
        "unknown top-level key",
        {"type": "object", "properties": {}, "patternProperties": {}},
        ("", "patternProperties"),
    ),
    (
        "additionalProperties true",
        {"type": "object", "properties": {}, "additionalProperties": True},
        ("", "additionalProperties"),
    ),
    ("$schema not a string", {"type": "object", "properties": {}, "$schema": 1}, ("", "$schema")),
    ("title not a string", {"type": "object", "properties": {}, "title": 1}, ("", "title")),
    ("field not an object", one("string"), ("x", "")),  # type: ignore[arg-type]
    ("field without type", one({"enum": ["a"]}), ("x", "type")),
    ("nested object", one({"type": "object", "properties": {}}), ("x", "type")),
    ("unknown type", one({"type": "date"}), ("x", "type")),
    ("type list", one({"type": ["string", "null"]}), ("x", "type")),
    ("null type", one({"type": "null"}), ("x", "type")),
    ("$ref field", one({"type": "string", "$ref": "#/a"}), ("x", "$ref")),
    ("pattern", one({"type": "string", "pattern": "^a"}), ("x", "pattern")),
    ("exclusive minimum", one({"type": "number", "exclusiveMinimum": 0}), ("x", "exclusiveMinimum")),
    ("multipleOf", one({"type": "integer", "multipleOf": 2}), ("x", "multipleOf")),
    (
        "anyOf inside a field",
        one({"type": "string", "anyOf": [{"const": "a", "title": "A"}]}),
        ("x", "anyOf"),
    ),
    ("examples", one({"type": "string", "examples": ["a"]}), ("x", "examples")),
    ("unknown format", one({"type": "string", "format": "hostname"}), ("x", "format")),
    ("format not a string", one({"type": "string", "format": 1}), ("x", "format")),
    ("format on a number", one({"type": "number", "format": "email"}), ("x", "format")),
    ("minLength on a number", one({"type": "number", "minLength": 1}), ("x", "minLength")),
    ("minimum on a string", one({"type": "string", "minimum": 1}), ("x", "minimum")),
    (
        "minLength above maxLength",
        one({"type": "string", "minLength": 5, "maxLength": 2}),
        ("x", "minLength"),
    ),
    ("minimum above maximum", one({"type": "number", "minimum": 5, "maximum": 2}), ("x", "minimum")),
    ("negative minLength", one({"type": "string", "minLength": -1}), ("x", "minLength")),
    ("fractional maxLength", one({"type": "string", "maxLength": 2.5}), ("x", "maxLength")),
    ("boolean maxLength", one({"type": "string", "maxLength": True}), ("x", "maxLength")),
    ("string minimum", one({"type": "number", "minimum": "1"}), ("x", "minimum")),
    ("NaN maximum", one({"type": "number", "maximum": float("nan")}), ("x", "maximum")),
    ("infinite minimum", one({"type": "number", "minimum": float("-inf")}), ("x", "minimum")),
    ("minimum beyond a double", one({"type": "integer", "minimum": 10**400}), ("x", "minimum")),
    ("default too long to print", one({"type": "integer", "default": -(10**5000)}), ("x", "default")),
    (
        "absurd maxLength",
        one({"type": "string", "maxLength": limits.MAX_STRING_LENGTH + 1}),
        ("x", "maxLength"),
    ),
    ("title not a string", one({"type": "string", "title": ["T"]}), ("x", "title")),
    ("description not a string", one({"type": "string", "description": 3}), ("x", "description")),
    ("default of the wrong type", one({"type": "integer", "default": "3"}), ("x", "default")),
    ("fractional default for an integer", one({"type": "integer", "default": 2.5}), ("x", "default")),
    ("default outside the bounds", one({"type": "integer", "maximum": 3, "default": 4}), ("x", "default")),
    ("default too long", one({"type": "string", "maxLength": 1, "default": "ab"}), ("x", "default")),
    (
        "default of the wrong format",
        one({"type": "string", "format": "date", "default": "today"}),
        ("x", "default"),
    ),
    ("default not an option", one({"type": "string", "enum": ["a"], "default": "b"}), ("x", "default")),
    ("null default", one({"type": "boolean", "default": None}), ("x", "default")),
    (
        "multi default not a list",
        one({"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": "a"}),
        ("x", "default"),
    ),
    ("enum not a list", one({"type": "string", "enum": "a"}), ("x", "enum")),
    ("empty enum", one({"type": "string", "enum": []}), ("x", "enum")),
    ("enum with a non-string", one({"type": "string", "enum": ["a", 1]}), ("x", "enum")),
    ("enum with a duplicate", one({"type": "string", "enum": ["a", "a"]}), ("x", "enum")),
    ("enum on a number", one({"type": "integer", "enum": [1, 2]}), ("x", "enum")),
    (
        "enum beside oneOf",
        one({"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]}),
        ("x", "enum"),
    ),
    ("enumNames without enum", one({"type": "string", "enumNames": ["A"]}), ("x", "enumNames")),
    (
        "enumNames length mismatch",
        one({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}),
        ("x", "enumNames"),
    ),
    (
        "enumNames with a non-string",
        one({"type": "string", "enum": ["a"], "enumNames": [1]}),
        ("x", "enumNames"),
    ),
    ("oneOf not a list", one({"type": "string", "oneOf": {"const": "a"}}), ("x", "oneOf")),
    ("oneOf option without title", one({"type": "string", "oneOf": [{"const": "a"}]}), ("x", "oneOf")),
    (
        "oneOf option with extra keys",
        one({"type": "string", "oneOf": [{"const": "a", "title": "A", "description": "d"}]}),
        ("x", "oneOf"),
    ),
    ("oneOf option not an object", one({"type": "string", "oneOf": ["a"]}), ("x", "oneOf")),
    (
        "oneOf duplicate const",
        one({"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "a", "title": "B"}]}),
        ("x", "oneOf"),
    ),
    (
        "oneOf non-string const",
        one({"type": "string", "oneOf": [{"const": 1, "title": "A"}]}),
        ("x", "oneOf"),
    ),
    ("const on a field", one({"type": "string", "const": "a"}), ("x", "const")),
    ("array without items", one({"type": "array"}), ("x", "items")),
    ("array of strings without enum", one({"type": "array", "items": {"type": "string"}}), ("x", "items")),
    (
        "array of objects",
        one({"type": "array", "items": {"type": "object", "properties": {}}}),
        ("x", "items"),
    ),
    ("array of refs", one({"type": "array", "items": {"$ref": "#/a"}}), ("x", "items.$ref")),
    ("items not an object", one({"type": "array", "items": ["a"]}), ("x", "items")),
    ("items enum without type", one({"type": "array", "items": {"enum": ["a"]}}), ("x", "items.type")),
    (
        "items enum of numbers",
        one({"type": "array", "items": {"type": "number", "enum": [1]}}),
        ("x", "items.type"),
    ),
    (
        "items with pattern",
        one({"type": "array", "items": {"type": "string", "enum": ["a"], "pattern": "a"}}),
        ("x", "items.pattern"),
    ),
    (
        "items anyOf with extra keys",
        one({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}], "minLength": 1}}),
        ("x", "items.minLength"),
    ),
    (
        "items anyOf of another type",
        one({"type": "array", "items": {"type": "integer", "anyOf": [{"const": "a", "title": "A"}]}}),
        ("x", "items.type"),
    ),
    (
        "minItems above options",
        one({"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 2}),
        ("x", "minItems"),
    ),
    (
        "minItems above maxItems",
        one({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2, "maxItems": 1}),
        ("x", "minItems"),
    ),
    (
        "absurd maxItems",
        one(
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "maxItems": limits.MAX_OPTIONS + 1}
        ),
        ("x", "maxItems"),
    ),
    (
        "uniqueItems",
        one({"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": True}),
        ("x", "uniqueItems"),
    ),
    ("empty field name", {"type": "object", "properties": {"": {"type": "string"}}}, ("", "properties")),
    (
        "control character in a field name",
        {"type": "object", "properties": {"a\x1b[2J": {"type": "string"}}},
        ("a\x1b[2J", "properties"),
    ),
]


@pytest.mark.parametrize(("schema", "where"), [d[1:] for d in DEVIATIONS], ids=[d[0] for d in DEVIATIONS])
def test_a_deviation_from_the_spec_is_reported_with_its_field_and_keyword(
    schema: Any, where: tuple[str, str]
) -> None:
    problems = schema_problems(schema)
    assert where in [(p.field, p.keyword) for p in problems]
    with pytest.raises(SchemaError) as caught:
        parse_schema(schema)
    assert caught.value.problems == problems


def test_every_deviation_is_reported_not_just_the_first() -> None:
    schema = {
        "type": "object",
        "$ref": "#/x",
        "properties": {
            "a": {"type": "string", "pattern": "x", "format": "phone"},
            "b": {"type": "object"},
            "c": {"type": "array", "items": {"type": "string", "enum": ["p", "p"]}},
        },
        "required": ["a", "zzz"],
    }
    assert {(p.field, p.keyword) for p in schema_problems(schema)} == {
        ("", "$ref"),
        ("zzz", "required"),
        ("a", "pattern"),
        ("a", "format"),
        ("b", "type"),
        ("c", "items.enum"),
    }


LIMITS = [
    (
        "too many fields",
        {
            "type": "object",
            "properties": {f"f{i}": {"type": "boolean"} for i in range(limits.MAX_FIELDS + 1)},
        },
        ("", "properties"),
    ),
    (
        "too many options",
        one({"type": "string", "enum": [f"o{i}" for i in range(limits.MAX_OPTIONS + 1)]}),
        ("x", "enum"),
    ),
    (
        "too many titled options",
        one(
            {
                "type": "string",
                "oneOf": [{"const": f"o{i}", "title": "t"} for i in range(limits.MAX_OPTIONS + 1)],
            }
        ),
        ("x", "oneOf"),
    ),
    (
        "too long option value",
        one({"type": "string", "enum": ["o" * (limits.MAX_OPTION_CHARS + 1)]}),
        ("x", "enum"),
    ),
    (
        "too long field name",
        {"type": "object", "properties": {"n" * (limits.MAX_FIELD_NAME_CHARS + 1): {"type": "string"}}},
        ("n" * limits.MAX_FIELD_NAME_CHARS + "…", "properties"),
    ),
    (
        "too long field title",
        one({"type": "string", "title": "t" * (limits.MAX_TITLE_CHARS + 1)}),
        ("x", "title"),
    ),
    (
        "too long option title",
        one({"type": "string", "oneOf": [{"const": "a", "title": "t" * (limits.MAX_TITLE_CHARS + 1)}]}),
        ("x", "oneOf"),
    ),
    (
        "too long enum name",
        one({"type": "string", "enum": ["a"], "enumNames": ["t" * (limits.MAX_TITLE_CHARS + 1)]}),
        ("x", "enumNames"),
    ),
    (
        "too long field description",
        one({"type": "string", "description": "d" * (limits.MAX_DESCRIPTION_CHARS + 1)}),
        ("x", "description"),
    ),
    (
        "too long form title",
        {"type": "object", "properties": {}, "title": "t" * (limits.MAX_TITLE_CHARS + 1)},
        ("", "title"),
    ),
    (
        "too long form description",
        {"type": "object", "properties": {}, "description": "d" * (limits.MAX_DESCRIPTION_CHARS + 1)},
        ("", "description"),
    ),
]


@pytest.mark.parametrize(("schema", "where"), [x[1:] for x in LIMITS], ids=[x[0] for x in LIMITS])
def test_a_schema_beyond_a_size_limit_is_refused(schema: Any, where: tuple[str, str]) -> None:
    assert where in [(p.field, p.keyword) for p in schema_problems(schema)]


def test_a_schema_exactly_at_the_limits_is_accepted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n" * limits.MAX_FIELD_NAME_CHARS: {"type": "string", "maxLength": limits.MAX_STRING_LENGTH},
            "e": {
                "type": "string",
                "enum": [f"o{i}" for i in range(limits.MAX_OPTIONS)],
                "title": "t" * limits.MAX_TITLE_CHARS,
            },
            "m": {
                "type": "array",
                "items": {"type": "string", "enum": ["a"]},
                "maxItems": limits.MAX_OPTIONS,
            },
            **{
                f"f{i}": {"type": "boolean", "description": "d" * limits.MAX_DESCRIPTION_CHARS}
                for i in range(limits.MAX_FIELDS - 3)
            },
        },
    }
    assert schema_problems(schema) == ()


def test_revision_2025_06_18_refuses_what_it_does_not_define() -> None:
    schema = {
        "type": "object",
        "properties": {
            "t": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
            "m": {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            "s": {"type": "string", "default": "x"},
            "b": {"type": "boolean", "default": True},
            "l": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
        },
    }
    problems = {(p.field, p.keyword) for p in schema_problems(schema, revision=REV_2025_06_18)}
    assert problems == {("t", "oneOf"), ("m", "type"), ("s", "default")}
    assert schema_problems(schema, revision=REV_2025_11_25) == ()


def test_an_unknown_revision_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="revision"):
        schema_problems({}, revision="1999-01-01")


def test_a_schema_problem_is_a_plain_value() -> None:
    problems = schema_problems(one({"type": "string", "pattern": "a"}))
    assert problems == (SchemaProblem("x", "pattern", problems[0].problem),)


# -- properties ---------------------------------------------------------------------------------


@given(forms(), st.sampled_from(MODERN))
@settings(max_examples=200, deadline=None)
def test_any_form_survives_the_wire_unchanged(form: Form, revision: str) -> None:
    """F2 round trip: to_wire then parse_schema gives back an equal form, for every shape."""
    assert parse_schema(form.to_wire(revision), revision=revision) == form


@given(forms(kinds=("string", "number", "integer", "boolean", "single_select")))
@settings(max_examples=100, deadline=None)
def test_any_2025_06_18_form_parses_back_without_its_non_boolean_defaults(form: Form) -> None:
    parsed = parse_schema(form.to_wire(REV_2025_06_18), revision=REV_2025_06_18)
    for before, after in zip(form.fields, parsed.fields, strict=True):
        assert after.has_default == (before.has_default and before.kind == "boolean")
        assert (after.name, after.kind, after.required, after.option_values) == (
            before.name,
            before.kind,
            before.required,
            before.option_values,
        )


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_arbitrary_json_never_raises_anything_but_schema_error(value: Any) -> None:
    _parse_or_schema_error(value)


@given(near_schemas, st.sampled_from((REV_2025_06_18, *MODERN)))
@settings(max_examples=300, deadline=None)
def test_almost_valid_schemas_never_raise_anything_but_schema_error(schema: Any, revision: str) -> None:
    _parse_or_schema_error(schema, revision)


def _parse_or_schema_error(schema: Any, revision: str = REV_2026_07_28) -> None:
    """Anything but SchemaError escaping either entry point fails the test by itself."""
    problems = schema_problems(schema, revision=revision)
    if problems:
        with pytest.raises(SchemaError) as caught:
            parse_schema(schema, revision=revision)
        assert caught.value.problems == problems
        return
    form = parse_schema(schema, revision=revision)
    # Whatever parses is a fixed point of the round trip.
    assert parse_schema(form.to_wire(revision), revision=revision) == form
