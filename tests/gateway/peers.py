"""Upstream peers for the gateway tests, run as stdio subprocesses: `python peers.py sdk|fastmcp`
(`python peers.py sdk http [PORT]` serves the raw-SDK one over streamable HTTP, on a free port or
`PORT`, and prints its URL; the port is shared (SO_REUSEPORT), so a second one can start on it
before the first is killed: a restart on the same address with no gap).

The raw-SDK server pushes with `ctx.elicit` / `ctx.elicit_url` (what most servers do today);
the FastMCP server does the same with FastMCP's `ctx.elicit` (`book_table` with a dataclass form, as
FastMCP users write it), and offers a resource template
(`fm://greetings/{name}`, saying the `PEER_LABEL` of its environment) and a prompt whose
argument is required (`summary`); the raw-SDK one a prompt that fails without an answer
(`strict`); over HTTP it is served as through a proxy that can hiccup (`blip`, `Blip`), and
that never answers the request ending a session (DELETE) when `PEER_HANG_DELETE` is set.
`python peers.py proxy FILE [http]`
is FastMCP's own proxy (`create_proxy`) over the same `mcpServers` file, the gateway people use
today, for the side-by-side tests; over HTTP it prints its URL once listening.
"""

import os
import sys
from dataclasses import dataclass

from pydantic import BaseModel, Field


class Name(BaseModel):
    name: str = Field(description="Your name")


class Login(BaseModel):
    username: str
    password: str = Field(description="Your password")


def sdk_server() -> None:
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("sdk-peer")

    @server.tool(description="Greets whoever answers.")
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", Name)
        return f"hello {answer.data.name}" if answer.action == "accept" and answer.data else answer.action

    @server.prompt(description="Asks who is reading; fails the request without an answer.")
    async def strict(ctx: Context) -> str:
        answer = await ctx.elicit("Who is reading?", Name)
        if answer.action != "accept" or answer.data is None:
            raise ValueError(f"strict needs a reader ({answer.action})")
        return f"Greet {answer.data.name}."

    @server.tool(description="Asks for a password in a form (a secret-seeking form).")
    async def login(ctx: Context) -> str:
        answer = await ctx.elicit("Log in to continue", Login)
        return f"login {answer.action}"

    @server.tool(description="Asks the same question many times (a flood).")
    async def flood(ctx: Context, times: int = 12) -> str:
        actions = [(await ctx.elicit(f"Question {i}?", Name)).action for i in range(times)]
        return ",".join(actions)

    @server.tool(description="Sends a look-alike URL.")
    async def lookalike(ctx: Context) -> str:
        answer = await ctx.elicit_url("Sign in", "https://xn--pypl-53dc.com/login", "lookalike-1")
        return f"url {answer.action}"

    @server.tool(description="Sends a sign-in page, then says it is done.")
    async def signin(ctx: Context) -> str:
        answer = await ctx.elicit_url("Sign in to continue", "https://example.com/login", "upstream-1")
        if answer.action == "accept":
            await ctx.session.send_elicit_complete("upstream-1", related_request_id=ctx.request_id)
        return f"signin {answer.action}"

    @server.tool(description="This server process's id (shows whether a front keeps the process).")
    async def process_id() -> str:
        return str(os.getpid())

    pages_done: set[str] = set()
    sessions: list[object] = []

    @server.tool(description="Needs a page first: answers -32042 until the page is finished.")
    async def need_page(ctx: Context) -> str:
        from mcp.shared.exceptions import UrlElicitationRequiredError
        from mcp_types import ElicitRequestURLParams

        if "page-1" in pages_done:
            return "page done"
        sessions.append(ctx.session)
        page = ElicitRequestURLParams(
            mode="url",
            message="Authorize first",
            url="https://example.com/authorize",
            elicitation_id="page-1",
        )
        raise UrlElicitationRequiredError([page])

    @server.tool(description="Finishes the page need_page waits for (what the page's server would do).")
    async def finish_page(ctx: Context) -> str:
        pages_done.add("page-1")
        for session in sessions:
            await session.send_elicit_complete("page-1")  # type: ignore[attr-defined]
        return "finished"

    cancelled: dict[str, object] = {}

    @server.tool(description="Reports three steps of progress, then finishes.")
    async def work(ctx: Context) -> str:
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return "worked"

    @server.tool(description="Works until cancelled (says it started as progress); remembers a cancel.")
    async def slow(ctx: Context) -> str:
        import anyio

        cancelled.setdefault("event", anyio.Event())
        await ctx.report_progress(0, None, "started")
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled["event"].set()  # type: ignore[attr-defined]
            raise
        return "never"

    @server.tool(description="Whether `slow` was cancelled: waits for it, at most 20 seconds.")
    async def was_cancelled(ctx: Context) -> str:
        import anyio

        event = cancelled.setdefault("event", anyio.Event())
        with anyio.move_on_after(20):
            await event.wait()  # type: ignore[attr-defined]
            return "cancelled"
        return "not cancelled"

    proxy = Blip()

    @server.tool(description="A proxy's hiccup: its GET streams end, the next two GETs answer 503.")
    async def blip() -> str:
        proxy.hiccup()
        return "blipped"

    @server.tool(description="How many GET (server-to-client) streams are open now.")
    async def listening() -> str:
        return str(proxy.open)

    if sys.argv[2:3] == ["http"]:
        proxy.app = server.streamable_http_app()
        serve_http(proxy, int(sys.argv[3]) if sys.argv[3:] else 0)
    else:
        server.run("stdio")


class Blip:
    """ASGI: the app as served through a proxy that can hiccup (`hiccup`): each open GET stream
    (the server-to-client one) ends, as a proxy's reload ends it, and the next two GETs answer 503
    while it comes back. `open` counts the GET streams open now."""

    def __init__(self) -> None:
        self.app: object = None  # set once the server's tools are in
        self.open = 0
        self.refusals = 0
        self._cut: object = None

    def hiccup(self) -> None:
        self.refusals = 2
        if self._cut is not None:
            self._cut.set()  # type: ignore[attr-defined]
            self._cut = None

    async def __call__(self, scope: dict, receive: object, send: object) -> None:
        import anyio

        if scope["type"] == "http" and scope["method"] == "DELETE" and os.environ.get("PEER_HANG_DELETE"):
            await anyio.sleep_forever()  # the end of a session, never answered
        if scope["type"] != "http" or scope["method"] != "GET":
            return await self.app(scope, receive, send)  # type: ignore[operator]
        if self.refusals:
            self.refusals -= 1
            await send({"type": "http.response.start", "status": 503, "headers": []})  # type: ignore[operator]
            return await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]
        if self._cut is None:
            self._cut = anyio.Event()
        cut, state = self._cut, {"started": False, "ended": False}

        async def guarded(message: dict) -> None:
            if not state["ended"]:
                state["started"] = True
                await send(message)  # type: ignore[operator]

        self.open += 1
        try:
            async with anyio.create_task_group() as tg:

                async def end() -> None:
                    await cut.wait()  # type: ignore[attr-defined]
                    state["ended"] = True
                    if state["started"]:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})  # type: ignore[operator]
                    tg.cancel_scope.cancel()

                tg.start_soon(end)
                await self.app(scope, receive, guarded)  # type: ignore[operator]
                tg.cancel_scope.cancel()
        finally:
            self.open -= 1


def serve_http(app: object, port: int = 0) -> None:
    """Streamable HTTP on a loopback port (0: a free one), printing its URL once the socket listens."""
    import socket

    import uvicorn

    # listening already: the URL is good at once
    sock = socket.create_server(("127.0.0.1", port), reuse_port=sys.platform == "linux")
    print(f"listening http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])  # type: ignore[arg-type]


@dataclass
class Booking:
    name: str
    seats: int = 2


def fastmcp_server() -> None:
    from fastmcp import Context, FastMCP

    server = FastMCP("fastmcp-peer")

    @server.tool(description="Greets whoever answers (FastMCP).")
    async def hello(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", Name)
        return f"hello {answer.data.name}" if answer.action == "accept" else answer.action

    @server.tool(description="Books a table: asks who and how many (a dataclass form, FastMCP).")
    async def book_table(ctx: Context) -> str:
        answer = await ctx.elicit("Booking at Luigi: who and how many?", response_type=Booking)
        if answer.action == "accept":
            return f"Booked {answer.data.name} x{answer.data.seats}."
        return f"No booking ({answer.action})."

    @server.resource("fm://greetings/{name}", description="A greeting for anyone (a resource template).")
    def greeting(name: str) -> str:
        return f"greetings, {name}, from {os.environ.get('PEER_LABEL', 'fm')}"

    @server.prompt(description="A summary of a topic (the topic is required).")
    def summary(topic: str) -> str:
        return f"Summarise {topic}."

    if sys.argv[2:] == ["sse"]:  # only the older HTTP+SSE transport (`"type": "sse"` in a file)
        serve_http(server.http_app(path="/mcp", transport="sse"))
    else:
        server.run("stdio", show_banner=False)


def fastmcp_proxy() -> None:
    import json
    from pathlib import Path

    from fastmcp.server import create_proxy

    proxy = create_proxy(json.loads(Path(sys.argv[2]).read_text()), name="fastmcp-proxy")
    if sys.argv[3:] == ["http"]:
        serve_http(proxy.http_app(path="/mcp"))
    else:
        proxy.run("stdio", show_banner=False)


if __name__ == "__main__":
    {"sdk": sdk_server, "fastmcp": fastmcp_server, "proxy": fastmcp_proxy}[sys.argv[1]]()
