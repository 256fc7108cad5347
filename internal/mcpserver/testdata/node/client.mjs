// client.mjs connects to an MCP server with the official TypeScript SDK's
// client, lists its tools, calls the ones it is asked to and prints what it
// saw as one line of JSON on stdout. internal/mcpserver/node_test.go runs it
// against Station's MCP server; it works against any server.
//
//   node client.mjs stdio COMMAND [ARG...]   start COMMAND as the server, as a desktop client does
//   node client.mjs http URL                 the streamable HTTP endpoint at URL
//
// Environment:
//   MCP_SERVER_ENV  stdio: a JSON object of variables for the server, on top
//                   of the few the SDK passes on by itself (HOME, PATH, ...),
//                   as the "env" of a desktop client's server entry
//   MCP_TOKEN       http: sent as "Authorization: Bearer MCP_TOKEN"
//   MCP_CALLS       a JSON array of {"name": TOOL, "arguments": {...}}, called in order
//   MCP_TIMEOUT_MS  how long the whole run may take (default 60000)
//
// The line printed: {"server", "capabilities", "tools": [{name, title,
// description, inputSchema, annotations}], "calls": [{name, isError, text}
// or {name, error}], "terminated", "closeMs"}. A tool result with isError is
// a result, not a failure; a call the server refuses at the protocol level
// is recorded with its error. terminated says whether the HTTP session was
// ended with DELETE (null over stdio); closeMs is how long the SDK took to
// close the transport (over stdio: to see the server exit once its input
// ended, or to give up after 2 s and signal it). The exit status is 0 when
// the line was printed, 1 on a failure to connect or to list the tools (the
// reason on stderr), 2 when MCP_TIMEOUT_MS ran out.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const usage = "usage: node client.mjs stdio COMMAND [ARG...] | node client.mjs http URL";

/** jsonEnv parses the environment variable name as JSON, or returns def when it is unset. */
function jsonEnv(name, def) {
  const v = process.env[name];
  if (v === undefined || v === "") {
    return def;
  }
  try {
    return JSON.parse(v);
  } catch (err) {
    throw new Error(`${name} is not JSON: ${err.message}`);
  }
}

/** transportFor makes the transport the command line asks for. */
function transportFor(argv) {
  const [kind, target, ...rest] = argv;
  switch (kind) {
    case "stdio": {
      if (!target) {
        throw new Error(usage);
      }
      const env = jsonEnv("MCP_SERVER_ENV", {});
      if (env === null || typeof env !== "object" || Array.isArray(env)) {
        throw new Error("MCP_SERVER_ENV must be a JSON object of strings");
      }
      return new StdioClientTransport({ command: target, args: rest, env, stderr: "inherit" });
    }
    case "http": {
      if (!target || rest.length > 0) {
        throw new Error(usage);
      }
      const headers = {};
      if (process.env.MCP_TOKEN) {
        headers.Authorization = `Bearer ${process.env.MCP_TOKEN}`;
      }
      return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
    }
    default:
      throw new Error(usage);
  }
}

/** text joins the text content of a tool result. */
function text(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
}

/** listAll lists every tool, following the server's pages. */
async function listAll(client) {
  const tools = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const r = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...r.tools);
    cursor = r.nextCursor;
    if (!cursor) {
      return tools;
    }
  }
  throw new Error("tools/list: more than 100 pages");
}

async function main() {
  const calls = jsonEnv("MCP_CALLS", []);
  if (!Array.isArray(calls)) {
    throw new Error("MCP_CALLS must be a JSON array");
  }
  const transport = transportFor(process.argv.slice(2));
  const client = new Client({ name: "typescript-sdk-test", version: "1.0.0" });
  await client.connect(transport);

  const tools = (await listAll(client)).map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema,
    annotations: t.annotations,
  }));

  const results = [];
  for (const c of calls) {
    try {
      const r = await client.callTool({ name: c.name, arguments: c.arguments ?? {} });
      results.push({ name: c.name, isError: r.isError === true, text: text(r) });
    } catch (err) {
      results.push({ name: c.name, error: String(err?.message ?? err) });
    }
  }

  // Over HTTP, end the session as a well-behaved client does (DELETE);
  // over stdio, closing the transport ends the server's input.
  let terminated = null;
  if (transport instanceof StreamableHTTPClientTransport) {
    await transport.terminateSession();
    terminated = transport.sessionId === undefined;
  }
  const out = {
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    tools,
    calls: results,
    terminated,
  };
  const start = performance.now();
  await client.close();
  out.closeMs = Math.round(performance.now() - start);
  return JSON.stringify(out) + "\n";
}

const timeout = Number(process.env.MCP_TIMEOUT_MS || 60000);
setTimeout(() => {
  console.error(`client.mjs: no result within ${timeout} ms`);
  process.exit(2);
}, timeout).unref();

main().then(
  (line) => process.stdout.write(line, () => process.exit(0)),
  (err) => {
    console.error(`client.mjs: ${err?.stack ?? err}`);
    process.exit(1);
  },
);
