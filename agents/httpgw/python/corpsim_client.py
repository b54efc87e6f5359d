"""A client for corpsim's HTTP/JSON gateway (corpsim serve --http ADDR).

Standard library only. The operator token (DATA/operator.token of the server,
or its --operator-token) creates, forks, steps and scores sessions; each
remote seat has its own token, returned when its session is created, which
only reaches that seat's observe and act.

    from corpsim_client import Client
    c = Client("http://127.0.0.1:8080", operator_token)
    s = c.create_session(world="startup", seed=7, agents="remote")
    r = c.step(s["session"])                       # the initial observations
    while not r["done"]:
        r = c.step(s["session"], {m: policy(o) for m, o in r["observations"].items()})
    print(r["score"])
"""

import json
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "CorpsimError"]


class CorpsimError(Exception):
    """An HTTP error from the gateway: status is the HTTP status, body its decoded JSON (if any)."""

    def __init__(self, status, message, body=None):
        super().__init__("HTTP %d: %s" % (status, message))
        self.status = status
        self.message = message
        self.body = body


class Client:
    """A client of one gateway. Not thread-safe for the seat tokens it remembers;
    use one Client per thread, or pass tokens explicitly."""

    def __init__(self, base_url, operator_token, timeout=120.0):
        self.base_url = base_url.rstrip("/")
        self.operator_token = operator_token
        self.timeout = timeout
        self.seat_tokens = {}  # (session, member) -> token, from the sessions this client created

    # --- plumbing ---------------------------------------------------------

    def _request(self, method, path, token, body=None, query=None, timeout=None):
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None
        headers = {"Authorization": "Bearer " + token, "Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                raw = resp.read()
                if resp.status == 204 or not raw:
                    return None
                return json.loads(raw)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                decoded = json.loads(raw)
                message = decoded.get("error", raw.decode("utf-8", "replace"))
            except ValueError:
                decoded, message = None, raw.decode("utf-8", "replace")
            raise CorpsimError(e.code, message, decoded) from None

    def _remember(self, reply):
        for member, seat in (reply.get("seats") or {}).items():
            self.seat_tokens[(reply["session"], member)] = seat["token"]
        return reply

    def _seat_token(self, session, member, token):
        if token:
            return token
        try:
            return self.seat_tokens[(session, member)]
        except KeyError:
            raise ValueError("no token known for seat %s of session %s: pass token=" % (member, session)) from None

    # --- operator ---------------------------------------------------------

    def create_session(self, world="startup", seed=0, agents="remote", source=None, load=None,
                       wait=False, turn_timeout=None):
        """Create a session; returns {"session": id, "seats": {member: {"token": ...}}}."""
        body = {"world": world, "seed": seed, "agents": agents}
        if source is not None:
            body["source"] = source
        if load is not None:
            body["load"] = load
        if wait:
            body["wait"] = True
        if turn_timeout is not None:
            body["turn_timeout"] = turn_timeout
        return self._remember(self._request("POST", "/v1/sessions", self.operator_token, body))

    def fork(self, session, at, seed=None, agents=None):
        """A new session continuing session from its event `at` (agents default to the parent's)."""
        body = {"at": at}
        if seed is not None:
            body["seed"] = seed
        if agents is not None:
            body["agents"] = agents
        return self._remember(self._request("POST", "/v1/sessions/%s/fork" % session, self.operator_token, body))

    def reset(self, session, seed=None, agents=None):
        """A fresh episode of session: a fork at event 1."""
        body = {}
        if seed is not None:
            body["seed"] = seed
        if agents is not None:
            body["agents"] = agents
        return self._remember(self._request("POST", "/v1/sessions/%s/reset" % session, self.operator_token, body))

    def control(self, session, op):
        """op: start, pause, stop or status."""
        return self._request("POST", "/v1/sessions/%s/control" % session, self.operator_token, {"op": op})

    def step(self, session, actions=None, wait="60s"):
        """Answer the turns the previous step returned ({member: [action, ...]}; missing members wait)
        and return the next ones: {"observations", "rewards", "reward_events", "done", "score"}."""
        return self._request("POST", "/v1/sessions/%s/step" % session, self.operator_token,
                             {"actions": actions or {}}, query={"wait": wait},
                             timeout=self.timeout + _seconds(wait))

    def events(self, session, from_seq=1, limit=1000):
        """All stored events from from_seq on (paged by the gateway)."""
        out = []
        while True:
            page = self._request("GET", "/v1/sessions/%s/events" % session, self.operator_token,
                                 query={"from": from_seq, "limit": limit})
            out.extend(page["events"])
            if not page.get("next"):
                return out
            from_seq = page["next"]

    def score(self, session):
        """{"status", "events", "score", "complete", ...}: the team score by the rewards so far."""
        return self._request("GET", "/v1/sessions/%s/score" % session, self.operator_token)

    # --- one seat ---------------------------------------------------------

    def observe(self, session, member, wait="30s", token=None):
        """Long-poll the seat: its observation when it is asked to decide, {"done": True, ...}
        once the session has ended, or None when the wait passes."""
        return self._request("GET", "/v1/sessions/%s/seats/%s/observation" % (session, member),
                             self._seat_token(session, member, token), query={"wait": wait},
                             timeout=self.timeout + _seconds(wait))

    def act(self, session, member, turn, actions, token=None):
        """Answer the seat's waiting turn (echo the observation's turn)."""
        return self._request("POST", "/v1/sessions/%s/seats/%s/act" % (session, member),
                             self._seat_token(session, member, token), {"turn": turn, "actions": actions})


def _seconds(d):
    """Seconds in a Go duration string such as "30s", "1m30s" or "500ms" (roughly; for timeouts)."""
    d = str(d)
    total, num = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    i = 0
    while i < len(d):
        c = d[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        unit = d[i:i + 2] if d[i:i + 2] in units else c
        total += float(num or 0) * units.get(unit, 1.0)
        num = ""
        i += len(unit)
    if num:
        total += float(num)
    return total
