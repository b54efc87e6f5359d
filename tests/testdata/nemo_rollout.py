"""Rollouts against corpsim's NeMo Gym resources server, made the way NeMo
Gym's agents make them: aiohttp (Debian's python3-aiohttp), one client
session with no cookie jar of its own (DummyCookieJar), JSON bodies sent as
bytes with their content type, and the cookies passed explicitly on every
call: simple_agent replaces them with each answer's own Set-Cookie
(resources_server_cookies = api_response.cookies), gymnasium_agent merges
reset's into the ones it had. A resources server that did not send its
session cookie again on every answer would lose the session after the
first tool call here.

usage: nemo_rollout.py BASE_URL WORLD SEED MEMBER

BASE_URL is where the routes are (http://host:port/nemo). Prints one JSON
line per flow: {"flow": "simple", "session", "reward", "calls", ...} and
{"flow": "gymnasium", "session", "rewards", "steps", ...}, then
{"flow": "aggregate", "reverify_mode", "checked", "mean_reward"}: the two
routes a collection's end and `gym eval reverify` call, the metrics checked
against statistics computed here; then exits 0. Anything unexpected raises
and exits non-zero.
"""

import asyncio
import json
import statistics
import sys

import aiohttp


async def post(client, url, body, cookies):
    """POST body as NeMo Gym's server_utils.request does: bytes, with the
    content type set by hand, cookies given for this call only."""
    data = json.dumps(body, separators=(",", ":")).encode()
    async with client.post(url, data=data, headers={"Content-Type": "application/json"}, cookies=cookies) as resp:
        raw = await resp.read()
        return resp.status, raw, resp.cookies


def decide(obs, last):
    """A plain policy: finish what I hold, then work on it, then claim
    an open task of my role; wait when nothing else is left or the same
    call was just refused."""
    me = obs["member"]
    for t in obs.get("assigned") or []:
        if t.get("assignee", me) != me or t.get("status") == "done":
            continue
        if t.get("spent", 0) >= t.get("effort", 0):
            call = ("complete", {"task": t["id"]})
        else:
            call = ("work", {"task": t["id"]})
        if call != last:
            return call
    for t in obs.get("available") or []:
        if t.get("role") in (None, obs.get("role")):
            call = ("claim", {"task": t["id"]})
            if call != last:
                return call
    return ("wait", {})


async def simple_flow(client, base, row):
    """simple_agent.run: seed_session, the tool calls, verify."""
    status, raw, cookies = await post(client, base + "/seed_session", row, None)
    if status != 200:
        raise RuntimeError(f"seed_session: {status} {raw[:300]!r}")
    seeded = json.loads(raw)
    if "corpsim_nemo" not in cookies:
        raise RuntimeError(f"seed_session set no session cookie: {cookies}")
    tools = {t["name"] for t in seeded["tools"]}
    status, raw, cookies = await post(client, base + "/observe", {}, cookies)
    if status != 200:
        raise RuntimeError(f"observe: {status} {raw[:300]!r}")
    out = json.loads(raw)["output"]
    calls, refused, last = 1, 0, None
    while not out.get("done"):
        if calls > 5000:
            raise RuntimeError("no end within 5000 calls")
        name, args = decide(out["observation"], last)
        if name not in tools:
            raise RuntimeError(f"{name} is not among seed_session's tools {sorted(tools)}")
        status, raw, cookies = await post(client, base + "/" + name, args, cookies)
        calls += 1
        if status != 200:
            raise RuntimeError(f"call {calls} ({name}): {status} {raw[:300]!r}")
        out = json.loads(raw)["output"]
        if out.get("result", "").startswith("refused"):
            refused += 1
            last = (name, args)
        else:
            last = None
    # verify takes the row and the model's response (the agent's run()).
    body = dict(row, response={"id": "resp", "output": []})
    status, raw, cookies = await post(client, base + "/verify", body, cookies)
    if status != 200:
        raise RuntimeError(f"verify: {status} {raw[:300]!r}")
    v = json.loads(raw)
    if v.get("task_id") != row["task_id"]:
        raise RuntimeError(f"verify did not echo the row: {raw[:300]!r}")
    return v, {"flow": "simple", "session": seeded["session"], "reward": v["reward"],
            "member_reward": v["reward_components"]["member"], "calls": calls, "refused": refused,
            "status": v["corpsim"]["status"]}


async def gymnasium_flow(client, base, row):
    """gymnasium_agent.run: reset, steps of function_call items, close."""
    env_cookies = {}
    status, raw, cookies = await post(client, base + "/reset", row, env_cookies)
    if status != 200:
        raise RuntimeError(f"reset: {status} {raw[:300]!r}")
    env_cookies.update({k: m.value for k, m in cookies.items()})
    reset = json.loads(raw)
    if reset["info"].get("supports_explicit_close") is not True:
        raise RuntimeError(f"reset does not offer close: {raw[:300]!r}")
    text, rewards, steps, last, over_limit = reset["observation"], 0.0, 0, None, 0
    while True:
        steps += 1
        if steps > 5000:
            raise RuntimeError("no end within 5000 steps")
        name, args = decide(json.loads(text), last)
        item = {"type": "function_call", "id": f"fc_{steps}", "call_id": f"call_{steps}", "name": name,
                "arguments": json.dumps(args), "status": "completed"}
        items = [item]
        if steps == 2:
            # A response of 17 calls, one more than a turn takes: refused
            # whole, each call's output saying so.
            items += [dict(item, id=f"fc_{steps}_{i}", call_id=f"call_{steps}_{i}") for i in range(16)]
        body = {"responses_create_params": row["responses_create_params"], "response": {"id": f"resp_{steps}", "output": items}}
        status, raw, cookies = await post(client, base + "/step", body, env_cookies)
        if status != 200:
            raise RuntimeError(f"step {steps}: {status} {raw[:300]!r}")
        st = json.loads(raw)
        outs = st["info"]["tool_outputs"]
        if [o["call_id"] for o in outs] != [i["call_id"] for i in items]:
            raise RuntimeError(f"step {steps}: tool outputs {outs}")
        if len(items) > 1:
            results = [json.loads(o["output"]).get("result", "") for o in outs]
            if not all(r.startswith("refused (malformed): reply has 17 actions; the limit is 16") for r in results):
                raise RuntimeError(f"step {steps}: 17 calls answered {results[:2]}")
            over_limit = len(results)
        last = (name, args) if json.loads(outs[0]["output"]).get("result", "").startswith("refused") else None
        rewards += st["reward"]
        if st["terminated"] or st["truncated"]:
            break
        text = st["observation"]
    status, raw, _ = await post(client, base + "/close", {}, env_cookies)
    if status != 200:
        raise RuntimeError(f"close: {status} {raw[:300]!r}")
    return {"flow": "gymnasium", "session": reset["info"]["session"], "rewards": rewards, "steps": steps, "over_limit": over_limit,
            "terminated": st["terminated"], "status": st["info"].get("status")}


def numbers(vr):
    """A reply's numeric fields as NeMo Gym's RewardProfiler keeps them:
    ints, floats and bools (as 0/1), its response's usage merged in."""
    merged = dict(vr)
    merged.update((vr.get("response") or {}).get("usage") or {})
    out = {}
    for k, v in merged.items():
        if k in ("_ng_task_index", "_ng_rollout_index"):
            continue
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, (int, float)):
            out[k] = v
    return out


def describe(rows):
    """pandas' describe as RewardProfiler.describe_dataframe makes it."""
    cols = sorted({k for r in rows for k in r})
    out = {}
    stds = {}
    for c in cols:
        xs = [r[c] for r in rows if c in r]
        out["mean/" + c] = statistics.fmean(xs)
        out["max/" + c] = max(xs)
        out["min/" + c] = min(xs)
        out["median/" + c] = statistics.median(xs)
        if len(xs) > 1:
            stds[c] = statistics.stdev(xs)
    if not stds:  # every std NaN: 0 for the columns no row lacks
        stds = {c: 0.0 for c in cols if all(c in r for r in rows)}
    out.update(("std/" + c, v) for c, v in stds.items())
    return out


def close_enough(got, want, where):
    if set(got) != set(want):
        raise RuntimeError(f"{where}: keys {sorted(got)} != {sorted(want)}")
    for k, w in want.items():
        if abs(float(got[k]) - float(w)) > 1e-9 * max(1.0, abs(float(w))):
            raise RuntimeError(f"{where}: {k} = {got[k]}, want {w}")


async def aggregate_flow(client, base, verified):
    """The end of ng_collect_rollouts (simple_agent forwards its
    /aggregate_metrics to the resources server), and gym eval reverify's
    question: neither holds a session, so no cookie is sent."""
    async with client.get(base + "/reverify_mode") as resp:
        if resp.status != 200:
            raise RuntimeError(f"reverify_mode: {resp.status} {(await resp.read())[:300]!r}")
        mode = json.loads(await resp.read())
    # The replies as the collection sends them: stripped of the response
    # (all but its usage) and the input, indexed by task and rollout.
    first = {k: v for k, v in verified.items() if k not in ("response", "responses_create_params")}
    replies = [dict(first, _ng_task_index=0, _ng_rollout_index=0),
               {"_ng_task_index": 0, "_ng_rollout_index": 1, "reward": 1.5, "seed": 7,
                "response": {"usage": {"input_tokens": 10, "output_tokens": 5}}},
               {"_ng_task_index": 1, "_ng_rollout_index": 0, "reward": -2.0, "resolved": True}]
    status, raw, _ = await post(client, base + "/aggregate_metrics", {"verify_responses": replies}, None)
    if status != 200:
        raise RuntimeError(f"aggregate_metrics: {status} {raw[:300]!r}")
    got = json.loads(raw)
    rows = [numbers(r) for r in replies]
    want_agent = describe(rows)
    close_enough(got["agent_metrics"], want_agent, "agent_metrics")
    close_enough(got["key_metrics"], {k: v for k, v in want_agent.items() if k.startswith("mean/")}, "key_metrics")
    groups = got["group_level_metrics"]
    if [g["_ng_task_index"] for g in groups] != [0, 1]:
        raise RuntimeError(f"group_level_metrics: tasks {[g.get('_ng_task_index') for g in groups]}")
    checked = 0
    for g, task_rows in zip(groups, (rows[:2], rows[2:])):
        stats = {k: v for k, v in g.items() if "/" in k}
        close_enough(stats, describe(task_rows), f"task {g['_ng_task_index']}")
        if g["num_rollouts"] != len(task_rows) or len(g["rollout_infos"]) != len(task_rows):
            raise RuntimeError(f"task {g['_ng_task_index']}: {g['num_rollouts']} rollouts")
        checked += len(stats)
    return {"flow": "aggregate", "reverify_mode": mode, "checked": checked + len(want_agent),
            "mean_reward": got["agent_metrics"]["mean/reward"]}


async def main(base, world, seed, member):
    row = {"world": world, "seed": seed, "member": member, "task_id": f"{world}-{seed}-{member}",
           "responses_create_params": {"input": [{"role": "user", "content": f"Play {member}."}]}}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar(), timeout=aiohttp.ClientTimeout(total=300)) as client:
        # A call with no session cookie, and one with a forged one, reach
        # no session.
        for cookies in (None, {"corpsim_nemo": "FORGED"}):
            status, raw, _ = await post(client, base + "/observe", {}, cookies)
            if status < 400:
                raise RuntimeError(f"observe with cookies {cookies}: {status} {raw[:300]!r}")
        verified, simple = await simple_flow(client, base, row)
        print(json.dumps(simple), flush=True)
        print(json.dumps(await gymnasium_flow(client, base, dict(row, seed=seed + 1))), flush=True)
        print(json.dumps(await aggregate_flow(client, base, verified)), flush=True)


if __name__ == "__main__":
    base, world, seed, member = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    asyncio.run(main(base.rstrip("/"), world, seed, member))
