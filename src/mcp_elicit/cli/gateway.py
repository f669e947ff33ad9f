"""`mcp-elicit gateway`: front the servers of an `mcpServers` file, relaying every question checked."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import click

from mcp_elicit.cli.listen import bind_listener
from mcp_elicit.cli.serving import plain_logs
from mcp_elicit.errors import AuditWriteError, ConfigError

if TYPE_CHECKING:
    from mcp_elicit.config import AuditConfig

logger = logging.getLogger("mcp_elicit.gateway")


def log_to_stderr() -> None:
    """The gateway's own INFO lines on stderr, one plain line each; the HTTP clients' only from
    WARNING up (`cli/serving.py`)."""
    plain_logs(logging.INFO)


def audit_trail_line(trail: AuditConfig) -> str:
    """The start-up line saying where the consent records go (a client that starts the gateway
    with its own HOME moves the default trail): the file, the PostgreSQL table, or no trail.
    A PostgreSQL URL is shown without its user and password."""
    from urllib.parse import urlsplit

    from mcp_elicit.config import audit_location

    if trail.level == "none":
        return 'audit trail: none (the configuration\'s [audit] level is "none")'
    where = audit_location(trail)
    if trail.sink == "postgres":
        url = urlsplit(where)
        host = url.hostname or "local socket"
        at = f"{host}:{url.port}" if url.port else host
        return f"audit trail: PostgreSQL table {trail.table} on {at}{url.path} (level {trail.level})"
    kind = "JSON Lines file" if trail.sink == "jsonl" else "SQLite file"
    return f"audit trail: {kind} {Path(where).resolve()} (level {trail.level})"


def replicas_line(url: str, prefix: str) -> str:
    """The one line saying that 2026-07-28 rounds are shared with other replicas, and through
    which Redis (no credentials)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    at = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname or "local socket"
    return f"replicas: rounds shared through Redis at {at}{parts.path} (key prefix {prefix!r})"


# The highest TCP port (ports are 16-bit); 0 asks the system for a free one.
_HIGHEST_PORT: Final = 65535


def _listen(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    """`--listen HOST:PORT` as (host, port): a loopback host and a port from 0 to 65535, else a
    usage error (exit 2) naming what was given, before anything starts."""
    if value is None:
        return None
    host, _, port = value.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
        raise click.BadParameter(
            f"{value!r}: give 127.0.0.1:PORT (the gateway listens on loopback only: "
            "127.0.0.1, localhost or [::1])"
        )
    if not port.isascii() or not port.isdigit() or int(port) > _HIGHEST_PORT:
        raise click.BadParameter(
            f"{value!r}: the port {port!r} is not a number from 0 to {_HIGHEST_PORT} (0: a free one)"
        )
    return host.strip("[]"), int(port)


def _replica_settings(env: Mapping[str, str]) -> tuple[str, str, list[bytes]] | None:
    """(Redis URL, key prefix, shared state keys) when replicas share state; the same settings
    as the reference server's."""
    from mcp_elicit.reference import REDIS_PREFIX_ENV, REDIS_URL_ENV, STATE_KEYS_ENV, reference_state_keys

    if not env.get(REDIS_URL_ENV):
        return None
    keys = reference_state_keys(env)
    if keys is None:
        raise ConfigError(STATE_KEYS_ENV, "replicas on Redis need shared keys (or MCP_ELICIT_HANDOFF_SECRET)")
    return env[REDIS_URL_ENV], env.get(REDIS_PREFIX_ENV, "mcp-elicit:"), keys


def _shared_state(url: str, prefix: str, keys: list[bytes]) -> Any:
    from mcp_elicit.extras import missing
    from mcp_elicit.gateway.shared_state import SharedState, connect

    try:
        commands, listener = connect(url)
    except ModuleNotFoundError as exc:  # the `redis` extra
        raise missing("redis", exc) from exc
    return SharedState(commands, keys, prefix=prefix, listener=listener)


def _unreachable(replicas: object) -> tuple[type[Exception], ...]:
    """What an unreachable Redis raises at start (nothing to catch without replicas)."""
    if replicas is None:
        return ()
    from redis.exceptions import RedisError

    return (RedisError, TimeoutError)


@click.command("gateway")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="mcpServers JSON: stdio servers (command/args/env), HTTP servers (url/headers).",
)
@click.option(
    "--listen",
    default=None,
    callback=_listen,
    help="Serve streamable HTTP at http://127.0.0.1:PORT/mcp (else stdio); PORT 0: a free one.",
)
@click.option(
    "--elicit-config",
    default=None,
    type=click.Path(dir_okay=False, exists=True),
    help="mcp-elicit TOML (policy, rate limits, audit sink); default: no policy, the default trail.",
)
def gateway_command(config_path: str, listen: tuple[str, int] | None, elicit_config: str | None) -> None:
    """Relay upstream servers' tools; every question through the guardrails to the caller.

    Ctrl-C or SIGTERM stops it (over stdio as the client closing stdin would, over HTTP once open
    requests end) and exits 130 or 143; a second one stops it at once. A bad --config or
    --elicit-config file is a usage error (exit 2).

    Replicas behind one address: set MCP_ELICIT_REDIS_URL (and MCP_ELICIT_REDIS_PREFIX) and the same
    MCP_ELICIT_STATE_KEYS or MCP_ELICIT_HANDOFF_SECRET on every replica (docs/gateway.md)."""
    from mcp_elicit.config import load_config, open_audit_sink
    from mcp_elicit.gateway import Gateway, parse_config

    log_to_stderr()
    try:
        config = parse_config(Path(config_path).read_text(encoding="utf-8"))
        settings = load_config(elicit_config) if elicit_config is not None else None
        # Every relayed question leaves a consent record, as with `call` and `connect`: without
        # --elicit-config on the default trail. A policy only comes from a file named here: the
        # person answering the relayed form is already asked, so no "ask first" step by default.
        trail = settings.audit if settings is not None else load_config().audit
        replicas = _replica_settings(os.environ)
    except ConfigError as exc:  # a file the command line named is wrong: as click says of options
        raise click.UsageError(str(exc)) from None
    where = listen
    sock = bind_listener(*where) if where is not None else None  # a port in use: said before starting
    try:
        audit = open_audit_sink(trail) if trail.level != "none" else None
    except (ConfigError, AuditWriteError) as exc:  # ConfigError: no $MCP_ELICIT_AUDIT_KEY
        if sock is not None:
            sock.close()
        raise (click.UsageError if isinstance(exc, ConfigError) else click.ClickException)(str(exc)) from None
    logger.info("%s", audit_trail_line(trail))
    if config.disabled:
        logger.info('upstreams left out ("disabled": true in the file): %s', ", ".join(config.disabled))
    if replicas is not None:
        logger.info("%s", replicas_line(*replicas[:2]))

    def started(port: int) -> None:
        from mcp_elicit.gateway.auth import mcp_url

        host = where[0] if where is not None else "127.0.0.1"
        click.echo(f"mcp-elicit gateway: {mcp_url(host, port)}", err=True)  # where a client reaches it

    async def serve(stop: anyio.Event, browser: Any = None) -> None:
        policy = settings.policy if settings is not None else None
        shared = _shared_state(*replicas) if replicas is not None else None
        async with Gateway(config, policy=policy, audit=audit, browser=browser, shared=shared) as gw:
            if where is None:
                await gw.serve_stdio(stop)
            else:
                await gw.serve_http(where[0], where[1], started=started, stop=stop, sock=sock)
            await gw.end_held_calls()  # cancelled upstream first, not cut by the upstreams' stop
            for pool in gw.pools.values():
                pool.stop()

    async def run(stop: anyio.Event) -> None:
        if not any(u.no_elicitation == "browser" for u in config.upstreams):
            await serve(stop)
            return
        from mcp_elicit.ui.browser.app import BrowserUI  # a server asks here when the client cannot

        async with BrowserUI() as ui:
            click.echo(f"mcp-elicit gateway: questions the client cannot show appear at {ui.url}", err=True)
            await serve(stop, ui)

    from mcp_elicit.server.heap import freeze_startup_heap
    from mcp_elicit.server.signals import run_until_signalled

    freeze_startup_heap()  # a long-running relay: full collections skip what start-up made
    try:
        run_until_signalled(run, logger)  # SystemExit(130 or 143) after a signal
    except _unreachable(replicas) as exc:  # Redis (replicas) unreachable at start
        raise click.ClickException(f"cannot reach Redis for the replicas' shared state: {exc}") from None
    finally:
        if audit is not None:
            audit.close()
