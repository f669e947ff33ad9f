"""Signing in to an MCP server that requires OAuth: the SDK's client flow against a real local
authorization server (the SDK's own server-side auth) and a protected MCP server over streamable
HTTP on 127.0.0.1. The browser is `FollowingBrowser` (an HTTP client following the redirects)."""

from __future__ import annotations

import functools
import io
import json
import logging
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from rich.console import Console

from mcp_elicit.cli.connect import ConnectSession, open_pipeline_client
from mcp_elicit.client import ElicitClient, OAuthLogin
from mcp_elicit.client.oauth import MAX_OAUTH_CALLBACK_REFUSALS, LoopbackCallback, TokenFile, link_printer
from mcp_elicit.errors import AuthorizationFailed, AuthProblem
from mcp_elicit.ui.scripted import ScriptedUI
from mcp_elicit.ui.terminal import injected_input
from tests.e2e.servers import serving_http
from tests.mcp_auth import FollowingBrowser, Provider, authorization_setup
from tests.peers.py_servers import build
from tests.support import text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def login(tmp_path: Path, opener: object, **options: object) -> OAuthLogin:
    return OAuthLogin(
        token_file=tmp_path / "state" / "tokens.json", opener=opener, say=lambda _: None, **options
    )  # type: ignore[arg-type]


async def book(url: str, oauth: OAuthLogin) -> str:
    async with ElicitClient(url, ui=ScriptedUI.accept_defaults(), oauth=oauth) as client:
        return text_of(await client.call_tool("book", {}))


async def test_the_first_run_signs_in_and_the_second_reuses_the_stored_token(tmp_path: Path) -> None:
    provider = Provider(user="alice")
    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        browser = FollowingBrowser(tg)
        first = await book(url, login(tmp_path, browser))
        second = await book(url, login(tmp_path, browser))
    assert first == second == "Booked for 2 (alice)."
    assert len(provider.authorize_requests) == 1  # the second run asked nobody
    assert provider.grants == ["authorization_code"]
    assert len(browser.opened) == 1
    assert browser.landed[0][0] == 200
    assert urlsplit(browser.landed[0][1]).hostname == "127.0.0.1"
    params = provider.authorize_requests[0]
    assert params.resource == url  # RFC 8707: the token is asked for this server
    assert str(params.redirect_uri).startswith("http://127.0.0.1:")


async def test_the_token_file_is_private_and_keyed_by_the_servers_url(tmp_path: Path) -> None:
    provider = Provider()
    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        oauth = login(tmp_path, FollowingBrowser(tg))
        await book(url, oauth)
    path = tmp_path / "state" / "tokens.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    entry = json.loads(path.read_text())["servers"][url]
    assert entry["tokens"]["access_token"] in provider.access
    assert entry["client_info"]["client_id"] in provider.clients
    assert entry["metadata"]["token_endpoint"].endswith("/token")


async def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text('{"servers": {}}')
    path.chmod(0o644)
    with pytest.raises(Exception, match="chmod 600") as caught:
        TokenFile(path).entry("https://mcp.example/mcp")
    assert type(caught.value).__name__ == "ConfigError"


async def test_a_token_that_expired_since_the_last_run_is_refreshed_without_asking(tmp_path: Path) -> None:
    provider = Provider()
    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        browser = FollowingBrowser(tg)
        await book(url, login(tmp_path, browser))
        provider.expire_all()
        TokenFile(tmp_path / "state" / "tokens.json").update(url, expires_at=1.0)
        again = await book(url, login(tmp_path, browser))
    assert again == "Booked for 2 (alice)."
    assert provider.grants == ["authorization_code", "refresh_token"]
    assert len(provider.authorize_requests) == 1


async def test_a_denied_authorization_ends_with_a_clear_error_and_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider = Provider(deny=True)
    caplog.set_level(logging.DEBUG)
    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        with pytest.raises(AuthorizationFailed) as caught:
            await book(url, login(tmp_path, FollowingBrowser(tg)))
    assert caught.value.reason is AuthProblem.DENIED
    assert caught.value.detail == "access_denied"
    assert caught.value.server == url
    assert not [r for r in caplog.records if r.exc_info]
    assert provider.grants == []


async def test_an_answer_with_a_foreign_state_is_refused_and_the_real_one_still_signs_in(
    tmp_path: Path,
) -> None:
    provider = Provider()
    foreign: list[int] = []

    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        real = FollowingBrowser(tg)

        async def attacker_first(link: str) -> None:
            callback = parse_qs(urlsplit(link).query)["redirect_uri"][0]

            async def race() -> None:
                async with httpx2.AsyncClient() as http:
                    forged = await http.get(callback, params={"code": "attacker-code", "state": "forged"})
                    missing = await http.get(callback, params={"code": "attacker-code"})
                foreign.extend([forged.status_code, missing.status_code])
                await real.follow(link)

            tg.start_soon(race)

        result = await book(url, login(tmp_path, attacker_first))
    assert foreign == [400, 400]
    assert result == "Booked for 2 (alice)."
    assert real.landed[0][0] == 200


async def test_nobody_coming_back_ends_the_sign_in_at_its_bound(tmp_path: Path) -> None:
    provider = Provider()

    async def nobody(link: str) -> None:
        return None

    async with authorization_setup(provider) as url:
        with pytest.raises(AuthorizationFailed) as caught:
            await book(url, login(tmp_path, nobody, callback_timeout=0.5))
    assert caught.value.reason is AuthProblem.TIMEOUT


async def test_asked_mode_leaves_a_server_without_auth_alone(tmp_path: Path) -> None:
    opened: list[str] = []

    async def browser(link: str) -> None:
        opened.append(link)

    async with serving_http(build("push")) as url:
        result = await book(url, login(tmp_path, browser, when="asked"))
    assert result == "Booked for 2."
    assert opened == []
    assert not (tmp_path / "state" / "tokens.json").exists()


async def test_asked_mode_signs_in_when_the_401_names_resource_metadata(tmp_path: Path) -> None:
    provider = Provider(user="bob")
    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        result = await book(url, login(tmp_path, FollowingBrowser(tg), when="asked"))
    assert result == "Booked for 2 (bob)."


async def test_with_no_browser_the_checked_link_is_shown_to_open_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_ELICIT_BROWSER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no xdg-open: headless
    shown, notices = io.StringIO(), []
    provider = Provider()
    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        browser = FollowingBrowser(tg)

        def show(link: str) -> None:
            link_printer(shown)(link)
            tg.start_soon(browser.follow, link)  # the person opens it on another device

        path = tmp_path / "tokens.json"
        oauth = OAuthLogin(token_file=path, show_link=show, say=notices.append)
        result = await book(url, oauth)
    assert result == "Booked for 2 (alice)."
    first, link = shown.getvalue().splitlines()
    assert first == "Open this link in a browser (on any device you trust):"
    assert urlsplit(link).path == "/authorize"
    redirect = parse_qs(urlsplit(link).query)["redirect_uri"][0]
    port = str(urlsplit(redirect).port)
    assert f"ssh -L {port}:127.0.0.1:{port}" in notices[0]


async def test_connect_signs_in_before_its_session_and_calls_the_tool(tmp_path: Path) -> None:
    provider = Provider(user="carol")
    out = Console(file=io.StringIO(), width=200, color_system=None, markup=False, highlight=False)
    async with authorization_setup(provider) as url, anyio.create_task_group() as tg:
        oauth = login(tmp_path, FollowingBrowser(tg))
        session = ConnectSession(
            url,
            console=out,
            read_line=injected_input(out, ["call book {}", "", "", "quit"]),
            opener=functools.partial(open_pipeline_client, oauth=oauth),
            url_mode=False,
        )
        code = await session.run()
    assert code == 0
    assert "Booked for 2 (carol)." in out.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "link", ["https://user:pw@auth.example/authorize?state=s", "http://auth.example/authorize?state=s"]
)
async def test_an_authorization_link_that_fails_the_url_check_is_never_opened(
    tmp_path: Path, link: str
) -> None:
    opened: list[str] = []

    async def browser(url: str) -> None:
        opened.append(url)

    callback = LoopbackCallback("https://mcp.example/mcp", login(tmp_path, browser))
    with pytest.raises(AuthorizationFailed) as caught:
        await callback.redirect(link)
    assert caught.value.reason is AuthProblem.BLOCKED_URL
    assert opened == []


async def test_the_callback_gives_up_after_too_many_refused_requests(tmp_path: Path) -> None:
    async def browser(url: str) -> None:
        return None

    callback = LoopbackCallback("https://mcp.example/mcp", login(tmp_path, browser))
    await callback.redirect("http://127.0.0.1:1/authorize?state=right")

    async def flood() -> None:
        async with httpx2.AsyncClient() as http:
            for _ in range(MAX_OAUTH_CALLBACK_REFUSALS):
                response = await http.get(callback.redirect_uri, params={"code": "c", "state": "wrong"})
                assert response.status_code == 400

    async with anyio.create_task_group() as tg:
        tg.start_soon(flood)
        with pytest.raises(AuthorizationFailed) as caught:
            await callback.wait()
    assert caught.value.reason is AuthProblem.FAILED
    assert callback.refused == MAX_OAUTH_CALLBACK_REFUSALS
