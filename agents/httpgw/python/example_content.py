#!/usr/bin/env python3
"""Play a content world (billing-support) through corpsim's HTTP gateway,
standard library only: every seat is remote and this controller plays them
all through the Gym-style step endpoint, with the record tools.

A support agent takes a refund step, works it, reads the invoice from the
system the policy ranks first (billing) with "get", and, once the invoice is
in its next observation's "results", writes the refund the policy gives
(an annual plan in full, a monthly plan half, rounded down) with "update"
and completes the step. The rubric verifies the invoices from the state.

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


def decide(obs, counts):
    acts = []
    for task in obs.get("assigned") or []:
        if task["status"] == "in_progress" or task.get("waiting_on"):
            continue
        if task.get("spent", 0) < task.get("effort", 0):
            return [{"type": "work", "task": task["id"]}]
        out = task.get("outcome")
        if out:
            seen = [r for res in obs.get("results") or [] for r in res["records"]
                    if r["record"] == out["record"] and r["id"] == out["id"]]
            if not seen:
                if first_ranked(obs, out["record"]):
                    counts["reads"] += 1
                    acts.append({"type": "get", "record": out["record"], "id": out["id"]})
                continue
            counts["writes"] += 1
            acts.append({"type": "update", "record": out["record"], "id": out["id"],
                         "fields": {"refunded": refund(seen[0]["fields"]), "status": "refunded"}})
        acts.append({"type": "complete", "task": task["id"]})
    available = obs.get("available") or []
    if available and not obs.get("assigned"):
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
    counts = {"reads": 0, "writes": 0}
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
