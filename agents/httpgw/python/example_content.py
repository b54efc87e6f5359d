#!/usr/bin/env python3
"""Play a content world (billing-support) through corpsim's HTTP gateway,
standard library only: every seat is remote and this controller plays them
all through the Gym-style step endpoint, with the record tools.

A support agent takes a refund step, works it, reads the invoice from the
system the policy ranks first (billing) with "get", and, once the invoice is
in its next observation's "results", writes the refund the policy gives
(an annual plan in full, a monthly plan half, rounded down) with "update"
and completes the step. A value in no system (why a customer who phoned
asks for the refund) it asks of the colleague the case view names under
"ask", naming the case, and writes once the answer is under "told". The
confirmation step (outcome kind "reply") is a message to the case's
requester naming the case and the amount. The rubric verifies the invoices
and the replies from the state.

It prints one JSON line: {"session", "return", "score", "steps", "status",
"reads", "writes"}.

    python3 example_content.py --url http://127.0.0.1:8080 --token "$(cat corpsim-data/operator.token)"
"""

import argparse
import json
import sys

from corpsim_client import Client


def first_ranked(obs, record):
    """The system the policy ranks first among those holding record type record."""
    best = None
    for s in obs.get("systems") or []:
        if "get" not in s.get("may", []):
            continue
        if any(t["id"] == record for t in s.get("types", [])):
            rank = s.get("precedence") or 1 << 30
            if best is None or rank < best[0]:
                best = (rank, s["id"])
    return best and best[1]


def refund(invoice):
    """The policy's refund of an invoice."""
    if invoice["plan"] == "annual":
        return invoice["amount"]
    return invoice["amount"] // 2


def case_view(obs, case):
    for c in obs.get("cases") or []:
        if c["id"] == case:
            return c
    return {}


def decide(obs, counts):
    acts = []
    for task in obs.get("assigned") or []:
        if task["status"] == "in_progress" or task.get("waiting_on"):
            continue
        if task.get("spent", 0) < task.get("effort", 0):
            return [{"type": "work", "task": task["id"]}]
        out = task.get("outcome")
        if out:
            # First what no system holds: ask its holder (naming the case) and wait for the answer.
            cv = case_view(obs, task["case"])
            told, ask = cv.get("told") or {}, cv.get("ask") or {}
            missing = [f for f in sorted(out["set"]) if f in ask and f not in told]
            for f in missing:
                if (task["case"], f) not in counts["asked"]:
                    counts["asked"].add((task["case"], f))
                    acts.append({"type": "message", "to": ask[f], "text": "What is the %s for case %s?" % (f, task["case"])})
            if missing:
                continue
            record, rid = out["record"], out["id"]
            if out.get("kind") == "reply":
                record, rid = out["from"].split("/", 1)
            needs_record = out.get("kind") == "reply" or any(f in ("refunded", "status") for f in out["set"])
            seen = [r for res in obs.get("results") or [] for r in res["records"]
                    if r["record"] == record and r["id"] == rid]
            if needs_record and not seen:
                if first_ranked(obs, record):
                    counts["reads"] += 1
                    acts.append({"type": "get", "record": record, "id": rid})
                continue
            amount = refund(seen[0]["fields"]) if seen else 0
            if out.get("kind") == "reply":
                acts.append({"type": "message", "to": out["to"],
                             "text": "Case %s: we refunded %d." % (task["case"], amount)})
                acts.append({"type": "complete", "task": task["id"]})
                continue
            fields = {}
            for f in sorted(out["set"]):
                if f == "refunded":
                    fields[f] = amount
                elif f == "status":
                    fields[f] = "refunded"
                elif f in told:
                    fields[f] = told[f]
            counts["writes"] += 1
            acts.append({"type": "update", "record": out["record"], "id": out["id"], "fields": fields})
        acts.append({"type": "complete", "task": task["id"]})
    available = obs.get("available") or []
    done = {a["task"] for a in acts if a["type"] == "complete"}
    if available and all(t["id"] in done for t in obs.get("assigned") or []):
        # Nothing left in hand: take the next (a wait would sleep until something changes).
        return acts + [{"type": "claim", "task": available[0]["id"]}, {"type": "work", "task": available[0]["id"]}]
    return acts + [{"type": "wait"}]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8080")
    p.add_argument("--token", required=True, help="the operator token")
    p.add_argument("--world", default="billing-support")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    client = Client(args.url, args.token)
    session = client.create_session(world=args.world, seed=args.seed, agents="remote")["session"]
    counts = {"reads": 0, "writes": 0, "asked": set()}
    total, steps = 0.0, 0
    reply = client.step(session)
    while True:
        steps += 1
        total += reply["rewards"]
        if reply["done"]:
            break
        actions = {m: decide(o, counts) for m, o in sorted(reply["observations"].items())}
        reply = client.step(session, actions)
    print(json.dumps({"session": session, "return": round(total, 6), "score": reply.get("score"), "steps": steps,
                      "status": reply.get("status"), "reads": counts["reads"], "writes": counts["writes"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
