// A TypeScript-SDK peer server (npm @modelcontextprotocol/sdk), as a third-party server would be
// written: its tool `book` pushes elicitation/create (server.elicitInput) and answers
// "Booked for N." or "No booking (ACTION).". For the gateway matrix: `ts_signin` sends a URL
// request and, once accepted, its completion; `ts_need_page` answers -32042 until `ts_finish_page`
// (what the page's own server would do) marks the page done and sends its completion;
// `ts_process_id` says which process answered. Over stdio by default; `http` serves streamable HTTP
// on 127.0.0.1 (a free port) and prints "listening URL" on stdout.
import { createServer } from "node:http";
import { createRequire } from "node:module";

const require = createRequire(process.env.TS_PEER_MODULES + "/");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { UrlElicitationRequiredError } = require("@modelcontextprotocol/sdk/types.js");

// One process: the page ts_need_page waits for; each page gets a fresh id, as the spec asks.
const pages = { done: false, notify: null, count: 0 };

function build() {
  const server = new McpServer({ name: "ts-peer", version: "1.0.0" });
  server.registerTool("book", { description: "Book a table; asks how many guests." }, async () => {
    const answer = await server.server.elicitInput({
      message: "How many guests?",
      requestedSchema: {
        type: "object",
        properties: { guests: { type: "integer", minimum: 1, maximum: 10, default: 2 } },
        required: ["guests"],
      },
    });
    const text = answer.action === "accept" ? `Booked for ${answer.content.guests}.` : `No booking (${answer.action}).`;
    return { content: [{ type: "text", text }] };
  });
  server.registerTool("ts_signin", { description: "Sends a sign-in page, then says it is done." }, async () => {
    const id = `ts-signin-${++pages.count}`;
    const answer = await server.server.elicitInput({
      mode: "url", message: "Sign in to the TS service", url: "https://example.com/ts-login", elicitationId: id,
    });
    if (answer.action === "accept") await server.server.createElicitationCompletionNotifier(id)();
    return { content: [{ type: "text", text: `ts signin ${answer.action}` }] };
  });
  server.registerTool("ts_need_page", { description: "Answers -32042 until the page is finished." }, async () => {
    if (pages.done) {
      pages.done = false; // each authorization serves one call, so the cell can run again
      return { content: [{ type: "text", text: "ts page done" }] };
    }
    const elicitationId = `ts-page-${++pages.count}`;
    pages.notify = server.server.createElicitationCompletionNotifier(elicitationId);
    throw new UrlElicitationRequiredError([
      { mode: "url", message: "Authorize the TS service", url: "https://example.com/ts-authorize", elicitationId },
    ]);
  });
  server.registerTool("ts_process_id", { description: "This server process's id." }, async () => ({
    content: [{ type: "text", text: String(process.pid) }],
  }));
  server.registerTool("ts_finish_page", { description: "Finishes the page ts_need_page waits for." }, async () => {
    pages.done = true;
    await pages.notify?.();
    return { content: [{ type: "text", text: "ts finished" }] };
  });
  return server;
}

if (process.argv[2] === "http") {
  const transports = new Map();
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      await build().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, "127.0.0.1", () => console.log(`listening http://127.0.0.1:${http.address().port}/mcp`));
} else {
  await build().connect(new StdioServerTransport());
}
