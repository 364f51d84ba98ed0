// Drives `memq mcp` with an official MCP TypeScript SDK client (Client + StdioClientTransport), as an agent would.
// Run by tests/integration/mcp_test.cc, once per SDK version installed by package.json:
//   MEMQ_MCP_SDK=@modelcontextprotocol/sdk (the newest) or mcp-sdk-2024-11-05 (1.9.0, which speaks only 2024-11-05)
//   MEMQ_BIN=/path/to/memq MEMQ_SOCKET=... MEMQ_DATA_DIR=... MEMQ_TEST_PROJECT=/tmp/project node client.mjs
// Exits 0 when every check holds; otherwise prints what failed on stderr and exits 1.
import assert from "node:assert/strict";

const need = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`client.mjs: ${name} is not set`);
    process.exit(2);
  }
  return v;
};

const sdk = need("MEMQ_MCP_SDK");
const { Client } = await import(`${sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);

const memq = need("MEMQ_BIN");
const project = need("MEMQ_TEST_PROJECT");
const env = { ...process.env, MEMQ_SOCKET: need("MEMQ_SOCKET"), MEMQ_DATA_DIR: need("MEMQ_DATA_DIR") };

const EXPECTED_TOOLS = [
  "memory_get",
  "memory_hide",
  "memory_list",
  "memory_pin",
  "memory_recall",
  "memory_reject",
  "memory_restore",
  "memory_save",
  "memory_search",
  "memory_supersede",
  "memory_unpin",
  "memory_update",
];
const READ_ONLY = ["memory_get", "memory_list", "memory_search"];

const textOf = (result) =>
  (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");

async function main() {
  const transport = new StdioClientTransport({ command: memq, args: ["mcp"], env, cwd: project, stderr: "inherit" });
  const client = new Client({ name: "memq-integration-test", version: "0.0.0" });
  // An SDK whose revision memq did not answer in refuses the connection here ("protocol version is not supported").
  await client.connect(transport);
  try {
    const server = client.getServerVersion();
    assert.equal(server?.name, "memq", "serverInfo.name");
    assert.ok(client.getServerCapabilities()?.tools, "the server announces the tools capability");

    // Every tool: an object input schema, a description, a title and the three behaviour hints.
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema?.type, "object", `${t.name} input schema`);
      assert.ok(t.description, `${t.name} has a description`);
      assert.ok(t.title, `${t.name} has a title`);
      assert.equal(t.annotations?.readOnlyHint, READ_ONLY.includes(t.name), `${t.name} readOnlyHint`);
      if (!READ_ONLY.includes(t.name)) {
        assert.equal(typeof t.annotations?.destructiveHint, "boolean", `${t.name} destructiveHint`);
        assert.equal(typeof t.annotations?.idempotentHint, "boolean", `${t.name} idempotentHint`);
      }
      assert.equal(t.outputSchema?.type, "object", `${t.name} output schema`);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual([...byName.memory_reject.inputSchema.required].sort(), ["id", "reason"]);
    assert.equal(byName.memory_reject.annotations.destructiveHint, true);
    assert.equal(byName.memory_hide.annotations.destructiveHint, false);
    // The limits are the daemon's.
    assert.equal(byName.memory_search.inputSchema.properties.limit.maximum, 100);
    assert.equal(byName.memory_recall.inputSchema.properties.limit.maximum, 100);
    assert.equal(byName.memory_list.inputSchema.properties.limit.maximum, 1000);
    assert.equal(byName.memory_save.inputSchema.properties.summary.maxLength, 200);
    assert.equal(byName.memory_save.inputSchema.properties.files.maxItems, 16);
    assert.ok(!/always surface/.test(byName.memory_pin.description), byName.memory_pin.description);

    // Save, then recall it by task text. The newest SDK checks structuredContent against the outputSchema.
    const summary = "Session tokens are refreshed by the auth middleware, never by the client";
    const saved = await client.callTool({
      name: "memory_save",
      arguments: { summary, category: "decision", topics: ["auth"], files: ["src/auth/session.ts"] },
    });
    assert.notEqual(saved.isError, true, `memory_save failed: ${textOf(saved)}`);
    assert.equal(saved.structuredContent?.status, "created", JSON.stringify(saved));
    const id = saved.structuredContent.id;
    assert.match(id, /^[0-9a-f-]{36}$/);
    assert.ok(textOf(saved).includes(id.slice(0, 8)), `memory_save names the id: ${textOf(saved)}`);

    const recalled = await client.callTool({ name: "memory_recall", arguments: { query: "who refreshes session tokens" } });
    assert.notEqual(recalled.isError, true, `memory_recall failed: ${textOf(recalled)}`);
    assert.ok(textOf(recalled).includes(summary), `recall text contains the summary:\n${textOf(recalled)}`);
    assert.equal(recalled.structuredContent?.memories?.[0]?.id, id, JSON.stringify(recalled.structuredContent));

    const byFile = await client.callTool({ name: "memory_recall", arguments: { files: ["src/auth/session.ts"] } });
    assert.ok(textOf(byFile).includes(summary), `recall by file contains the summary:\n${textOf(byFile)}`);

    const got = await client.callTool({ name: "memory_get", arguments: { id } });
    assert.notEqual(got.isError, true, `memory_get failed: ${textOf(got)}`);
    assert.ok(textOf(got).includes(summary) && textOf(got).includes("src/auth/session.ts"), textOf(got));
    assert.deepEqual(got.structuredContent?.files, ["src/auth/session.ts"]);

    // update, pin, list, unpin, hide, restore.
    const updated = await client.callTool({ name: "memory_update", arguments: { id, details: "see middleware.ts" } });
    assert.notEqual(updated.isError, true, textOf(updated));
    assert.equal(updated.structuredContent?.details, "see middleware.ts");
    const pinned = await client.callTool({ name: "memory_pin", arguments: { id } });
    assert.equal(pinned.structuredContent?.pinned, true, JSON.stringify(pinned));
    const listed = await client.callTool({ name: "memory_list", arguments: { pinned: true } });
    assert.equal(listed.structuredContent?.total, 1, JSON.stringify(listed));
    assert.equal(listed.structuredContent.memories[0].id, id);
    const unpinned = await client.callTool({ name: "memory_unpin", arguments: { id } });
    assert.equal(unpinned.structuredContent?.pinned, false, JSON.stringify(unpinned));
    const hidden = await client.callTool({ name: "memory_hide", arguments: { id, reason: "not now" } });
    assert.equal(hidden.structuredContent?.state, "hidden", JSON.stringify(hidden));
    const restored = await client.callTool({ name: "memory_restore", arguments: { id } });
    assert.equal(restored.structuredContent?.state, "active", JSON.stringify(restored));

    // A wrong type is reported as a wrong type, and nothing is saved.
    const wrongType = await client.callTool({ name: "memory_save", arguments: { summary: 42 } });
    assert.equal(wrongType.isError, true, JSON.stringify(wrongType));
    assert.match(textOf(wrongType), /summary must be a string, not an integer/);
    const overLimit = await client.callTool({ name: "memory_search", arguments: { query: "x", limit: 101 } });
    assert.equal(overLimit.isError, true, JSON.stringify(overLimit));
    assert.match(textOf(overLimit), /limit must be at most 100/);

    // A reject without a reason is a tool error (isError), not a protocol error, and changes nothing.
    const noReason = await client.callTool({ name: "memory_reject", arguments: { id } });
    assert.equal(noReason.isError, true, `memory_reject without a reason: ${JSON.stringify(noReason)}`);
    assert.ok(/reason/i.test(textOf(noReason)), `the error names the reason: ${textOf(noReason)}`);

    // An unknown id is a tool error as well.
    const missing = await client.callTool({ name: "memory_get", arguments: { id: "ffffffff" } });
    assert.equal(missing.isError, true, `memory_get of an unknown id: ${JSON.stringify(missing)}`);

    // The memory is still active: search still finds it.
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
