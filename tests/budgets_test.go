package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/worlds"
)

// The budgets of issue 17 on every path: the command line, NATS and HTTP.

// slaWarning is an arrival whose SLA no ticket can meet: a warning, not a mistake.
const slaWarning = "arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1d, ticket: {role: engineer, effort: {min: 3h, max: 5h}, sla: 2h}}\n"

// withStartup writes the startup world with extra appended, as name in dir.
func withStartup(tb testing.TB, dir, name, extra string) string {
	tb.Helper()
	src, err := worlds.Source("startup")
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, append(src, extra...), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestCLILoadRefused: a load that is not a load (0, negative, NaN, Inf) or
// above --max-load is refused on one line with exit 2 by every command that
// takes one, before any session is created.
func TestCLILoadRefused(t *testing.T) {
	msgs := map[string]string{
		"0":     "corpsim: load 0 must be more than zero (a load is a factor such as 0.5, 1 or 2)\n",
		"-1":    "corpsim: load -1 must be more than zero (a load is a factor such as 0.5, 1 or 2)\n",
		"NaN":   "corpsim: load NaN is not a finite number (a load is a factor such as 0.5, 1 or 2)\n",
		"Inf":   "corpsim: load +Inf is not a finite number (a load is a factor such as 0.5, 1 or 2)\n",
		"1e300": "corpsim: worlds: over a limit: load 1e+300 is above the limit of 100 (--max-load)\n",
	}
	for load, want := range msgs {
		for _, cmd := range [][]string{{"run"}, {"eval", "--seeds", "1"}, {"worlds", "validate", withStartup(t, t.TempDir(), "w.yaml", "")}} {
			t.Run(cmd[0]+" --load "+load, func(t *testing.T) {
				data := filepath.Join(t.TempDir(), "data")
				args := append(append([]string(nil), cmd...), "--load", load)
				if cmd[0] == "run" {
					args = append(args, "--data", data)
				}
				out, errs, code := runCLI(t, args...)
				if code != cli.ExitUsage || errs != want {
					t.Errorf("got exit %d and %q, want exit %d and %q", code, errs, cli.ExitUsage, want)
				}
				if out != "" {
					t.Errorf("stdout: %q", out)
				}
				if _, err := os.Stat(data); err == nil {
					t.Errorf("the refused run made its data folder %s (a session may be left behind)", data)
				}
			})
		}
	}
	_, errs, code := runCLI(t, "run", "--ephemeral", "--load", "3", "--max-load", "2")
	if code != cli.ExitUsage || !strings.Contains(errs, "load 3 is above the limit of 2 (--max-load)") {
		t.Errorf("run --load 3 --max-load 2: exit %d, %q", code, errs)
	}
}

// TestCLIWorldBudgets: a world file over a budget is refused by every
// command that reads or plays one, naming the budget's flag; a 50 MB file
// is refused from its size, without being read; validate prints the
// world's warnings and exits 0, run logs them.
func TestCLIWorldBudgets(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(50 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{{"worlds", "validate", huge}, {"run", "--ephemeral", "--world", huge}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, errs, code := runCLI(t, args...)
		runtime.ReadMemStats(&after)
		want := huge + ": worlds: over a limit: the file is 52428800 bytes, above the limit of 16777216 (--max-world-bytes)"
		if code != cli.ExitError || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, %q; want exit 1 and %q", args[0], code, errs, want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
			t.Errorf("%s: refusing a 50 MB file allocated %d MiB; it must not be read", args[0], grew>>20)
		}
	}
	// Not a regular file: no more than the limit and a byte is read.
	_, errs, code := runCLI(t, "worlds", "validate", "--max-world-bytes", "1000", "/dev/zero")
	if code != cli.ExitError || !strings.Contains(errs, "/dev/zero: worlds: over a limit: the file is more than 1000 bytes, above the limit of 1000 (--max-world-bytes)") {
		t.Errorf("validate /dev/zero: exit %d, %q", code, errs)
	}

	// Each budget's flag, on each command.
	data := t.TempDir()
	first := cliResult(t, "run", "--seed", "2", "--data", data)
	out, errs, code := runCLI(t, "fork", first.Session, "--at", "1", "--create-only", "--json", "--data", data) // before alice's first turn (2, its actions 3 and 4)
	var forked struct{ ID string }
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &forked) != nil {
		t.Fatalf("fork --create-only: exit %d\n%s%s", code, out, errs)
	}
	startup := withStartup(t, dir, "startup.yaml", "")
	nested := withStartup(t, dir, "nested.yaml", "description2: "+strings.Repeat("[", 10)+strings.Repeat("]", 10)+"\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"validate --max-members", []string{"worlds", "validate", startup, "--max-members", "5"}, "6 members, above the limit of 5 (--max-members)"},
		{"validate --max-tasks", []string{"worlds", "validate", startup, "--max-tasks", "2"}, "above the limit of 2 (--max-tasks)"},
		{"validate --max-world-depth", []string{"worlds", "validate", nested, "--max-world-depth", "4"}, "collections nested more than 4 deep (--max-world-depth)"},
		{"validate --max-world-bytes", []string{"worlds", "validate", startup, "--max-world-bytes", "100"}, "above the limit of 100 (--max-world-bytes)"},
		{"validate --max-arrivals", []string{"worlds", "validate", withStartup(t, dir, "a.yaml", slaWarning), "--max-arrivals", "3"}, "above the limit of 3 (--max-arrivals)"},
		{"validate --max-burst at --load", []string{"worlds", "validate", withStartup(t, dir, "b.yaml",
			"arrivals:\n  - {id: b, queue: backlog, process: bursty, every: 1d, burst: 50, ticket: {role: engineer, effort: 1h}}\n"), "--max-burst", "60", "--load", "2"},
			"brings 100 tickets at one instant, above the limit of 60 (--max-burst)"},
		{"run --max-members", []string{"run", "--ephemeral", "--max-members", "5"}, "(--max-members)"},
		{"eval --max-members", []string{"eval", "--seeds", "1", "--max-members", "5"}, "(--max-members)"},
		{"sweep --max-load", []string{"sweep", "--world", "startup", "--loads", "1,4", "--seeds", "1", "--max-load", "3"}, "load 4 is above the limit of 3 (--max-load)"},
		{"fork --max-members", []string{"fork", first.Session, "--at", "1", "--data", data, "--max-members", "5"}, "(--max-members)"},
		{"reset --max-load", []string{"reset", first.Session, "--data", data, "--max-load", "0.5"}, "load 1 is above the limit of 0.5 (--max-load)"},
		{"resume --max-tasks", []string{"resume", forked.ID, "--data", data, "--max-tasks", "1"}, "(--max-tasks)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCLI(t, tc.args...)
			if code == cli.ExitOK || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("got exit %d and %q, want a refusal on one line containing %q", code, errs, tc.want)
			}
		})
	}

	// Warnings: printed by validate (exit 0), logged by run.
	warned := withStartup(t, dir, "warned.yaml", slaWarning)
	out, errs, code = runCLI(t, "worlds", "validate", warned)
	want := "warning: " + warned + ":71:116: arrivals[0].ticket.sla: the SLA (2h) is shorter than the work every ticket needs (3h): no ticket can meet it\n" + warned + ": ok\n"
	if code != cli.ExitOK || out != want {
		t.Errorf("validate a world with a warning: exit %d\n%s%s\nwant exit 0 and\n%s", code, out, errs, want)
	}
	_, errs, code = runCLI(t, "run", "--ephemeral", "--world", warned)
	if code != cli.ExitOK || !strings.Contains(errs, "[WARN]  corpsim: world: "+warned+":71:116: arrivals[0].ticket.sla: the SLA (2h) is shorter") {
		t.Errorf("run of a world with a warning: exit %d, stderr:\n%s", code, errs)
	}
}

// TestServeBudgets: a real serve with world budgets refuses, over NATS and
// over HTTP, creates whose world or load is over a budget (with the CLI's
// message), and creates with a field the protocol does not have (naming
// it), and goes on serving.
func TestServeBudgets(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	haddr := freeAddr(t)
	sp := startServe(t, t.TempDir(), "--http", haddr, "--max-load", "5", "--max-members", "6")
	token := strings.TrimSpace(string(mustRead(t, filepath.Join(sp.data, "operator.token"))))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// natsCreate sends a create request as raw JSON and returns its error.
	natsCreate := func(body string) string {
		msg, err := sp.op.Conn().RequestWithContext(ctx, wire.CreateSubject, []byte(body))
		if err != nil {
			t.Fatalf("create over NATS: %v", err)
		}
		var reply wire.CreateReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		return reply.Error
	}
	httpCreate := func(body string) (int, string) {
		rq, err := http.NewRequestWithContext(ctx, "POST", "http://"+haddr+"/v1/sessions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rq.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatalf("create over HTTP: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code := resp.StatusCode
		var e struct{ Error string }
		_ = json.Unmarshal(b, &e)
		return code, e.Error
	}
	big := worlds.Generate(worlds.GenOptions{Name: "big", Seed: 1, Members: 7, Tasks: 4})
	deep, _ := json.Marshal("version: 1\nname: x\nroles: " + strings.Repeat("[", 100_000) + "\n")
	burst, _ := json.Marshal(string(mustRead(t, withStartup(t, t.TempDir(), "w.yaml",
		"arrivals:\n  - {id: b, queue: backlog, process: bursty, every: 1d, burst: 1000000000, ticket: {role: engineer, effort: 1h}}\n"))))
	bigSrc, _ := json.Marshal(string(big))
	for _, tc := range []struct{ name, body, want string }{
		{"load -1", `{"world":"startup","agents":"greedy","load":-1}`, "load -1 must be more than zero (a load is a factor such as 0.5, 1 or 2)"},
		{"load 0", `{"world":"startup","agents":"greedy","load":0}`, "load 0 must be more than zero (a load is a factor such as 0.5, 1 or 2)"},
		{"load 1e300", `{"world":"startup","agents":"greedy","load":1e300}`, "worlds: over a limit: load 1e+300 is above the limit of 5 (--max-load)"},
		{"load 6", `{"world":"startup","agents":"greedy","load":6}`, "load 6 is above the limit of 5 (--max-load)"},
		{"members", `{"source":` + string(bigSrc) + `,"agents":"greedy"}`, "above the limit of 6 (--max-members)"},
		{"nesting", `{"source":` + string(deep) + `,"agents":"greedy"}`, "collections nested more than 64 deep (--max-world-depth)"},
		{"burst", `{"source":` + string(burst) + `,"agents":"greedy"}`, "brings 1000000000 tickets at one instant, above the limit of 10000 (--max-burst)"},
		{"unknown field", `{"world":"startup","agents":"greedy","sed":3}`, `unknown field "sed"`},
		{"trailing data", `{"world":"startup","agents":"greedy"} {}`, "trailing data"},
		{"a trailing brace", `{"world":"startup","agents":"greedy"}}`, "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := natsCreate(tc.body); !strings.Contains(got, tc.want) {
				t.Errorf("over NATS: got error %q, want one containing %q", got, tc.want)
			}
			if code, got := httpCreate(tc.body); code != 400 || !strings.Contains(got, tc.want) {
				t.Errorf("over HTTP: got %d %q, want 400 containing %q", code, got, tc.want)
			}
		})
	}
	// Still serving: an omitted load is 1, and 4 is within the limit.
	for _, body := range []string{`{"world":"startup","agents":"greedy","seed":1}`, `{"world":"startup","agents":"greedy","seed":2,"load":4}`} {
		if e := natsCreate(body); e != "" {
			t.Errorf("create %s: %s", body, e)
		}
		if code, e := httpCreate(body); code != 201 {
			t.Errorf("create %s over HTTP: %d %s", body, code, e)
		}
	}
	sp.stop(t, 30*time.Second)
}

// TestRaisedLimitsAreRecorded: a session run with a world budget raised
// (--max-burst, for a world whose burst is over the default) records it
// in session.started, so its replay, verify, score, diff and report load
// the world, and a fork and a resume of it run, without the flag. A
// session within the defaults records none (the golden logs test that).
func TestRaisedLimitsAreRecorded(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	world := withStartup(t, dir, "burst.yaml",
		"arrivals:\n  - {id: b, queue: backlog, process: bursty, every: 1d, burst: 12000, ticket: {role: engineer, effort: 1h}}\n")
	if _, errs, code := runCLI(t, "run", "--world", world, "--data", data); code == cli.ExitOK || !strings.Contains(errs, "(--max-burst)") {
		t.Fatalf("precondition: the world within the default limits: exit %d, %s", code, errs)
	}
	res := cliResult(t, "run", "--world", world, "--data", data, "--max-burst", "12000", "--max-events", "3000")
	s := res.Session
	started := storedEvents(t, data, s)[0]
	if !strings.Contains(string(started.Payload), `"world_limits":{"burst":12000}`) {
		t.Fatalf("session.started does not record the raised limit: %s", started.Payload)
	}
	for _, args := range [][]string{{"replay", s}, {"verify", s}, {"score", s}, {"diff", s, s},
		{"report", s, "-o", filepath.Join(dir, "r.html")}, {"fork", s, "--at", "100", "--max-events", "3000"}} {
		mustCLI(t, append(args, "--data", data)...)
	}
	out := mustCLI(t, "fork", s, "--at", "50", "--create-only", "--json", "--data", data)
	var forked struct{ ID string }
	if err := json.Unmarshal([]byte(out), &forked); err != nil {
		t.Fatalf("fork --create-only: %v\n%s", err, out)
	}
	if r := cliResult(t, "resume", forked.ID, "--data", data, "--max-events", "3000"); r.Events <= 50 {
		t.Fatalf("the resumed fork has %d events", r.Events)
	}
}
