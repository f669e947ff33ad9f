"""Reading a time bound for the trail's readers (`--since`/`--until`, the audit page's filters):
any text is a bound or `InvalidArgument`, never another error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.audit.reading import parse_time
from mcp_elicit.errors import InvalidArgument

FAR = [
    "999999d",
    "784352342655d",
    "2000000000000000m",
    "100000000000000000000s",
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59-05:00",
]


@pytest.mark.parametrize("value", FAR)
def test_a_bound_outside_the_calendar_is_invalid_argument_naming_the_option(value: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_time(value, "--since")
    assert caught.value.name == "--since"


ages = st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, 10**30), st.sampled_from("smhd"))
iso = st.datetimes().map(lambda d: d.isoformat()) | st.builds(
    lambda d, h: f"{d.isoformat()}{h:+03d}:00", st.datetimes(), st.integers(-23, 23)
)


@given(value=st.text(max_size=40) | ages | iso)
def test_any_text_is_a_bound_or_invalid_argument(value: str) -> None:
    refused: InvalidArgument | None = None
    try:
        bound = parse_time(value, "since")
    except InvalidArgument as exc:
        refused, bound = exc, None
    assert isinstance(bound, str) if refused is None else refused.name == "since"
