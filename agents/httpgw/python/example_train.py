#!/usr/bin/env python3
"""A training loop against corpsim's HTTP gateway, standard library only.

Each episode is a session in which every seat is remote and one controller
plays them all through the Gym-style step endpoint: the first episode
creates the session, every later one resets it (a fork at event 1, so the
same world and seed start over). The policy is simple and mostly greedy:
approve valid requests, finish held tasks (work until the effort is spent,
ask for approval when a purchase needs it, complete), otherwise claim an
available task — the most valuable, or with probability --epsilon a random
one — and wait when there is nothing to do.

It prints one JSON line per episode, {"episode", "session", "return",
"score", "steps", "status"}, where "return" is the sum of the step rewards
and "score" the final team score the gateway reports; then a summary line.

    corpsim serve --http 127.0.0.1:8080 &
    python3 example_train.py --url http://127.0.0.1:8080 --token "$(cat corpsim-data/operator.token)" --episodes 5
"""

import argparse
import json
import random
import sys

from corpsim_client import Client

MAX_ACTIONS = 16  # org.MaxActions: a longer reply is rejected whole


def budget_left(obs, charges):
    """What the budget a purchase is paid from has left: charges (another
    team's budget, shown on the task or request), else the member's own;
    None when the observation shows neither."""
    return (charges or obs.get("budget") or {}).get("remaining")


def queue_down(obs, queue):
    """Whether the observation shows queue down: work in it is refused
    until it is back (its coming back wakes those who serve it)."""
    return any(q["id"] == queue and q.get("down_until", 0) > obs["time"]
               for q in obs.get("queues") or [])


def invalid_request(obs, req):
    """Why an approval request should be rejected, or "" (the greedy baseline's checks)."""
    budget = budget_left(obs, req.get("task_charges"))
    if req["requester"] == obs["member"]:
        return "cannot approve my own request"
    if req.get("task_assignee") != req["requester"]:
        return "the requester does not hold the task"
    if req.get("amount") != req.get("task_purchase"):
        return "the amount does not match the task's purchase"
    if budget is not None and req["amount"] > budget:
        return "not enough budget left"
    return ""


def decide(obs, rng, epsilon):
    """The actions for one observation."""
    acts = []
    for req in obs.get("approvals") or []:
        why = invalid_request(obs, req)
        if why:
            acts.append({"type": "reject", "request": req["id"], "reason": why})
        else:
            acts.append({"type": "approve", "request": req["id"]})
    for task in sorted(obs.get("assigned") or [], key=lambda t: -t.get("value", 0)):
        if task["status"] == "in_progress" or task.get("waiting_on"):
            continue
        if task.get("spent", 0) < task.get("effort", 0):
            if queue_down(obs, task.get("queue")):
                continue
            acts.append({"type": "work", "task": task["id"]})  # work ends the turn
            return acts[:MAX_ACTIONS]
        info = task.get("needs_info")
        if info and not info.get("known"):
            asked = any(m.get("from") == info["from"] and info["topic"] in m.get("text", "")
                        for m in obs.get("awaiting") or [])
            if not asked:
                acts.append({"type": "message", "to": info["from"],
                             "text": "Hi %s, could you tell me about %s? I need it for %s." % (info["from"], info["topic"], task["id"])})
            continue
        approval = task.get("approval", "")
        budget = budget_left(obs, task.get("charges"))
        if approval in ("needed", "rejected"):
            if budget is None or task.get("purchase", 0) <= budget:
                acts.append({"type": "request_approval", "task": task["id"]})
            continue
        if approval == "pending":
            continue
        if budget is not None and task.get("purchase", 0) > budget:
            continue
        acts.append({"type": "complete", "task": task["id"]})
    # Tasks whose purchase no budget can pay any more are left, but for a
    # ticket: a queue's head blocks the tickets behind it until someone takes it.
    available = [t for t in obs.get("available") or []
                 if t.get("kind") == "ticket" or budget_left(obs, t.get("charges")) is None
                 or t.get("purchase", 0) <= budget_left(obs, t.get("charges"))]
    if available:
        task = rng.choice(available) if rng.random() < epsilon else available[0]
        acts.append({"type": "claim", "task": task["id"]})
        if task.get("spent", 0) < task.get("effort", 0):  # one handed over once done is only completed
            acts.append({"type": "work", "task": task["id"]})
        return acts[-MAX_ACTIONS:]
    acts.append({"type": "wait"})
    return acts[-MAX_ACTIONS:]


def run_episode(client, session, rng, epsilon):
    """Step a session to its end; returns (return, final step reply, steps)."""
    total, steps = 0.0, 0
    reply = client.step(session)  # the initial observations
    while True:
        steps += 1
        total += reply["rewards"]
        if reply["done"]:
            return total, reply, steps
        actions = {member: decide(obs, rng, epsilon) for member, obs in sorted(reply["observations"].items())}
        reply = client.step(session, actions)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8080", help="the gateway's base URL")
    p.add_argument("--token", help="the operator token")
    p.add_argument("--token-file", help="read the operator token from this file (e.g. corpsim-data/operator.token)")
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--world", default="startup")
    p.add_argument("--seed", type=int, default=7, help="the world's seed")
    p.add_argument("--epsilon", type=float, default=0.1, help="chance of claiming a random available task")
    p.add_argument("--rng-seed", type=int, default=1, help="seed of the policy's exploration")
    args = p.parse_args(argv)
    token = args.token
    if not token and args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    if not token:
        p.error("give --token or --token-file")

    client = Client(args.url, token)
    rng = random.Random(args.rng_seed)
    first = None
    returns = []
    for episode in range(1, args.episodes + 1):
        if first is None:
            session = client.create_session(world=args.world, seed=args.seed, agents="remote")["session"]
            first = session
        else:
            session = client.reset(first)["session"]
        ret, last, steps = run_episode(client, session, rng, args.epsilon)
        returns.append(ret)
        print(json.dumps({"episode": episode, "session": session, "return": round(ret, 6),
                          "score": last.get("score"), "steps": steps, "status": last.get("status")}), flush=True)
    mean = sum(returns) / len(returns) if returns else 0.0
    print(json.dumps({"episodes": len(returns), "mean_return": round(mean, 6),
                      "best_return": round(max(returns), 6) if returns else None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
