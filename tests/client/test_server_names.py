"""A server name or title whose letters mix scripts (`core.text.mixes_scripts`) is shown marked,
as a name that lost escapes is: in the prompt, in what `call` and `connect` print (the connection's
`server`) and in the audit trail. Plain names in any one script are not marked."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from mcp_elicit.client.connection import ElicitClient
from mcp_elicit.client.names import CLEANED_NAME_MARK, MIXED_SCRIPTS_MARK, NOT_LATIN_MARK, cleaned_requester
from mcp_elicit.client.ui_protocol import Requester
from mcp_elicit.core import limits
from mcp_elicit.testing import MemoryAuditSink
from mcp_elicit.ui.scripted import ScriptedUI

LOOKALIKE = "G\u043e\u043egle Drive"  # Cyrillic о


class Note(BaseModel):
    note: str


def shown(name: str, title: str | None = None) -> Requester:
    return cleaned_requester(Requester(name=name, where="python server.py", title=title))


def test_a_name_that_mixes_scripts_is_marked_and_a_plain_one_in_any_script_is_not() -> None:
    assert shown(LOOKALIKE).name == LOOKALIKE + MIXED_SCRIPTS_MARK
    for plain in ["Google Drive", "Яндекс", "東京タワー MCP", "한국 MCP", "GitHub 2.0"]:
        assert shown(plain).name == plain


def test_a_name_wholly_in_letters_that_pass_for_latin_ones_is_marked_as_not_latin() -> None:
    for lookalike in [
        "\u0430\u0440\u0440\u04cf\u0435",
        "\U0001d406oogle",
        "\uff27\uff4f\uff4f\uff47\uff4c\uff45",
    ]:
        assert shown(lookalike).name == lookalike + NOT_LATIN_MARK  # аррӏе, 𝐆oogle, fullwidth
    assert shown("drive", title="\u0430\u0440\u0440\u04cf\u0435").title.endswith(NOT_LATIN_MARK)  # type: ignore[union-attr]
    for plain in ["Kırmızı", "Café", "München", "Яндекс", "файлы"]:  # no Latin look-alike
        assert shown(plain).name == plain


def test_a_title_that_mixes_scripts_is_marked_too() -> None:
    assert shown("drive", title=LOOKALIKE).title == LOOKALIKE + MIXED_SCRIPTS_MARK
    assert shown("drive", title="Google Drive").title == "Google Drive"


def test_a_name_with_escapes_that_mixes_scripts_carries_both_marks() -> None:
    assert shown(LOOKALIKE + "\x1b[1m").name == LOOKALIKE + CLEANED_NAME_MARK + MIXED_SCRIPTS_MARK


def test_a_non_latin_name_that_lost_escapes_is_not_marked_for_the_marks_own_latin() -> None:
    once = shown("мой сервер\x1b[1m")
    assert once.name == "мой сервер" + CLEANED_NAME_MARK
    assert cleaned_requester(once) == once


def test_a_long_marked_name_stays_within_the_limit() -> None:
    name = shown("G\u043e" * 300).name
    assert len(name) <= limits.MAX_SERVER_NAME_CHARS
    assert name.endswith(MIXED_SCRIPTS_MARK)


@given(
    name=st.text(
        alphabet=st.sampled_from("Go\u043e\u03bf\u0430\u0440 Я東\x1b[m\u202e\u200b1০\U0001d406"), max_size=400
    ),
    title=st.none() | st.text(alphabet=st.sampled_from("Go\u043e Я東\x1b"), max_size=300),
)
def test_marking_a_marked_server_changes_nothing_and_stays_within_the_limit(
    name: str, title: str | None
) -> None:
    once = shown(name, title)
    assert cleaned_requester(once) == once
    assert len(once.name) <= limits.MAX_SERVER_NAME_CHARS
    assert once.title is None or len(once.title) <= limits.MAX_SERVER_NAME_CHARS


@pytest.mark.anyio
async def test_the_prompt_the_connection_and_the_trail_show_the_mark() -> None:
    server: MCPServer[Any] = MCPServer(LOOKALIKE)

    @server.tool()
    async def ask_once(ctx: Context) -> str:
        await ctx.elicit("A note?", Note)
        return "ok"

    asked: list[Requester] = []

    class Recording(ScriptedUI):
        async def ask_form(self, prompt: Any) -> Any:
            asked.append(prompt.requester)
            return await super().ask_form(prompt)

    sink = MemoryAuditSink()
    with anyio.fail_after(10):
        ui = Recording([{"content": {"note": "hi"}}])
        async with ElicitClient(server, ui=ui, audit=sink) as client:
            await client.call_tool("ask_once", {})
            connection = client.server.name
    assert connection == LOOKALIKE + MIXED_SCRIPTS_MARK
    assert [r.name for r in asked] == [connection]
    assert [r["server"]["name"] for r in sink.records] == [connection]
