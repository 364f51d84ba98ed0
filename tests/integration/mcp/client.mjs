// Drives `memq mcp` with the official MCP TypeScript SDK client (Client + StdioClientTransport), as an agent would.
// Run by tests/integration/mcp_test.cc:
//   MEMQ_BIN=/path/to/memq MEMQ_SOCKET=... MEMQ_DATA_DIR=... MEMQ_TEST_PROJECT=/tmp/project node client.mjs
// Exits 0 when every check holds; otherwise prints what failed on stderr and exits 1.
import assert from "node:assert/strict";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const need = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`client.mjs: ${name} is not set`);
    process.exit(2);
  }
  return v;
};

const memq = need("MEMQ_BIN");
const project = need("MEMQ_TEST_PROJECT");
const env = { ...process.env, MEMQ_SOCKET: need("MEMQ_SOCKET"), MEMQ_DATA_DIR: need("MEMQ_DATA_DIR") };

const EXPECTED_TOOLS = [
  "memory_get",
  "memory_hide",
  "memory_pin",
  "memory_recall",
  "memory_reject",
  "memory_save",
  "memory_search",
  "memory_supersede",
];

const textOf = (result) =>
  (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");

async function main() {
  const transport = new StdioClientTransport({ command: memq, args: ["mcp"], env, cwd: project, stderr: "inherit" });
  const client = new Client({ name: "memq-integration-test", version: "0.0.0" });
  await client.connect(transport);
  try {
    const server = client.getServerVersion();
    assert.equal(server?.name, "memq", "serverInfo.name");
    assert.ok(client.getServerCapabilities()?.tools, "the server announces the tools capability");

    // The eight tools, each with an object input schema.
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema?.type, "object", `${t.name} input schema`);
      assert.ok(t.description, `${t.name} has a description`);
    }
    const reject = tools.find((t) => t.name === "memory_reject");
    assert.deepEqual([...reject.inputSchema.required].sort(), ["id", "reason"]);

    // Save, then recall it by task text.
    const summary = "Session tokens are refreshed by the auth middleware, never by the client";
    const saved = await client.callTool({
      name: "memory_save",
      arguments: { summary, category: "decision", topics: ["auth"], files: ["src/auth/session.ts"] },
    });
    assert.notEqual(saved.isError, true, `memory_save failed: ${textOf(saved)}`);
    const id = textOf(saved).match(/[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{8}/)?.[0];
    assert.ok(id, `memory_save names the id: ${textOf(saved)}`);

    const recalled = await client.callTool({ name: "memory_recall", arguments: { query: "who refreshes session tokens" } });
    assert.notEqual(recalled.isError, true, `memory_recall failed: ${textOf(recalled)}`);
    assert.ok(textOf(recalled).includes(summary), `recall text contains the summary:\n${textOf(recalled)}`);

    const byFile = await client.callTool({ name: "memory_recall", arguments: { files: ["src/auth/session.ts"] } });
    assert.ok(textOf(byFile).includes(summary), `recall by file contains the summary:\n${textOf(byFile)}`);

    const got = await client.callTool({ name: "memory_get", arguments: { id } });
    assert.notEqual(got.isError, true, `memory_get failed: ${textOf(got)}`);
    assert.ok(textOf(got).includes(summary) && textOf(got).includes("src/auth/session.ts"), textOf(got));

    // A reject without a reason is a tool error (isError), not a protocol error, and changes nothing.
    const noReason = await client.callTool({ name: "memory_reject", arguments: { id } });
    assert.equal(noReason.isError, true, `memory_reject without a reason: ${JSON.stringify(noReason)}`);
    assert.ok(/reason/i.test(textOf(noReason)), `the error names the reason: ${textOf(noReason)}`);

    // An unknown id is a tool error as well.
    const missing = await client.callTool({ name: "memory_get", arguments: { id: "ffffffff" } });
    assert.equal(missing.isError, true, `memory_get of an unknown id: ${JSON.stringify(missing)}`);

    // The memory is still active: recall still finds it.
    const again = await client.callTool({ name: "memory_search", arguments: { query: "session tokens refreshed" } });
    assert.ok(textOf(again).includes(summary), `still found after the refused reject:\n${textOf(again)}`);
  } finally {
    await client.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e?.stack ?? String(e));
    process.exit(1);
  },
);
