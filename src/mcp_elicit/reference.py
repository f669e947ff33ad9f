"""The reference server: realistic tools built only with mcp-elicit's public API.

`mcp-elicit serve-reference` runs it over stdio or streamable HTTP. It serves both
protocol eras at once: a 2025-11-25 client gets pushed `elicitation/create` requests, a
2026-07-28 client gets InputRequiredResult rounds, from the same tool code.
"""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, EmailStr, Field

from mcp_elicit.core.forms import Titles
from mcp_elicit.server import ElicitSettings, ask, confirm, install

__all__ = ["build_reference_server"]

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


def build_reference_server(settings: ElicitSettings | None = None) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        REFERENCE_SERVER_NAME,
        version="0.1.0",
        instructions="Reference server for mcp-elicit: tools that ask the person for input.",
    )
    install(server, settings)
    _add_realistic_tools(server)
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
