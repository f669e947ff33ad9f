"""Every schema and answer this project emits is valid for the official JSON schema of its revision.

The published files are kept in the repository's spec/ folder (see tests/wire.py and spec/README.md).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.core.forms import Field, Form
from mcp_elicit.core.revisions import REV_2025_06_18, REV_2025_11_25, REV_2026_07_28
from tests.core.strategies import answers, forms
from tests.wire import require_spec, validate_wire

MODERN = (REV_2025_11_25, REV_2026_07_28)
OLD_KINDS = ("string", "number", "integer", "boolean", "single_select")


@pytest.fixture(autouse=True)
def _spec() -> None:
    require_spec()


def _params(form: Form, revision: str) -> dict[str, Any]:
    params: dict[str, Any] = {"message": "Please fill in", "requestedSchema": form.to_wire(revision)}
    if revision != REV_2025_06_18:
        params["mode"] = "form"
    return params


def _definition(field: Field) -> str:
    """The one PrimitiveSchemaDefinition member (2025-11-25 on) each field shape must match."""
    if field.kind == "single_select":
        if field.legacy_enum_names:
            return "LegacyTitledEnumSchema"
        return "TitledSingleSelectEnumSchema" if field.titled else "UntitledSingleSelectEnumSchema"
    if field.kind == "multi_select":
        return "TitledMultiSelectEnumSchema" if field.titled else "UntitledMultiSelectEnumSchema"
    return {"string": "StringSchema", "number": "NumberSchema", "integer": "NumberSchema"}.get(
        field.kind, "BooleanSchema"
    )


EVERY_SHAPE = Form(
    (
        Field.string("s", title="S", description="D", format="date-time", min_length=1, max_length=40),
        Field.string("e", format="email", default="a@example.com", required=False),
        Field.number("n", minimum=-1.5, maximum=99.5, default=95.5),
        Field.integer("i", minimum=0, maximum=10, default=3),
        Field.boolean("b", default=True),
        Field.single_select("u", ["x", "y"], default="x"),
        Field.single_select("t", [("x", "X"), ("y", "Y")], default="y"),
        Field.multi_select("m", ["x", "y"], min_items=1, max_items=2, default=["x"]),
        Field.multi_select("mt", [("x", "X"), ("y", "Y")], default=["x", "y"]),
    )
)


@pytest.mark.parametrize("revision", MODERN)
def test_a_form_with_every_shape_is_valid_for_the_official_schema(revision: str) -> None:
    validate_wire(revision, "ElicitRequestFormParams", _params(EVERY_SHAPE, revision))
    validate_wire(revision, "ElicitRequestParams", _params(EVERY_SHAPE, revision))
    properties = EVERY_SHAPE.to_wire(revision)["properties"]
    for field in EVERY_SHAPE.fields:
        validate_wire(revision, _definition(field), properties[field.name])


def test_a_2025_06_18_form_is_valid_for_the_2025_06_18_schema() -> None:
    form = Form(tuple(f for f in EVERY_SHAPE.fields if f.kind != "multi_select"))
    validate_wire(REV_2025_06_18, "ElicitRequestParams", _params(form, REV_2025_06_18))
    for prop in form.to_wire(REV_2025_06_18)["properties"].values():
        validate_wire(REV_2025_06_18, "PrimitiveSchemaDefinition", prop)


@given(forms(), st.sampled_from(MODERN))
@settings(max_examples=150, deadline=None)
def test_every_generated_form_is_valid_for_its_revision(form: Form, revision: str) -> None:
    validate_wire(revision, "ElicitRequestFormParams", _params(form, revision))
    properties = form.to_wire(revision)["properties"]
    for field in form.fields:
        validate_wire(revision, _definition(field), properties[field.name])


@given(forms(kinds=OLD_KINDS))
@settings(max_examples=100, deadline=None)
def test_every_generated_2025_06_18_form_is_valid_for_2025_06_18(form: Form) -> None:
    validate_wire(REV_2025_06_18, "ElicitRequestParams", _params(form, REV_2025_06_18))


@given(st.data(), st.sampled_from((REV_2025_06_18, *MODERN)))
@settings(max_examples=100, deadline=None)
def test_every_validated_answer_is_a_valid_elicit_result(data: st.DataObject, revision: str) -> None:
    kinds = OLD_KINDS if revision == REV_2025_06_18 else None
    form = data.draw(forms(kinds=kinds))
    values = form.validate(data.draw(answers(form)))
    validate_wire(revision, "ElicitResult", {"action": "accept", "content": values})


def test_the_published_schema_still_has_the_integer_artifact_for_answers() -> None:
    """F3: a fractional answer to a number field fails the published file, so tests/wire.py patches it.

    When this starts failing, the generator was fixed: drop the patch from KNOWN_ARTIFACTS.
    """
    result = {"action": "accept", "content": {"n": 95.5}}
    for revision in (REV_2025_06_18, *MODERN):
        with pytest.raises(jsonschema.ValidationError):
            validate_wire(revision, "ElicitResult", result, patched=False)
        validate_wire(revision, "ElicitResult", result)


def test_the_official_schema_does_refuse_a_nested_object() -> None:
    """Sanity check that the validator is live: the spec's own schema rejects a nested field (F1)."""
    bad = {
        "message": "m",
        "mode": "form",
        "requestedSchema": {"type": "object", "properties": {"a": {"type": "object"}}},
    }
    for revision in MODERN:
        with pytest.raises(jsonschema.ValidationError):
            validate_wire(revision, "ElicitRequestFormParams", bad)
