"""`mcp-elicit audit serve`: the consent trail in Chromium, filters, chain status and the chart."""

from __future__ import annotations

import collections
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.from_thread
import pytest

from mcp_elicit.apps.data.sample import ensure_sample
from mcp_elicit.audit.reading import open_reader as _open_audit_reader
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent, ServerIdentity
from mcp_elicit.ui.browser.audit_view import chart_of, serve_audit
from tests.apps.data.test_audit_chart import data_server_trail
from tests.ui.browser.test_end_to_end import _link_from

pytestmark = pytest.mark.browser

START = 1_800_000_000.0


def event(i: int, server: str, action: str, decided_by: str = "person", **changes: Any) -> ConsentEvent:
    fields: dict[str, Any] = {
        "time": START + 3600 * i,
        "side": "client",
        "mode": "form",
        "action": action,
        "decided_by": decided_by,
        "server": ServerIdentity(server, "1.0", "uvx " + server),
        "record_id": f"r{i}",
    }
    fields.update(changes)
    return ConsentEvent(**fields)


@pytest.fixture
def trail(tmp_path: Path) -> Path:
    path = tmp_path / "audit.sqlite3"
    hostile = "<script>window.pwned=1</script>evil"
    with SqliteAuditSink(path) as sink:
        sink.append_many(
            [
                event(0, "deployer", "accept"),
                event(1, "deployer", "decline"),
                event(2, "weather", "accept", "script"),
                event(3, hostile, "cancel", "timeout", reason="idle_timeout"),
                event(4, "deployer", "accept"),
                event(30, "weather", "cancel", "person"),
            ]
        )
    return path


@pytest.fixture
def audit_url(trail: Path) -> Iterator[str]:
    with anyio.from_thread.start_blocking_portal() as portal:
        opener = lambda: _open_audit_reader(str(trail), None, "t", None)  # noqa: E731
        future, url = portal.start_task(serve_audit, opener, trail.name)
        yield url
        future.cancel()


def test_the_audit_page_lists_filters_verifies_and_charts_the_trail(
    audit_url: str, page: Any, accessible: Any, screenshot: Any
) -> None:
    page.goto(audit_url)
    assert "Intact: 6 records" in page.locator("#chain-status").inner_text()
    assert page.locator("table.records tbody tr").count() == 6
    assert page.evaluate("window.pwned") is None
    assert page.locator("main script").count() == 0
    charts = page.locator("figure.server-chart")
    assert charts.count() == 3
    assert "deployer: 2 accepted, 1 declined, 0 cancelled" in charts.first.inner_text()
    assert page.locator("svg.chart rect.bar").count() >= 5
    accessible(page)
    screenshot(page, "audit")

    page.get_by_label("Server", exact=True).select_option("deployer")
    page.get_by_label("Action", exact=True).select_option("accept")
    page.get_by_role("button", name="Apply").click()
    assert page.locator("table.records tbody tr").count() == 2
    page.get_by_label("Server", exact=True).select_option("")
    page.get_by_label("Action", exact=True).select_option("")
    page.get_by_label("Decided by").select_option("timeout")
    page.get_by_role("button", name="Apply").click()
    assert page.locator("table.records tbody tr").count() == 1
    page.goto(audit_url + "?since=2027-01-16T00:00:00&decided_by=")
    assert page.locator("table.records tbody tr").count() == 1  # only the record 30 hours later
    page.goto(audit_url + "?since=yesterday-ish")
    assert page.locator("p.error").count() == 1


def test_a_broken_chain_is_shown_where_it_breaks(
    trail: Path, audit_url: str, page: Any, screenshot: Any
) -> None:
    conn = sqlite3.connect(trail)
    conn.execute(f"DELETE FROM {TABLE} WHERE id = 'r1'")
    conn.commit()
    conn.close()
    page.goto(audit_url)
    assert "Broken: 1 break" in page.locator("#chain-status").inner_text()
    assert "deleted" in page.locator("ol.breaks").inner_text()
    broken = page.locator("tr.broken")
    assert broken.count() == 1
    assert broken.get_attribute("id") == "rec-3"
    page.get_by_role("link", name="#3 (id r2)").click()  # the break's link leads to its row
    assert page.url.endswith("#rec-3")
    screenshot(page, "audit-broken")


def test_the_audit_page_is_read_only_and_guarded(audit_url: str, page: Any) -> None:
    response = page.request.post(audit_url, form={"x": "1"})
    assert response.status == 405
    root = urlsplit(audit_url)
    assert page.request.get(f"http://127.0.0.1:{root.port}/").status == 404
    assert page.request.get(audit_url, headers={"Host": "evil.example"}).status == 421


def test_the_chart_buckets_time_and_stacks_the_actions() -> None:
    def rec(time: str, server: str, action: str, decided_by: str) -> dict[str, Any]:
        return {"time": time, "server": {"name": server}, "action": action, "decided_by": decided_by}

    records = [
        rec("2027-01-15T08:00:00Z", "a", "accept", "person"),
        rec("2027-01-15T08:01:00Z", "a", "decline", "person"),
        rec("2027-01-15T08:01:00Z", "a", "decline", "policy"),
        rec("2027-01-15T09:00:00Z", "b", "cancel", "timeout"),
        rec("2027-01-15T09:00:00Z", "b", "error", "error"),
    ]
    chart = chart_of(records)
    assert chart is not None
    assert chart.step == "5 minutes"  # an hour in at most MAX_CHART_BUCKETS bars
    assert [s.server for s in chart.servers] == ["a", "b"]
    a = chart.servers[0]
    assert dict(a.totals) == {"accept": 1, "decline": 1, "cancel": 0}
    assert sum(b.height for b in a.bars) == pytest.approx(80)  # the busiest bucket fills the height
    assert [b.action for b in a.bars] == ["accept", "decline"]  # stacked in one bucket
    assert [b.height for b in chart.servers[1].bars] == [pytest.approx(40)]  # errors are not drawn
    # (nor the policy's decline: nobody was asked; the data server's own records: test_audit_chart.py)
    assert chart_of([]) is None
    later = chart_of([*records, rec("2027-01-25T08:00:00Z", "a", "accept", "person")])
    assert later is not None
    assert later.step == "day"


def test_the_page_counts_each_question_the_data_server_put_to_the_person_once(
    tmp_path: Path, page: Any
) -> None:
    trail = tmp_path / "audit.sqlite3"
    with anyio.from_thread.start_blocking_portal() as portal:
        with SqliteAuditSink(trail) as sink:  # the real server's trail (tests/apps/data/test_audit_chart.py)
            portal.call(data_server_trail, ensure_sample(tmp_path / "sample.duckdb"), sink)
        opener = lambda: _open_audit_reader(str(trail), None, "t", None)  # noqa: E731
        future, url = portal.start_task(serve_audit, opener, trail.name)
        try:
            page.goto(url)
            assert page.locator("table.records tbody tr").count() == 8  # every record, one per query
            chart = page.locator("figure.server-chart")
            assert chart.count() == 1
            assert "mcp-elicit-data: 1 accepted, 2 declined, 1 cancelled" in chart.inner_text()
            drawn: collections.Counter[str] = collections.Counter()
            for title in chart.locator("rect.bar title").all_text_contents():  # "<when>: <n> <action>"
                n, action = title.rsplit(": ", 1)[1].split(" ")
                drawn[action] += int(n)
            assert drawn == {"accept": 1, "decline": 2, "cancel": 1}
            assert page.locator("#chart-counts").is_visible()
            page.get_by_label("Decided by").select_option("policy")
            page.get_by_role("button", name="Apply").click()
            assert page.locator("table.records tbody tr").count() == 4
            assert page.locator("figure.server-chart").count() == 0  # the guard's decisions are no answers
        finally:
            future.cancel()


def test_audit_serve_prints_its_link_and_serves_the_page(trail: Path, page: Any) -> None:
    command = [sys.executable, "-m", "mcp_elicit", "audit", "serve", "--db", str(trail)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        page.goto(_link_from(process))
        assert "Intact: 6 records" in page.locator("#chain-status").inner_text()
    finally:
        process.terminate()
        process.communicate(timeout=20)
