// A client built on the TypeScript MCP SDK (npm @modelcontextprotocol/sdk) with its default
// settings, driven by tests/peers/test_ts_client.py. One JSON argument says what to do:
//   {"transport": "stdio", "command": "...", "args": [...]} or {"transport": "http", "url": "..."},
//   "tool", "arguments", "elicitation": true|false (declare form and URL mode, or nothing),
//   "answers": [content or {"action": ...}, ...] (form answers, in order), "retry": true (after
//   -32042, wait for a line on stdin, then call the tool again, as a client does after the page),
//   or "calls": [{"tool", "arguments"}, ...] (several calls in order on one connection).
// It prints one JSON object per line: {"event": "elicit", "params"}, {"event": "result", "result"},
// {"event": "error", "code", "message", "data"}, {"event": "complete", "elicitationId"}.
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const sdk = (p) => import(pathToFileURL(`${process.env.TS_SDK_DIR}/node_modules/@modelcontextprotocol/sdk/dist/esm/${p}`).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ElicitRequestSchema, ElicitationCompleteNotificationSchema } = await sdk("types.js");

const config = JSON.parse(process.argv[2]);
const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const capabilities = config.elicitation ? { elicitation: { form: {}, url: {} } } : {};
const client = new Client({ name: "ts-peer", version: "1.0.0" }, { capabilities });
if (config.elicitation) {
  const answers = [...(config.answers ?? [])];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    say({ event: "elicit", params: request.params });
    if (request.params.mode === "url") return { action: "accept" };
    const answer = answers.shift() ?? {};
    return "action" in answer ? answer : { action: "accept", content: answer };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) =>
    say({ event: "complete", elicitationId: n.params.elicitationId }));
}
const transport = config.transport === "stdio"
  ? new StdioClientTransport({ command: config.command, args: config.args, env: { ...process.env } })
  : new StreamableHTTPClientTransport(new URL(config.url));
await client.connect(transport);
say({ event: "connected", protocolVersion: transport.protocolVersion ?? null });

async function call({ tool, arguments: args } = { tool: config.tool, arguments: config.arguments }) {
  try {
    say({ event: "result", result: await client.callTool({ name: tool, arguments: args ?? {} }) });
    return true;
  } catch (e) {
    say({ event: "error", code: e.code ?? null, message: String(e.message), data: e.data ?? null });
    return false;
  }
}
for (const each of config.calls ?? []) await call(each);
if (config.tool && !(await call()) && config.retry) {
  await lines.next();
  await call();
}
await client.close();
process.exit(0);
