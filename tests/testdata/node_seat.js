// A seat played by the Node.js NATS client (npm "nats"): corpsim's protocol
// needs nothing Go-specific. Usage: node node_seat.js URL TOKEN SUBJECT
const { connect, JSONCodec } = require("nats");

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

(async () => {
  const [url, token, subject] = process.argv.slice(2);
  const nc = await connect({ servers: url, token });
  const jc = JSONCodec();
  const sub = nc.subscribe(subject);
  console.log("ready");
  for await (const m of sub) {
    const o = jc.decode(m.data);
    m.respond(jc.encode({ turn: o.turn, actions: decide(o) }));
  }
})().catch((e) => { console.error(e); process.exit(1); });
