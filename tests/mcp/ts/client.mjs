// `robotmem mcp` driven by the official MCP TypeScript SDK over stdio:
// initialize, tools/list, learn, recall (round trip), an invalid call.
// Run by scripts/mcp-clients-test.sh with ROBOTMEM_BIN and WORK set.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
  if (ok) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name} ${detail}`);
  }
}

const transport = new StdioClientTransport({
  command: process.env.ROBOTMEM_BIN,
  args: ["mcp", "--db", `${process.env.WORK}/ts.db`, "--no-embeddings"],
  stderr: "inherit",
});
const client = new Client({ name: "robotmem-ts-test", version: "1.0.0" });
await client.connect(transport);
check("initialize: server name", client.getServerVersion()?.name === "robotmem", JSON.stringify(client.getServerVersion()));

const { tools } = await client.listTools();
check("tools/list", tools.map((t) => t.name).join(",") === "learn,recall,save_perception,forget,update,set_expiry,purge,start_session,end_session,memory_history,doctor");

const learned = await client.callTool({ name: "learn", arguments: { insight: "Found that the blue bin is left of the conveyor" } });
check("learn", !learned.isError && learned.structuredContent?.status === "created", JSON.stringify(learned));
const id = learned.structuredContent?.memory_id;

const recalled = await client.callTool({ name: "recall", arguments: { query: "blue bin conveyor", n: 3 } });
const first = recalled.structuredContent?.memories?.[0];
check("recall finds the learned memory", !recalled.isError && first?.id === id, JSON.stringify(recalled).slice(0, 300));
check("text and structured content agree", JSON.stringify(JSON.parse(recalled.content[0].text)) === JSON.stringify(recalled.structuredContent));

const bad = await client.callTool({ name: "learn", arguments: { insight: "x".repeat(301) } });
check("301 characters refused", bad.isError === true && bad.content[0].text.includes("insight"), JSON.stringify(bad));

await client.close();
console.log(`typescript MCP client: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
