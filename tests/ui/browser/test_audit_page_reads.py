"""The audit page's reading of the trail, without a browser: how it names breaks, what it warns
about, what it reads again on a reload."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from mcp_elicit.audit.reading import open_reader
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent, ServerIdentity
from mcp_elicit.ui.browser.audit_view import TrailCache, audit_app


def event(i: int, server: str = "deployer", action: str = "accept") -> ConsentEvent:
    return ConsentEvent(
        time=1_800_000_000.0 + 3600 * i,
        side="client",
        mode="form",
        action=action,  # type: ignore[arg-type]
        decided_by="person",
        server=ServerIdentity(server, "1.0", "uvx " + server),
        record_id=f"r{i}",
    )


@pytest.fixture
def trail(tmp_path: Path) -> Path:
    path = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many(
            [event(0), event(1, action="decline"), event(2, "weather"), event(3, action="cancel")]
        )
    return path


def edit(trail: Path, sql: str) -> None:
    conn = sqlite3.connect(trail)
    conn.execute(sql)
    conn.commit()
    conn.close()


def get(app: Any, query: str = "") -> str:
    """The page's HTML for `query`, from the ASGI app itself (no server, no browser)."""
    response = TestClient(app, base_url="http://127.0.0.1").get("/", params=query)
    assert response.status_code == 200
    return response.text


def page_of(trail: Path) -> Any:
    return audit_app(lambda: open_reader(str(trail), None, "t", None), trail.name)


def test_the_page_names_a_broken_record_by_its_seq_as_the_cli_does(trail: Path) -> None:
    edit(trail, f"UPDATE {TABLE} SET body = replace(body, '\"decline\"', '\"accept\"') WHERE seq = 2")
    html = get(page_of(trail))
    assert '<a href="#rec-2">#2 (id r1)</a>' in html
    assert "Record #1" not in html


def test_a_filter_on_an_edited_column_neither_mislabels_nor_hides_a_record_without_a_word(
    trail: Path,
) -> None:
    edit(trail, f"UPDATE {TABLE} SET action = 'accept' WHERE seq = 4")  # the record says cancel
    app = page_of(trail)
    mislabelled = get(app, "action=accept")
    assert 'id="rec-4"' not in mislabelled
    assert "Left out #4" in mislabelled
    hidden = get(app, "action=cancel")
    assert 'id="rec-4"' not in hidden
    assert "1 edited index column(s)" in hidden


def test_a_reload_of_an_unchanged_trail_does_not_verify_it_again(trail: Path) -> None:
    cache = TrailCache()
    app = audit_app(lambda: open_reader(str(trail), None, "t", None), trail.name, cache)
    first = get(app)
    assert get(app) == first
    assert get(app, "action=decline") != first
    assert cache.verified == 1
    with SqliteAuditSink(trail) as sink:
        sink.append(event(9))
    assert 'id="rec-5"' in get(app)
    assert cache.verified == 2


def test_an_edit_inside_an_unchanged_count_and_head_is_verified_again(trail: Path) -> None:
    cache = TrailCache()
    app = audit_app(lambda: open_reader(str(trail), None, "t", None), trail.name, cache)
    assert "Intact: 4 records" in get(app)
    edit(trail, f"UPDATE {TABLE} SET body = replace(body, '\"decline\"', '\"accept\"') WHERE seq = 2")
    assert "Broken:" in get(app)
    assert cache.verified == 2


def test_choosing_a_server_as_the_page_shows_it_lists_its_records_whatever_hidden_characters_its_name_holds(
    tmp_path: Path,
) -> None:
    import html

    from mcp_elicit.ui.browser.audit_view import filter_label

    path = tmp_path / "names.sqlite3"
    # a bidi override, an escape sequence, two names cleaned alike, and no name at all
    names = ["evil\u202eman", "red\x1b[31mtext", "red\x1b[32mtext", "zero\u200bwidth", "", "plain"]
    with SqliteAuditSink(path) as sink:
        sink.append_many([event(i, name) for i, name in enumerate(names)])
    app = page_of(path)
    offered = offered_values(get(app))
    for raw in names:
        shown = filter_label(raw or "(unnamed)")
        assert shown in offered
        filtered = get(app, f"server={quote(shown)}")
        alike = sum(filter_label(n or "(unnamed)") == shown for n in names)  # the two red ones: 2
        assert len(re.findall(r'<tr id="rec-', filtered)) == alike, shown
        assert f'<option value="{html.escape(shown)}" selected>' in filtered


def offered_values(page: str) -> list[str]:
    """The server filter's choices as a browser submits them: an option's `value` attribute, else
    its text with ASCII whitespace stripped and collapsed (the HTML rule for an option's value)."""
    import html
    import re

    select = re.search(r'<select id="f-server"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None
    values = []
    for attributes, text in re.findall(r"<option([^>]*)>([^<]*)</option>", select.group(1)):
        value = re.search(r'value="([^"]*)"', attributes)
        shown = html.unescape(value.group(1)) if value else " ".join(html.unescape(text).split())
        if shown:
            values.append(shown)
    return values


def test_every_server_name_the_page_offers_comes_back_as_a_filter_that_lists_its_records(
    tmp_path: Path,
) -> None:
    from mcp_elicit.client.names import cleaned_requester
    from mcp_elicit.client.ui_protocol import Requester

    long_cut = cleaned_requester(Requester(name="y" * 400 + "\x1b[1m", where="w")).name  # cut, then marked
    names = ["x" * 300, long_cut, "", "two  spaces", " leading", "line\nbreak", "plain"]
    path = tmp_path / "names.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many([event(i, name) for i, name in enumerate(names)])
    app = page_of(path)
    offered = offered_values(get(app))
    assert len(offered) == len(names)
    for value in offered:
        filtered = get(app, f"server={quote(value)}")
        assert len(re.findall(r'<tr id="rec-', filtered)) == 1, value
        assert value in offered_values(filtered)
