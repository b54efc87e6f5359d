// A corpsim seat played by an agent on the official MCP TypeScript SDK
// (npm "@modelcontextprotocol/sdk"): it lists the seat's tools, checks their
// schemas, refuses to be fooled by a bad call, and plays the seat to the
// session's end, one action per turn.
//
//   node mcp_seat.mjs http URL TOKEN [OTHER_TOKEN OPERATOR_TOKEN]
//       streamable HTTP to URL (the server's /mcp) with TOKEN as the bearer;
//       with OTHER_TOKEN (another session's seat) and OPERATOR_TOKEN it also
//       checks that neither reaches this seat.
//   node mcp_seat.mjs stdio CORPSIM_BINARY URL TOKEN
//       stdio to `CORPSIM_BINARY mcp --url URL`, the token in CORPSIM_SEAT_TOKEN.
//   node mcp_seat.mjs nemo BASE_URL
//       as NeMo Gym's MCP-native agents (claude_code_agent) do against a
//       resources server at BASE_URL (the serve's /nemo): seed_session, the
//       MCP endpoint and headers its reply's "mcp" names, then verify with
//       the session's cookie.
//
// It prints one JSON object per line; the last one is the outcome:
// {"outcome": {"session", "member", "status", "turns", …}}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { EmptyResultSchema } from "@modelcontextprotocol/sdk/types.js";

// The seat's world's actions (`corpsim tools --world`), as the test gives them.
const ACTIONS = (process.env.CORPSIM_TOOLS || "").split(",").filter(Boolean);
if (!ACTIONS.length) fail("CORPSIM_TOOLS names no tools");

function fail(msg) {
  throw new Error(msg);
}

function say(obj) {
  console.log(JSON.stringify(obj));
}

// decide picks one action for an observation: finish what is held, decide
// requests, take the first available task, else wait.
function decide(o) {
  for (const t of o.assigned || []) {
    if (t.status === "in_progress" || (t.waiting_on || []).length) continue;
    if (t.spent < t.effort) return ["work", { task: t.id }];
    if (t.needs_info && !t.needs_info.known) {
      const asked = (o.awaiting || []).some((m) => m.from === t.needs_info.from);
      if (!asked) return ["message", { to: t.needs_info.from, text: `Could you tell me about ${t.needs_info.topic}? I need it for ${t.id}.` }];
      continue;
    }
    if (t.approval === "needed" || t.approval === "rejected") return ["request_approval", { task: t.id }];
    if (t.approval === "pending") continue;
    return ["complete", { task: t.id }];
  }
  for (const r of o.approvals || []) {
    if (r.task_assignee === r.requester && r.amount === r.task_purchase) return ["approve", { request: r.id }];
    return ["reject", { request: r.id, reason: "the request does not match its task" }];
  }
  const a = (o.available || [])[0];
  if (a) return ["claim", { task: a.id }];
  return ["wait", {}];
}

// same reports whether two JSON values are equal (object keys in any order).
function same(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && same(a[k], b[k]));
}

function textOf(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function observe(client) {
  for (let i = 0; i < 30; i++) {
    const res = await client.callTool({ name: "observe", arguments: { wait: 20 } });
    if (res.isError) fail(`observe: ${textOf(res)}`);
    const o = res.structuredContent;
    if (!o || typeof o.done !== "boolean") fail(`observe gave no structured content: ${JSON.stringify(res)}`);
    if (!same(JSON.parse(textOf(res)), o)) fail("observe's text is not its structured content");
    if (o.done || o.turn) return o;
  }
  fail("no turn came in 30 observe calls");
}

async function checkTools(client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = [...ACTIONS, "observe"].sort();
  if (JSON.stringify(names) !== JSON.stringify(want)) fail(`tools ${names}, want ${want}`);
  for (const t of tools) {
    const s = t.inputSchema;
    if (!s || s.type !== "object" || typeof s.properties !== "object" || s.additionalProperties !== false) fail(`tool ${t.name}: inputSchema ${JSON.stringify(s)}`);
    if (!t.description) fail(`tool ${t.name} has no description`);
  }
  const claim = tools.find((t) => t.name === "claim");
  if (!claim.inputSchema.required.includes("task")) fail("claim does not require a task");
  say({ tools: names });
}

async function play(client) {
  await checkTools(client);
  const { resources } = await client.listResources();
  if (!resources.some((r) => r.uri === "corpsim://seat/observation")) fail(`resources ${JSON.stringify(resources)}`);

  let turns = 0, refused = 0, session = "", member = "", status = "";
  const seen = {};
  for (;;) {
    const o = await observe(client);
    if (o.done) {
      status = o.status;
      session = session || o.session;
      break;
    }
    session = o.session;
    member = o.member;
    if (turns === 0) {
      // A bad call is a tool error and leaves the turn waiting.
      const bad = await client.callTool({ name: "claim", arguments: {} });
      if (!bad.isError || !textOf(bad).includes("task")) fail(`claim without a task: ${JSON.stringify(bad)}`);
      refused++;
      const again = await observe(client);
      if (again.turn !== o.turn) fail(`after a refused call turn ${again.turn} waits, want ${o.turn}`);
      const res = await client.readResource({ uri: "corpsim://seat/observation" });
      const r = JSON.parse(res.contents[0].text);
      if (r.turn !== o.turn || r.member !== o.member) fail(`the resource shows ${JSON.stringify(r).slice(0, 200)}`);
      // An unknown tool is a JSON-RPC error.
      let threw = false;
      try {
        const res = await client.callTool({ name: "fire_everyone", arguments: {} });
        threw = res.isError === true;
      } catch (e) {
        threw = true;
      }
      if (!threw) fail("an unknown tool was answered");
      // An unknown method is JSON-RPC's method not found (-32601), over
      // HTTP as over stdio: not a transport failure, and the session goes on.
      let code = 0;
      try {
        await client.request({ method: "seats/steal" }, EmptyResultSchema);
      } catch (e) {
        code = e.code;
      }
      if (code !== -32601) fail(`an unknown method got code ${code}, want -32601`);
    }
    const [name, args] = decide(o);
    const res = await client.callTool({ name, arguments: args });
    const r = res.structuredContent;
    if (res.isError || !r || !r.forwarded || r.turn !== o.turn || r.action.type !== name) {
      fail(`${name} ${JSON.stringify(args)} on turn ${o.turn}: ${JSON.stringify(res)}`);
    }
    seen[name] = (seen[name] || 0) + 1;
    turns++;
    if (turns > 5000) fail("more than 5000 turns");
  }
  return { session, member, status, turns, refused, actions: seen };
}

async function connectHTTP(url, token, extra = {}) {
  const client = new Client({ name: "corpsim-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    ...extra,
  });
  await client.connect(transport);
  return { client, transport };
}

async function refused(what, fn) {
  try {
    await fn();
  } catch (e) {
    say({ refused: what, error: String(e.message || e).slice(0, 200) });
    return;
  }
  fail(`${what} was not refused`);
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode === "http") {
    const [url, token, other, operator] = rest;
    const { client, transport } = await connectHTTP(url, token);
    say({ connected: url, protocol: transport.protocolVersion, mcp_session: !!transport.sessionId });
    if (other) {
      // Another session's seat token, on this seat's MCP session: refused.
      await refused("another seat's token on this seat's MCP session", async () => {
        const c = new Client({ name: "intruder", version: "1.0.0" });
        const t = new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${other}` } },
          sessionId: transport.sessionId,
        });
        await c.connect(t);
        await c.listTools();
      });
      // With its own MCP session it sees its own seat only.
      const { client: oc } = await connectHTTP(url, other);
      const res = await oc.readResource({ uri: "corpsim://seat/observation" });
      const r = JSON.parse(res.contents[0].text);
      say({ other_seat: { session: r.session, member: r.member } });
      await oc.close();
      await refused("the operator token", () => connectHTTP(url, operator));
      await refused("no token", async () => {
        const c = new Client({ name: "anonymous", version: "1.0.0" });
        await c.connect(new StreamableHTTPClientTransport(new URL(url)));
      });
    }
    const outcome = await play(client);
    await client.close();
    say({ outcome });
  } else if (mode === "stdio") {
    const [bin, url, token] = rest;
    const client = new Client({ name: "corpsim-e2e-stdio", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: bin,
      args: ["mcp", "--url", url],
      env: { ...process.env, CORPSIM_SEAT_TOKEN: token },
      stderr: "inherit",
    });
    await client.connect(transport);
    say({ connected: "stdio", server: client.getServerVersion() });
    const outcome = await play(client);
    await client.close();
    say({ outcome });
  } else if (mode === "nemo") {
    const [base] = rest;
    const post = (path, body, headers = {}) =>
      fetch(base + path, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });
    const row = { world: "startup", seed: 8, member: "bob", task_id: "startup-8-bob", responses_create_params: { input: [] } };
    const seeded = await post("/seed_session", row);
    if (!seeded.ok) fail(`seed_session: ${seeded.status} ${await seeded.text()}`);
    const cookie = (seeded.headers.get("set-cookie") || "").split(";")[0];
    const seed = await seeded.json();
    const m = seed.mcp;
    if (!cookie || !m || m.transport !== "http" || !m.url_path || !m.headers || !m.headers["X-NeMo-Gym-Session-Token"]) {
      fail(`seed_session offers no MCP: ${JSON.stringify(seed).slice(0, 300)}`);
    }
    // The URL as claude_code_agent makes it: the resources server's base and url_path.
    const url = base.replace(/\/$/, "") + "/" + m.url_path.replace(/^\//, "");
    await refused("a token of no session", async () => {
      const c = new Client({ name: "intruder", version: "1.0.0" });
      await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { "X-NeMo-Gym-Session-Token": "forged" } } }));
    });
    // The MCP token and the cookie are two secrets: neither opens the other's routes.
    await refused("the cookie's value as the MCP token", async () => {
      const c = new Client({ name: "intruder", version: "1.0.0" });
      await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { "X-NeMo-Gym-Session-Token": cookie.split("=")[1] } } }));
    });
    const asCookie = await post("/observe", {}, { Cookie: "corpsim_nemo=" + m.headers["X-NeMo-Gym-Session-Token"] });
    if (asCookie.status < 400) fail(`the MCP token reached a cookie's route: ${asCookie.status}`);
    const client = new Client({ name: "corpsim-e2e-nemo", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: m.headers } });
    await client.connect(transport);
    say({ connected: url, server_name: m.server_name, protocol: transport.protocolVersion });
    const outcome = await play(client);
    // The CLI exits without ending its MCP session (the server closes it
    // with the NeMo Gym session); the agent verifies with the cookie, then closes.
    const verified = await post("/verify", { ...row, response: { id: "resp", output: [] } }, { Cookie: cookie });
    if (!verified.ok) fail(`verify: ${verified.status} ${await verified.text()}`);
    const v = await verified.json();
    outcome.reward = v.reward;
    outcome.verified = v.corpsim.session;
    const closed = await post("/close", {}, { Cookie: cookie });
    if (!closed.ok) fail(`close: ${closed.status} ${await closed.text()}`);
    say({ outcome });
  } else {
    fail(`unknown mode ${mode}`);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
