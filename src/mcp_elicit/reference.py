"""The reference server: realistic tools built only with mcp-elicit's public API.

`mcp-elicit serve-reference` runs it over stdio or streamable HTTP. It serves both
protocol eras at once: a 2025-11-25 client gets pushed `elicitation/create` requests, a
2026-07-28 client gets InputRequiredResult rounds, from the same tool code.

URL hand-offs are configured from the environment by `reference_handoffs()`. Over HTTP the pages
live on the server's own HTTP app; over stdio (`build_reference_server(stdio=True)`, which
`serve-reference --transport stdio` uses) they are served on a loopback listener of the server's
own (MCP_ELICIT_PAGES_LISTEN, default 127.0.0.1 on a free port) unless a public base URL is set.
Settings: MCP_ELICIT_VAULT_KEYS (else a throwaway key),
MCP_ELICIT_PUBLIC_BASE_URL (else the loopback origin of each request), MCP_ELICIT_DEV_USER (the
development identity, default "local-dev", used when no MCP authorization is configured; it only
serves browsers on loopback) and, to enable the OAuth tool, MCP_ELICIT_REFERENCE_OAUTH_AUTHORIZE_URL,
_TOKEN_URL, _CLIENT_ID, optional _CLIENT_SECRET and _SCOPE.

Several replicas behind one address share their hand-off state through Redis: set
MCP_ELICIT_REDIS_URL (hand-off records, completion signals and the vault rows), the same
MCP_ELICIT_HANDOFF_SECRET (at least 32 bytes: signs links and CSRF tokens) and the same
MCP_ELICIT_VAULT_KEYS on every replica. A page then finishes on any replica and the waiting tool
on another one continues.

A 2026-07-28 call continues on another replica, or after a restart, too: with
MCP_ELICIT_REDIS_URL the single-use nonces of `requestState` live in Redis (`RedisReplayGuard`),
and `requestState` is sealed with keys every replica shares: MCP_ELICIT_STATE_KEYS (comma-
separated hex keys of at least `MIN_STATE_KEY_BYTES` bytes, the first seals, all unseal), else
a key derived from MCP_ELICIT_HANDOFF_SECRET (HMAC-SHA256 under a label of its own), else a key
of this process only.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import hmac
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, EmailStr, Field

from mcp_elicit.core.forms import Titles
from mcp_elicit.errors import ConfigError
from mcp_elicit.extras import missing
from mcp_elicit.server import (
    ApiKeyHandoff,
    ElicitSettings,
    Handoffs,
    IdentityPolicy,
    KeyRing,
    OAuthClient,
    OAuthHandoff,
    TokenVault,
    ask,
    confirm,
    credential,
    handoff,
    install,
    require,
)
from mcp_elicit.server.stores import RedisHandoffStore
from mcp_elicit.server.vault import VAULT_KEYS_ENV, RedisVaultStorage

if TYPE_CHECKING:
    from mcp_elicit.audit.base import AuditSink

REDIS_URL_ENV = "MCP_ELICIT_REDIS_URL"
REDIS_PREFIX_ENV = "MCP_ELICIT_REDIS_PREFIX"
HANDOFF_SECRET_ENV = "MCP_ELICIT_HANDOFF_SECRET"  # noqa: S105 - an environment variable name
STATE_KEYS_ENV = "MCP_ELICIT_STATE_KEYS"
# AES-256 keys for requestState sealing: the SDK's boundary derives its key from these bytes.
MIN_STATE_KEY_BYTES = 32
_STATE_KEY_LABEL = b"mcp-elicit/request-state/1"

__all__ = ["EXAMPLE_API", "build_reference_server", "reference_handoffs"]

logger = logging.getLogger("mcp_elicit.reference")

REFERENCE_SERVER_NAME = "mcp-elicit-reference"


class Region(enum.Enum):
    EU_WEST = "eu-west"
    US_EAST = "us-east"
    AP_SOUTH = "ap-south"


REGION_TITLES = {
    "eu-west": "Europe (Ireland)",
    "us-east": "US East (Virginia)",
    "ap-south": "Asia Pacific (Mumbai)",
}


class DeployTarget(BaseModel):
    environment: Literal["staging", "production"] = Field(title="Environment")
    region: Annotated[Region, Titles(REGION_TITLES)] = Field(Region.EU_WEST, title="Region")
    replicas: int = Field(2, ge=1, le=20, title="Replicas", description="Instances to run")


class Account(BaseModel):
    username: str = Field(title="Username", min_length=3, max_length=32)
    email: EmailStr = Field(title="Email address")


class Topic(enum.Enum):
    RELEASES = "releases"
    SECURITY = "security"
    EVENTS = "events"


class Preferences(BaseModel):
    newsletter: bool = Field(False, title="Send me the newsletter")
    topics: set[Topic] = Field(default_factory=set, title="Topics", description="What to hear about")
    birthday: datetime.date | None = Field(None, title="Birthday")


class Reader(BaseModel):
    name: str = Field(title="Your name", max_length=80)


def reference_state_keys(environ: Mapping[str, str] | None = None) -> list[bytes] | None:
    """The shared `requestState` sealing keys from the environment, None for a per-process key."""
    env = os.environ if environ is None else environ
    if env.get(STATE_KEYS_ENV):
        try:
            keys = [bytes.fromhex(k.strip()) for k in env[STATE_KEYS_ENV].split(",")]
        except ValueError as exc:
            raise ConfigError(STATE_KEYS_ENV, "each key must be hex") from exc
        if any(len(k) < MIN_STATE_KEY_BYTES for k in keys):
            raise ConfigError(STATE_KEYS_ENV, f"each key needs at least {MIN_STATE_KEY_BYTES} bytes")
        return keys
    secret = env.get(HANDOFF_SECRET_ENV)
    if secret:
        return [hmac.new(secret.encode(), _STATE_KEY_LABEL, hashlib.sha256).digest()]
    return None


def _shared_replay_guard(env: Mapping[str, str]) -> Any | None:
    if not env.get(REDIS_URL_ENV):
        return None
    try:
        import redis.asyncio
    except ModuleNotFoundError as exc:  # the `redis` extra
        raise missing("redis", exc) from exc

    from mcp_elicit.server import RedisReplayGuard

    prefix = env.get(REDIS_PREFIX_ENV, "mcp-elicit:")
    return RedisReplayGuard(redis.asyncio.from_url(env[REDIS_URL_ENV]), prefix=f"{prefix}nonce:")


PAGES_LISTEN_ENV = "MCP_ELICIT_PAGES_LISTEN"


def build_reference_server(
    settings: ElicitSettings | None = None, *, stdio: bool = False, audit: AuditSink | None = None
) -> MCPServer[Any]:
    """The reference server. It keeps no consent trail unless `audit` (or `settings.audit`) is a
    sink: `serve-reference --audit-db FILE` passes a SQLite one."""
    from mcp.server.request_state import RequestStateSecurity

    keys = reference_state_keys()
    server: MCPServer[Any] = MCPServer(
        REFERENCE_SERVER_NAME,
        version="0.1.0",
        instructions="Reference server for mcp-elicit: tools that ask the person for input.",
        request_state_security=None if keys is None else RequestStateSecurity(keys=keys),
    )
    if settings is None:
        guard = _shared_replay_guard(os.environ)
        settings = ElicitSettings() if guard is None else ElicitSettings(replay_guard=guard)
    if audit is not None:
        settings = dataclasses.replace(settings, audit=audit)
    if settings.handoffs is None:
        settings = dataclasses.replace(settings, handoffs=reference_handoffs(stdio=stdio))
    install(server, settings)
    _add_realistic_tools(server)
    _add_handoff_tools(server, settings.handoffs)
    from mcp_elicit.conformance_tools import add_conformance_tools

    add_conformance_tools(server)
    return server


def _add_realistic_tools(server: MCPServer[Any]) -> None:
    @server.tool(description="Deploy a service: asks where to, then confirms before production.")
    async def deploy(ctx: Context, service: str) -> str:
        target = await ask(ctx, f"Where should {service} be deployed?", DeployTarget)
        if not target.accepted or target.data is None:
            return f"Nothing deployed ({target.action})."
        where = (
            f"{target.data.environment} in {target.data.region.value} with {target.data.replicas} replicas"
        )
        if target.data.environment == "production" and not await confirm(
            ctx, f"Deploy {service} to {where}? This affects live traffic."
        ):
            return "Deployment stopped before production."
        return f"Deployed {service} to {where}."

    @server.tool(description="Sign up for an account in three steps.")
    async def signup(ctx: Context) -> str:
        account = await ask(ctx, "Step 1 of 3: choose your account name.", Account)
        if not account.accepted or account.data is None:
            return f"Signup stopped at step 1 ({account.action})."
        prefs = await ask(ctx, f"Step 2 of 3: preferences for {account.data.username}.", Preferences)
        if not prefs.accepted or prefs.data is None:
            return f"Signup stopped at step 2 ({prefs.action})."
        topics = ", ".join(sorted(t.value for t in prefs.data.topics)) or "none"
        if not await confirm(ctx, f"Step 3 of 3: create {account.data.username} <{account.data.email}>?"):
            return "Signup stopped at step 3."
        who = f"{account.data.username} <{account.data.email}>"
        return f"Created {who}; newsletter={prefs.data.newsletter}; topics={topics}."

    @server.prompt(description="A greeting that asks who is reading.")
    async def greeting(ctx: Context) -> str:
        reader = await ask(ctx, "Who is reading?", Reader)
        name = reader.data.name if reader.accepted and reader.data else "friend"
        return f"Write a short, warm greeting for {name}."

    @server.resource("notes://{topic}", description="A note that asks who it is for.")
    async def note(topic: str, ctx: Context) -> str:
        reader = await ask(ctx, f"Who is the note on {topic} for?", Reader)
        name = reader.data.name if reader.accepted and reader.data else "someone"
        return f"A note on {topic}, for {name}."


# The service the hand-off tools connect to: any key works, the server never calls out.
EXAMPLE_API = ApiKeyHandoff(
    provider="example-api",
    title="Example API",
    help="Any value works on the reference server; it is kept encrypted on the server.",
)
_OAUTH_ENV = "MCP_ELICIT_REFERENCE_OAUTH_"


def _oauth_flow(environ: Mapping[str, str]) -> OAuthHandoff | None:
    """The OAuth flow, when its endpoints and client are configured (nothing works offline otherwise)."""

    def get(name: str) -> str | None:
        return environ.get(_OAUTH_ENV + name) or None

    authorize_url, token_url, client_id = get("AUTHORIZE_URL"), get("TOKEN_URL"), get("CLIENT_ID")
    if not (authorize_url and token_url and client_id):
        return None
    client = OAuthClient(
        authorize_url=authorize_url,
        token_url=token_url,
        client_id=client_id,
        client_secret=get("CLIENT_SECRET"),
        scope=get("SCOPE"),
    )
    return OAuthHandoff(provider=get("PROVIDER") or "example-oauth", client=client, title="Example account")


def reference_handoffs(environ: Mapping[str, str] | None = None, *, stdio: bool = False) -> Handoffs:
    """The reference server's hand-off settings, from the environment (see the module docstring)."""
    env = os.environ if environ is None else environ
    public = env.get("MCP_ELICIT_PUBLIC_BASE_URL") or None
    listen = env.get(PAGES_LISTEN_ENV) or ("127.0.0.1:0" if stdio and public is None else None)
    if env.get(VAULT_KEYS_ENV):
        keys = KeyRing.from_env(environ=env)
    else:
        keys = KeyRing.generate()
        logger.info(
            "no %s: the vault uses a throwaway key (connections end with the process)", VAULT_KEYS_ENV
        )
    oauth = _oauth_flow(env)
    shared: dict[str, Any] = {}
    vault_storage = None
    if env.get(REDIS_URL_ENV):
        try:
            import redis.asyncio
        except ModuleNotFoundError as exc:  # the `redis` extra
            raise missing("redis", exc) from exc

        client = redis.asyncio.from_url(env[REDIS_URL_ENV])
        prefix = env.get(REDIS_PREFIX_ENV, "mcp-elicit:")
        shared["store"] = RedisHandoffStore(client, prefix=f"{prefix}handoff:")
        vault_storage = RedisVaultStorage(client, prefix=f"{prefix}vault:")
    if env.get(HANDOFF_SECRET_ENV):
        shared["secret"] = env[HANDOFF_SECRET_ENV]
    return Handoffs(
        vault=TokenVault(keys, vault_storage),
        identity=IdentityPolicy(dev_user=env.get("MCP_ELICIT_DEV_USER", "local-dev")),
        public_base_url=public,
        pages_listen=listen,
        flows=[EXAMPLE_API] + ([oauth] if oauth is not None else []),
        **shared,
    )


def _add_handoff_tools(server: MCPServer[Any], handoffs: Handoffs) -> None:
    @server.tool(
        description="Connect the Example API: opens a page on this server where you paste your API key. "
        "The key stays on the server; the tool only says whether it is connected."
    )
    async def connect_service(ctx: Context) -> str:
        result = await handoff(ctx, "Paste your Example API key on this server's page.", EXAMPLE_API)
        if not result.completed:
            return f"Example API not connected ({result.action})."
        return "Connected to Example API."

    @server.tool(
        description="Example API account status. Refuses until the Example API is connected: -32042 on "
        "2025-11-25 (retry after the page), an input request on 2026-07-28."
    )
    async def service_status(ctx: Context) -> str:
        await require(ctx, EXAMPLE_API, fail_fast=True)
        key = await credential(ctx, EXAMPLE_API.provider)
        return "Example API: connected, 3 projects." if key is not None else "Example API: not connected."

    oauth = next((f for f in handoffs.flows if isinstance(f, OAuthHandoff)), None)
    if oauth is None:
        return

    @server.tool(description=f"Connect your {oauth.display_name} with OAuth (the tokens stay on the server).")
    async def connect_account(ctx: Context) -> str:
        result = await handoff(ctx, f"Sign in to connect your {oauth.display_name}.", oauth)
        return f"{oauth.display_name} connected." if result.completed else f"Not connected ({result.action})."
