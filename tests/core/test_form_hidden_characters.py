"""Option values and field names travel back in the answer uncleaned, so mcp-elicit's client refuses
a form with hidden characters in them. The form builder refuses to build such a form, by the same
rule (`core.text.has_hidden_characters`): a form the kit builds is one its own client takes.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.client import CheckMode, Elicitation, GateSchema
from mcp_elicit.client.model import Refuse
from mcp_elicit.client.ui_protocol import Requester
from mcp_elicit.core.forms import Field, Form, form_of
from mcp_elicit.errors import FormDefinitionError

# What a tool author may paste by accident or a hostile option list may hold: controls, bidi
# overrides, zero-width characters and joiners, blank look-alikes, selectors, combining marks.
TRICKS = "\t\n\r\u2028" + (
    "\x00\x1b\x7f\x85\u00ad\u034f\u061c\u200b\u200c\u200d\u200e\u202e\u2066\u2060\u3164\ufe0f\ufeff\u0301"
)
values = st.text(st.one_of(st.characters(), st.sampled_from(TRICKS), st.sampled_from("ab😀")), max_size=12)


def client_takes(schema: dict[str, Any]) -> bool:
    """Whether mcp-elicit's client pipeline takes the form (its mode check and schema gate)."""

    async def gate() -> Any:
        e = Elicitation(
            params={"message": "m", "requestedSchema": {"type": "object", "properties": schema}},
            protocol="2025-11-25",
            requester=Requester(name="srv", where="test"),
        )
        for stage in (CheckMode(), GateSchema()):
            decision = await stage(e)
            if decision is not None:
                assert isinstance(decision, Refuse)
                return decision
        return None

    return anyio.run(gate) is None


def builds(make: Any) -> bool:
    try:
        make()
    except FormDefinitionError as exc:
        return exc.field != "pick"  # refused for this field (and nothing else), as the client does
    return True


@given(values)
def test_the_builder_refuses_an_option_value_exactly_when_the_client_would(value: str) -> None:
    enum = {"pick": {"type": "string", "enum": [value]}}
    titled = {"pick": {"type": "string", "oneOf": [{"const": value, "title": "T"}]}}
    multi = {"pick": {"type": "array", "items": {"anyOf": [{"const": value, "title": "T"}]}}}
    assert builds(lambda: Field.single_select("pick", [value])) is client_takes(enum)
    assert builds(lambda: Field.single_select("pick", [(value, "T")])) is client_takes(titled)
    assert builds(lambda: Field.multi_select("pick", [(value, "T")])) is client_takes(multi)


@given(values, values)
def test_a_form_the_builder_makes_is_one_the_client_takes(value: str, name: str) -> None:
    for make in (
        lambda: Form((Field.single_select("pick", [value]), Field.multi_select("many", [(value, "T")]))),
        lambda: Form((Field.string(name or "x"),)),
    ):
        try:
            form = make()
        except FormDefinitionError:
            continue
        assert client_takes(form.to_wire()["properties"])


@pytest.mark.parametrize(
    "value", ["lar\u200bge", "\u202eevil", "a\x1b[2Jb", "\u3164", "e" + "\u0301" * 9, "a\tb", "a\nb", "a\rb"]
)
def test_an_option_value_with_hidden_characters_is_a_definition_error(value: str) -> None:
    with pytest.raises(FormDefinitionError) as caught:
        Field.single_select("size", ["small", value])
    assert (caught.value.field, caught.value.construct) == ("size", "options")
    assert value not in str(caught.value)  # the value is what hides things: it is not repeated
    with pytest.raises(FormDefinitionError):  # the same from a Python type
        form_of(TypedDict("Order", {"size": Literal["small", value]}))  # type: ignore[operator,valid-type]


def test_a_field_name_with_a_blank_look_alike_is_a_definition_error() -> None:
    with pytest.raises(FormDefinitionError) as caught:
        Field.string("tag\u3164")
    assert caught.value.construct == "name"


@pytest.mark.parametrize("breaker", ["\t", "\n", "\r", "\u2028"])
def test_the_client_refuses_an_option_that_would_show_as_another_with_a_space(breaker: str) -> None:
    # "a\tb" shows as "a b" on one line: beside an option "a b" the person could not tell which
    # one they pick, and the answer carries the value they did not see.
    assert not client_takes({"pick": {"type": "string", "enum": ["a b", f"a{breaker}b"]}})
    assert not client_takes({f"na{breaker}me": {"type": "string"}})
    assert client_takes({"pick": {"type": "string", "enum": ["a b", "ab"]}})
