// An OpenEnv client on the npm "ws" package: corpsim's /openenv/ws needs
// nothing corpsim-specific. Prints one JSON line per result.
//
//   node openenv_episode.js play    WS_URL TOKEN WORLD SEED AGENTS MAX_MESSAGE  (AGENTS "": every seat remote)
//   node openenv_episode.js refuse  WS_URL TOKEN
//   node openenv_episode.js abrupt  WS_URL TOKEN WORLD SEED AGENTS
//   node openenv_episode.js hold    WS_URL TOKEN WORLD SEED AGENTS
//   node openenv_episode.js stateless HTTP_URL TOKEN WORLD SEED AGENTS
//   node openenv_episode.js tools   WS_URL TOKEN WORLD SEED AGENTS   (AGENTS "": every seat remote)
//
// play: misbehaves first (a frame that is not JSON, an unknown type, a step
// before reset, a malformed step, a frame over MAX_MESSAGE bytes), checks
// each is answered with its OpenEnv error code on a connection that stays
// open; starts an episode and leaves it after a step with a second reset;
// then plays that episode to its end (steps, state, close) with
// a deterministic policy: approve what waits, work and complete what it
// holds, else claim the first available task. Its return is the sum of the
// rewards of every observation.
// refuse: connects with TOKEN and prints the HTTP status of the refusal.
// abrupt: resets, steps once, and drops the TCP connection without a close
// frame.
// tools: plays as OpenEnv's MCPToolClient does (openenv.core.mcp_client):
// list_tools before and after reset, observe, then one call_tool a turn
// naming no seat — the first action the policy above chooses for the first
// seat shown — every third one as MCP's tools/call in an "mcp" frame
// instead; a bad tool, bad arguments and an unknown MCP method first. Its
// return sums the rewards of reset, observe and the call_tool steps (not
// list_tools', which MCPToolClient drops), and observe's after the end.
const WebSocket = require("ws");

function decide(o) {
  const acts = [];
  for (const r of o.approvals || []) acts.push({ type: "approve", request: r.id });
  for (const t of o.assigned || []) {
    if (t.status === "in_progress" || (t.waiting_on || []).length) continue;
    if (t.spent < t.effort) return acts.concat([{ type: "work", task: t.id }]);
    if (t.approval === "needed" || t.approval === "rejected") { acts.push({ type: "request_approval", task: t.id }); continue; }
    if (t.approval === "pending") continue;
    acts.push({ type: "complete", task: t.id });
  }
  const a = (o.available || [])[0];
  if (a) return acts.concat([{ type: "claim", task: a.id }, { type: "work", task: a.id }]);
  return acts.concat([{ type: "wait" }]);
}

// client wraps a socket: send a frame, await its one reply.
function client(url, token) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { Authorization: "Bearer " + token }, maxPayload: 256 << 20 });
    const waiting = [];
    ws.on("message", (data) => {
      const w = waiting.shift();
      if (w) w.resolve(JSON.parse(data.toString()));
    });
    ws.on("close", (code) => { for (const w of waiting.splice(0)) w.reject(new Error("closed " + code)); });
    ws.on("unexpected-response", (req, res) => {
      req.destroy(); // ws leaves a refused request open to whoever listens for it
      reject(Object.assign(new Error("refused"), { status: res.statusCode }));
    });
    ws.on("error", (e) => reject(e));
    ws.on("open", () => resolve({
      ws,
      send(frame) {
        return new Promise((res, rej) => {
          waiting.push({ resolve: res, reject: rej });
          ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
        });
      },
    }));
  });
}

function expectError(reply, code) {
  if (reply.type !== "error" || reply.data.code !== code) {
    throw new Error("want error " + code + ", got " + JSON.stringify(reply).slice(0, 300));
  }
  return code;
}

async function play(url, token, world, seed, agents, maxMessage) {
  const c = await client(url, token);
  const codes = [];
  codes.push(expectError(await c.send("{not json"), "INVALID_JSON"));
  codes.push(expectError(await c.send({ type: "jump" }), "UNKNOWN_TYPE"));
  codes.push(expectError(await c.send({ data: {} }), "UNKNOWN_TYPE"));
  codes.push(expectError(await c.send({ type: "step", data: { actions: {} } }), "SESSION_ERROR"));
  // Without "agents" every agent seat is the connection's.
  const data = agents ? { world, seed, agents, episode_id: "mine" } : { world, seed, episode_id: "mine" };
  // A first episode, left after one step: the next reset stops it.
  let r = await c.send({ type: "reset", data });
  if (r.type !== "observation") throw new Error("reset: " + JSON.stringify(r).slice(0, 300));
  const abandoned = r.data.observation.episode_id;
  const first = {};
  for (const [m, o] of Object.entries(r.data.observation.seats)) first[m] = decide(o);
  r = await c.send({ type: "step", data: { actions: first } });
  if (r.type !== "observation") throw new Error("first step: " + JSON.stringify(r).slice(0, 300));
  r = await c.send({ type: "reset", data });
  if (r.type !== "observation") throw new Error("second reset: " + JSON.stringify(r).slice(0, 300));
  const session = r.data.observation.episode_id;
  if (session === abandoned) throw new Error("the second reset did not make a new session");
  const tools = (r.data.observation.tools || []).map((t) => t.function.name);
  let ret = r.data.reward || 0;
  codes.push(expectError(await c.send({ type: "step", data: { acts: {} } }), "VALIDATION_ERROR"));
  codes.push(expectError(await c.send({ type: "step", data: { actions: { nobody: [] } } }), "VALIDATION_ERROR"));
  codes.push(expectError(await c.send("x".repeat(maxMessage + 1000)), "VALIDATION_ERROR"));
  codes.push(expectError(await c.send("[1,2]"), "VALIDATION_ERROR"));
  let steps = 0, asked = 0;
  while (!r.data.done) {
    const actions = {};
    for (const [m, o] of Object.entries(r.data.observation.seats)) { actions[m] = decide(o); asked++; }
    r = await c.send({ type: "step", data: { actions } });
    if (r.type !== "observation") throw new Error("step " + steps + ": " + JSON.stringify(r).slice(0, 300));
    ret += r.data.reward;
    steps++;
  }
  codes.push(expectError(await c.send({ type: "step", data: { actions: {} } }), "SESSION_ERROR"));
  const st = await c.send({ type: "state" });
  if (st.type !== "state") throw new Error("state: " + JSON.stringify(st));
  c.ws.send(JSON.stringify({ type: "close" }));
  const closeCode = await new Promise((res) => c.ws.on("close", (code) => res(code)));
  console.log(JSON.stringify({
    session, abandoned, return: ret, steps, asked, status: r.data.observation.status, score: r.data.observation.score,
    state: st.data, codes, close: closeCode, tools,
  }));
}

async function refuse(url, token) {
  try {
    const c = await client(url, token);
    c.ws.close();
    console.log(JSON.stringify({ status: 101 }));
  } catch (e) {
    if (!e.status) throw e;
    console.log(JSON.stringify({ status: e.status }));
  }
}

async function abrupt(url, token, world, seed, agents) {
  const c = await client(url, token);
  const r = await c.send({ type: "reset", data: { world, seed, agents } });
  if (r.type !== "observation") throw new Error("reset: " + JSON.stringify(r).slice(0, 300));
  const actions = {};
  for (const [m, o] of Object.entries(r.data.observation.seats)) actions[m] = decide(o);
  const s = await c.send({ type: "step", data: { actions } });
  if (s.type !== "observation") throw new Error("step: " + JSON.stringify(s).slice(0, 300));
  c.ws.terminate(); // no close frame: the TCP connection just ends
  console.log(JSON.stringify({ session: r.data.observation.episode_id }));
}

// hold: resets, steps once, prints the session and keeps the connection
// open until the server closes it; then prints the close code.
async function hold(url, token, world, seed, agents) {
  const c = await client(url, token);
  const r = await c.send({ type: "reset", data: { world, seed, agents } });
  if (r.type !== "observation") throw new Error("reset: " + JSON.stringify(r).slice(0, 300));
  console.log(JSON.stringify({ session: r.data.observation.episode_id }));
  await new Promise((resolve) => c.ws.on("close", (code) => { console.log(JSON.stringify({ closed: code })); resolve(); }));
}

// stateless: plays an episode over the stateless HTTP routes with Node's
// own fetch (URL is http://HOST:PORT): POST /openenv/reset, then
// POST /openenv/step with its episode_id until done; prints the session,
// reset's tool names, the steps, the return and the final score.
async function stateless(url, token, world, seed, agents) {
  const post = async (path, body) => {
    const res = await fetch(url + path, { method: "POST", headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const out = await res.json();
    if (res.status !== 200) throw new Error(path + ": " + res.status + " " + JSON.stringify(out).slice(0, 300));
    return out;
  };
  let r = await post("/openenv/reset", { world, seed, agents });
  const session = r.observation.episode_id;
  const tools = (r.observation.tools || []).map((t) => t.function.name);
  let ret = r.reward || 0, steps = 0;
  while (!r.done) {
    if (++steps > 5000) throw new Error("no end within 5000 steps");
    const actions = {};
    for (const [m, o] of Object.entries(r.observation.seats)) actions[m] = decide(o);
    r = await post("/openenv/step", { episode_id: session, action: { actions } });
    ret += r.reward || 0;
  }
  console.log(JSON.stringify({ session, tools, steps, return: ret, status: r.observation.status, score: r.observation.score }));
}

async function tools(url, token, world, seed, agents) {
  const c = await client(url, token);
  const expect = (r, ok, what) => { if (!ok) throw new Error(what + ": " + JSON.stringify(r).slice(0, 400)); return r; };
  let r = await c.send({ type: "step", data: { type: "list_tools" } });
  expect(r, r.type === "observation" && r.data.observation.episode_id === null, "list_tools before reset");
  const before = r.data.observation.tools.map((t) => t.name);
  r = await c.send({ type: "reset", data: agents ? { world, seed, agents } : { world, seed } });
  expect(r, r.type === "observation", "reset");
  const session = r.data.observation.episode_id;
  let ret = r.data.reward || 0;
  // MCPToolClient reads reset's observation as a tool list ("tools"): it
  // sees the first turn by observe.
  r = await c.send({ type: "step", data: { type: "call_tool", tool_name: "observe", arguments: {} } });
  expect(r, r.type === "observation" && r.data.observation.tool_name === "observe" && r.data.observation.result.episode_id === session, "observe");
  let obs = r.data.observation.result, done = r.data.done;
  ret += r.data.reward;
  // list_tools' reward is not counted: MCPToolClient.list_tools drops it.
  r = await c.send({ type: "step", data: { type: "list_tools" } });
  expect(r, r.type === "observation" && r.data.observation.episode_id === session, "list_tools");
  for (const t of r.data.observation.tools) expect(t, t.input_schema && t.input_schema.type === "object", "a tool's input_schema");
  const names = r.data.observation.tools.map((t) => t.name);
  r = await c.send({ type: "mcp", data: { jsonrpc: "2.0", method: "tools/list", params: {}, id: 1 } });
  expect(r, r.type === "mcp" && r.data.id === 1 && r.data.result, "mcp tools/list");
  const mcpNames = r.data.result.tools.map((t) => t.name);
  const errors = [];
  r = await c.send({ type: "step", data: { type: "call_tool", tool_name: "fly", arguments: {} } });
  errors.push(expect(r, r.data.observation && r.data.observation.error, "call_tool fly").data.observation.error.error_type);
  r = await c.send({ type: "step", data: { type: "call_tool", tool_name: "claim", arguments: {} } });
  errors.push(expect(r, r.data.observation && r.data.observation.error, "call_tool claim {}").data.observation.error.error_type);
  r = await c.send({ type: "mcp", data: { jsonrpc: "2.0", method: "resources/list", id: 2 } });
  errors.push(expect(r, r.type === "mcp" && r.data.error, "mcp resources/list").data.error.code);
  // One call a turn, naming no seat (MCPToolClient's CallToolAction has
  // no such field): each answers the first seat still waiting.
  let calls = 0, mcpCalls = 0, id = 10, lastMCP = false, maxSeats = 0;
  while (!done) {
    if (calls > 20000) throw new Error("no end within 20000 calls");
    const seats = Object.values(obs.seats || {});
    maxSeats = Math.max(maxSeats, seats.length);
    const { type, ...args } = seats.length ? decide(seats[0])[0] : { type: "wait" };
    if (calls % 3 === 2) {
      r = await c.send({ type: "mcp", data: { jsonrpc: "2.0", method: "tools/call", params: { name: type, arguments: args }, id: id } });
      expect(r, r.type === "mcp" && r.data.id === id && r.data.result && !r.data.result.isError, "mcp tools/call " + type);
      obs = r.data.result.structuredContent;
      expect(r, JSON.stringify(JSON.parse(r.data.result.content[0].text)) === JSON.stringify(obs), "the text content is the structured content");
      done = obs.status !== undefined;
      mcpCalls++; id++; lastMCP = true;
    } else {
      r = await c.send({ type: "step", data: { type: "call_tool", tool_name: type, arguments: args } });
      expect(r, r.type === "observation" && r.data.observation.tool_name === type && r.data.observation.error === null, "call_tool " + type);
      obs = r.data.observation.result;
      ret += r.data.reward;
      done = r.data.done;
      lastMCP = false;
    }
    calls++;
  }
  let after = 0;
  if (lastMCP) {
    // The reward of an mcp call comes with the next observation: after
    // the end, observe's.
    r = await c.send({ type: "step", data: { type: "call_tool", tool_name: "observe", arguments: {} } });
    expect(r, r.type === "observation" && r.data.done && r.data.observation.result.status, "observe after the end");
    ret += r.data.reward;
    after = r.data.reward;
  }
  const st = await c.send({ type: "state" });
  c.ws.close();
  console.log(JSON.stringify({ session, return: ret, score: obs.score, status: obs.status, calls, mcp_calls: mcpCalls,
    max_seats: maxSeats, steps: st.data.step_count, seats: st.data.seats, before, tools: names, mcp_tools: mcpNames, errors, after }));
}

(async () => {
  const [mode, url, token, world, seed, agents, maxMessage] = process.argv.slice(2);
  if (mode === "play") await play(url, token, world, Number(seed), agents, Number(maxMessage));
  else if (mode === "refuse") await refuse(url, token);
  else if (mode === "abrupt") await abrupt(url, token, world, Number(seed), agents);
  else if (mode === "hold") await hold(url, token, world, Number(seed), agents);
  else if (mode === "stateless") await stateless(url, token, world, Number(seed), agents);
  else if (mode === "tools") await tools(url, token, world, Number(seed), agents);
  else throw new Error("unknown mode " + mode);
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
