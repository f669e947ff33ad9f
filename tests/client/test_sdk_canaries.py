"""Canaries for every private SDK hook the client side relies on (`client/sdk.py`,
`client/sdk_transport.py`, `client/sdk_oauth.py`).

Each test fails with a message naming the hook, so an SDK upgrade that moves one says which and
where to look, instead of failing somewhere downstream.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from pydantic import ValidationError

from mcp_elicit.client import ElicitClient
from mcp_elicit.testing import ScriptedUI

SDK_TRANSPORT = "client/sdk_transport.py"
SDK_OAUTH = "client/sdk_oauth.py"
SDK = "client/sdk.py"


def hook(name: str, where: str) -> str:
    return f"SDK hook moved: {name} (used by {where}); adapt the boundary module and this canary"


def private_attribute(module: str, name: str, where: str) -> Any:
    try:
        found = importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - only when the SDK moves
        pytest.fail(f"{hook(f'{module}', where)}: {exc}")
    assert hasattr(found, name), hook(f"{module}.{name}", where)
    return getattr(found, name)


def test_the_sdk_http_timeouts_are_still_where_the_http_guard_reads_them() -> None:
    for name in ("MCP_DEFAULT_TIMEOUT", "MCP_DEFAULT_SSE_READ_TIMEOUT"):
        value = private_attribute("mcp.shared._httpx_utils", name, SDK_TRANSPORT)
        assert isinstance(value, int | float), hook(f"mcp.shared._httpx_utils.{name}", SDK_TRANSPORT)
        assert value > 0


def test_the_sdk_still_gives_its_listening_stream_up_after_as_many_failures_as_the_link_watch_counts() -> (
    None
):
    from mcp_elicit.client.http_watch import SDK_STREAM_ATTEMPTS

    value = private_attribute(
        "mcp.client.streamable_http", "MAX_RECONNECTION_ATTEMPTS", "client/http_watch.py"
    )
    assert value == SDK_STREAM_ATTEMPTS, hook(
        "mcp.client.streamable_http.MAX_RECONNECTION_ATTEMPTS", "LinkWatch"
    )


def test_the_sdk_default_bound_on_input_required_rounds_is_still_exported_privately() -> None:
    value = private_attribute("mcp.client._input_required", "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS", SDK)
    assert isinstance(value, int)
    assert value > 0
    from mcp.client import Client

    assert "input_required_max_rounds" in inspect.signature(Client).parameters, hook(
        "Client(input_required_max_rounds=...)", "client/url.py UrlMode.sdk_options"
    )


def test_the_session_still_builds_its_capabilities_in_one_overridable_method() -> None:
    from mcp.client import Client
    from mcp.client.session import ClientSession

    assert list(inspect.signature(ClientSession._build_capabilities).parameters) == ["self", "version"], hook(
        "ClientSession._build_capabilities(version)", "client/sdk.py KitClient"
    )
    assert list(inspect.signature(Client._build_session).parameters) == ["self", "exit_stack"], hook(
        "Client._build_session(exit_stack)", "client/sdk.py KitClient"
    )


@pytest.mark.anyio
async def test_a_form_only_client_still_declares_form_only_through_the_patched_builder() -> None:
    async with ElicitClient(MCPServer("canary"), ui=ScriptedUI()) as client:
        caps = client.sdk.session._build_capabilities(client.protocol_version)
    assert caps.elicitation is not None, hook("ClientSession._build_capabilities", "client/sdk.py KitClient")
    moved = hook("ClientSession._build_capabilities (the patch no longer takes effect)", SDK)
    assert caps.elicitation.form is not None, moved
    assert caps.elicitation.url is None, moved


def test_the_session_can_still_be_asked_who_the_server_is() -> None:
    from mcp.client.session import ClientSession

    assert callable(getattr(ClientSession, "send_request", None)), hook(
        "ClientSession.send_request", "client/sdk.py discover_identity"
    )
    assert callable(getattr(ClientSession, "adopt", None)), hook(
        "ClientSession.adopt", "client/sdk.py discover_identity"
    )


def test_the_dispatcher_still_reads_the_senders_context_off_the_read_stream() -> None:
    # The transport guard's read stream forwards `last_context`: that is how a question pushed over
    # HTTP is tied to the call it serves. If the dispatcher stops reading it, attribution degrades.
    dispatcher = importlib.import_module("mcp.shared.jsonrpc_dispatcher")
    assert '"last_context"' in inspect.getsource(dispatcher), hook(
        "jsonrpc_dispatcher reads read_stream.last_context", "client/sdk.py _GuardedReadStream"
    )


def test_the_stdio_transport_still_hands_an_unparseable_message_on_as_a_validation_error() -> None:
    # The transport guard answers a request the SDK could not validate: it finds it as the
    # ValidationError the transport sends down the read stream instead of a message.
    parse = private_attribute("mcp.client.stdio", "_parse_line", SDK)
    item = parse('{"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": "not an object"}')
    assert isinstance(item, ValidationError), hook("stdio_client passes parse failures on as values", SDK)


def test_the_sdk_oauth_provider_still_loads_storage_in_initialize_and_keeps_its_context() -> None:
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.oauth2 import OAuthContext

    assert inspect.iscoroutinefunction(getattr(OAuthClientProvider, "_initialize", None)), hook(
        "OAuthClientProvider._initialize", SDK_OAUTH
    )
    fields = set(OAuthContext.__dataclass_fields__)
    for name in ("token_expiry_time", "oauth_metadata", "current_tokens"):
        assert name in fields, hook(f"OAuthContext.{name}", SDK_OAUTH)


def test_the_sdk_oauth_flow_still_logs_its_failures_under_the_name_the_filter_drops() -> None:
    source = inspect.getsource(importlib.import_module("mcp.client.auth.oauth2"))
    assert 'logger.exception("OAuth flow error")' in source, hook("the OAuth flow's failure log", SDK_OAUTH)
    assert "logging.getLogger(__name__)" in source, hook("mcp.client.auth.oauth2's logger", SDK_OAUTH)


def test_the_sdk_http_transport_still_logs_a_message_it_cannot_hand_on_under_the_name_the_filter_drops() -> (
    None
):
    """`client/sdk_logs.py` drops this record when the cause is a closed read stream."""
    from mcp_elicit.client import sdk_logs

    source = inspect.getsource(importlib.import_module(sdk_logs.SDK_HTTP_LOGGER))
    where = "src/mcp_elicit/client/sdk_logs.py"
    assert f'logger.exception("{sdk_logs.SDK_SSE_FAILURE}")' in source, hook(
        "the SSE parse-failure log", where
    )
    assert "logging.getLogger(__name__)" in source, hook(f"{sdk_logs.SDK_HTTP_LOGGER}'s logger", where)


def test_the_sdk_http_transport_still_logs_its_sender_ending_under_the_name_the_filter_shortens() -> None:
    """`client/sdk_logs.py` makes this record one line when the server could not be reached."""
    from mcp_elicit.client import sdk_logs

    source = inspect.getsource(importlib.import_module(sdk_logs.SDK_HTTP_LOGGER))
    where = "src/mcp_elicit/client/sdk_logs.py"
    assert f'logger.exception("{sdk_logs.SDK_SENDER_FAILURE}")' in source, hook("the sender's log", where)


def test_the_sdk_http_transport_still_ends_a_request_whose_stream_ended_with_the_words_call_reads() -> None:
    """`client/sdk.py` `stream_ended` knows the SDK's error by its code and the start of its words."""
    from mcp_elicit.client import sdk, sdk_logs

    source = inspect.getsource(importlib.import_module(sdk_logs.SDK_HTTP_LOGGER))
    where = f"{SDK} stream_ended"
    assert f'"{sdk.SDK_STREAM_ENDED} without a response"' in source, hook("the stream-ended error", where)
    assert "code: int = CONNECTION_CLOSED" in source, hook("the stream-ended error's code", where)


@pytest.mark.anyio
async def test_the_sdk_still_starts_a_stdio_server_through_the_function_the_gateway_wraps() -> None:
    """`sdk_transport._note_spawns` wraps `mcp.client.stdio._create_platform_compatible_process`
    so the gateway can say an upstream's exit status; the SDK must still start servers through it."""
    import sys

    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcp_elicit.client.sdk_transport import Spawned, noting_spawns

    where = "client/sdk_transport.py _note_spawns (the gateway's upstream exit status)"
    wrapped = private_attribute("mcp.client.stdio", "_create_platform_compatible_process", where)
    assert getattr(wrapped, "mcp_elicit_noted", False), hook("_create_platform_compatible_process", where)
    box = Spawned()
    params = StdioServerParameters(command=sys.executable, args=["-c", "import sys; sys.exit(3)"])
    with noting_spawns(box):
        try:
            async with stdio_client(params) as (read, _):
                async for _ in read:  # the process exits at once: the stream ends
                    break
        except Exception:  # how the SDK reports a server gone at once is not the point here
            pass
    assert box.process is not None, hook("stdio_client -> _create_platform_compatible_process", where)


@pytest.mark.anyio
async def test_a_stdio_server_line_that_is_not_json_rpc_is_one_warning_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The SDK still logs such a line on `mcp.client.stdio` with that message (the hook
    `client/sdk_transport.py` rewrites into one warning), and it reaches the log as one line."""
    import logging
    import sys

    from mcp.client.stdio import StdioServerParameters, stdio_client

    import mcp_elicit.client.sdk_transport  # noqa: F401 - installs the filter

    code = "print('Starting my server v1.0', flush=True); import sys; sys.stdin.read()"
    params = StdioServerParameters(command=sys.executable, args=["-c", code])
    with caplog.at_level(logging.WARNING, logger="mcp.client.stdio"):
        async with stdio_client(params) as (read, _):
            with anyio.fail_after(30):
                got = await read.receive()  # the SDK hands the session the parse error, logged first
    assert isinstance(got, Exception)
    where = "client/sdk_transport.py _OneLineParseFailure"
    [record] = [r for r in caplog.records if r.name == "mcp.client.stdio"]
    assert record.exc_info is None, hook("mcp.client.stdio parse-failure log record", where)
    assert record.levelno == logging.WARNING
    assert record.args == ("Starting my server v1.0",)


def test_the_stdio_reader_still_decodes_stdout_through_the_name_the_line_bound_replaces() -> None:
    """`sdk_transport._BoundedText` replaces `mcp.client.stdio.TextReceiveStream`, so the bytes
    the reader takes pass `stdio_guard.bound_lines`; and the reader's drain must still read the
    process's own stdout (closed by the bound, it ends at once)."""
    from mcp_elicit.client import sdk_transport

    where = "client/sdk_transport.py _BoundedText (the bound on a stdio server's line)"
    found = private_attribute("mcp.client.stdio", "TextReceiveStream", where)
    assert found is sdk_transport._BoundedText, hook("mcp.client.stdio.TextReceiveStream", where)
    source = inspect.getsource(importlib.import_module("mcp.client.stdio"))
    assert "TextReceiveStream(process.stdout" in source, hook("stdio_client's text stream", where)
    assert "await process.stdout.receive()" in source, hook("_drain_stdout reads process.stdout", where)
