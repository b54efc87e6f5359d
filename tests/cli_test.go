package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/sim/app"
)

func runCLI(tb testing.TB, args ...string) (stdout, stderr string, code int) {
	tb.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestCLIRunThenReplay is the README's first command: run the startup world
// on the Pebble log in a data folder, get a non-zero team score, then replay
// the session and see its state hash match.
func TestCLIRunThenReplay(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--seed", "7", "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	m := regexp.MustCompile(`(?m)^session\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no session in the scorecard:\n%s", out)
	}
	score := regexp.MustCompile(`(?m)^team score\s+([0-9.]+)`).FindStringSubmatch(out)
	if score == nil || score[1] == "0.00" {
		t.Fatalf("want a non-zero team score in:\n%s", out)
	}
	// The README shows this run: what it says must be what a reader
	// gets (a state hash out of date makes a correct build look broken).
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := string(readme)
	shown = shown[strings.Index(shown, "$ go run ./cmd/corpsim run --seed 7"):]
	shown = shown[:strings.Index(shown, "\n```")]
	for _, field := range []string{"team score", "tasks done", "violations", "turns", "events", "state hash"} {
		line := regexp.MustCompile(`(?m)^` + field + `\s+(.*)$`)
		want, got := line.FindStringSubmatch(shown), line.FindStringSubmatch(out)
		if want == nil || got == nil || want[1] != got[1] {
			t.Errorf("README's run --seed 7 shows %s %q; the run says %q", field, want, got)
		}
	}
	out, errs, code = runCLI(t, "replay", m[1], "--data", data)
	if code != cli.ExitOK || !strings.Contains(out, "state hash matches") {
		t.Fatalf("replay exited %d:\n%s%s", code, out, errs)
	}

	out, _, code = runCLI(t, "run", "--seed", "7", "--data", data, "--json")
	var res app.RunResult
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("run --json exited %d with:\n%s", code, out)
	}
	if res.Score.TeamScore <= 0 || res.Events == 0 || res.StateHash == "" || res.Session == m[1] {
		t.Fatalf("run --json gave %+v", res)
	}
	out, _, code = runCLI(t, "replay", res.Session, "--data", data, "--json")
	var rep app.ReplayResult
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &rep) != nil || !rep.Match || rep.Replayed != res.StateHash || rep.Events != res.Events {
		t.Fatalf("replay --json exited %d with %s", code, out)
	}
	// A session that did not end has no final hash: its replay says so
	// and exits 0 (3 is for a hash that differs, or damage).
	out, errs, code = runCLI(t, "fork", res.Session, "--at", "38", "--create-only", "--data", data)
	fork := regexp.MustCompile(`session (\S+): fork of`).FindStringSubmatch(out)
	if code != cli.ExitOK || fork == nil {
		t.Fatalf("fork --create-only exited %d:\n%s%s", code, out, errs)
	}
	out, errs, code = runCLI(t, "replay", fork[1], "--data", data)
	if code != cli.ExitOK || !strings.Contains(out, "replayed 38 events") || !strings.Contains(out, "no final hash to check") {
		t.Fatalf("replay of a session that did not end exited %d:\n%s%s", code, out, errs)
	}
}

func TestCLIErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown world", []string{"run", "--world", "nowhere", "--ephemeral"}, cli.ExitUsage, `no shipped world "nowhere"`},
		{"unknown agent", []string{"run", "--agents", "genius", "--ephemeral"}, cli.ExitUsage, `unknown agent "genius"`},
		{"agent for an NPC", []string{"run", "--agents", "greedy,frank=idle", "--ephemeral"}, cli.ExitUsage, "frank is an NPC"},
		{"no agent after =", []string{"run", "--agents", "greedy,alice=", "--ephemeral"}, cli.ExitUsage, "gives alice no agent after its ="},
		{"a negative --keep-events", []string{"run", "--ephemeral", "--keep-events", "-1"}, cli.ExitUsage, "--keep-events -1: at least 0"},
		{"a negative --turn-timeout", []string{"run", "--ephemeral", "--turn-timeout", "-1s"}, cli.ExitUsage, "--turn-timeout -1s: at least 0"},
		{"a load twice in a sweep", []string{"sweep", "--world", "startup", "--loads", "1,1", "--agents", "greedy"}, cli.ExitUsage, "--loads gives 1 twice"},
		{"agents twice in a sweep", []string{"sweep", "--world", "startup", "--loads", "1", "--agents", "greedy,greedy"}, cli.ExitUsage, `--agents gives "greedy" twice`},
		{"two agents for a seat", []string{"run", "--agents", "greedy,bob=idle,bob=planner", "--ephemeral"}, cli.ExitUsage, "gives bob two agents (idle and planner)"},
		{"an unknown type among several", []string{"log", "S", "--type", "turn,bogus.type", "--data", "DATA"}, cli.ExitUsage, `--type "bogus.type" is not an event type`},
		{"unknown session", []string{"replay", "NOSUCH", "--data", "DATA"}, cli.ExitError, "no session NOSUCH"},
		{"missing world file", []string{"worlds", "validate", "/nonexistent/w.yaml"}, cli.ExitError, "no such file"},
		// Usage errors exit 2 with one line naming what was wrong.
		{"misspelt flag", []string{"run", "--sed", "7"}, cli.ExitUsage, "run: unknown flag: --sed (see corpsim run --help)"},
		{"missing argument", []string{"replay"}, cli.ExitUsage, "replay: takes 1 argument, got 0 (usage: corpsim replay SESSION"},
		{"too many arguments", []string{"diff", "A"}, cli.ExitUsage, "diff: takes 2 arguments, got 1"},
		{"a file for a data folder", []string{"sessions", "--data", "FILE"}, cli.ExitError, "is a file, not a folder"},
		{"an empty session", []string{"resume", "", "--data", "DATA"}, cli.ExitUsage, "resume: argument 1 is empty (usage: corpsim resume SESSION"},
		{"an empty second session", []string{"diff", "S", " "}, cli.ExitUsage, "diff: argument 2 is empty"},
		{"bad number", []string{"run", "--seed", "abc"}, cli.ExitUsage, `run: --seed "abc" is not a whole number`},
		{"bad duration", []string{"run", "--turn-timeout", "5x"}, cli.ExitUsage, `--turn-timeout "5x" is not a duration`},
		{"misspelt command", []string{"runn"}, cli.ExitUsage, `unknown command "runn" (did you mean run?)`},
		{"unknown event type", []string{"log", "S", "--type", "bogus.type", "--data", "DATA"}, cli.ExitUsage, `--type "bogus.type" is not an event type; the types are action.rejected,`},
		// Where the output cannot go is said before the work (a sweep can
		// take hours), naming the path given, not a temporary file.
		{"a sweep's -o under a file", []string{"sweep", "--world", "startup", "--loads", "1", "--agents", "greedy", "-o", "FILE/sub"}, cli.ExitError, "/file is not a folder"},
		{"a report into no folder", []string{"report", "S", "--data", "DATA", "-o", "/nonexistent/r.html"}, cli.ExitError, "write /nonexistent/r.html: no folder /nonexistent"},
		{"a report onto a folder", []string{"report", "S", "--data", "DATA", "-o", "DATA"}, cli.ExitError, ": it is a folder; name a file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := slices.Clone(tc.args)
			for i, a := range args {
				if a == "DATA" {
					args[i] = t.TempDir()
				}
				if rest, ok := strings.CutPrefix(a, "FILE"); ok {
					f := filepath.Join(t.TempDir(), "file")
					if err := os.WriteFile(f, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					args[i] = f + rest
				}
			}
			_, errs, code := runCLI(t, args...)
			if tc.code == cli.ExitUsage && strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("a usage error takes one line, got:\n%s", errs)
			}
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("got exit %d and %q, want exit %d and a message containing %q", code, errs, tc.code, tc.want)
			}
		})
	}
}

// serve --http on an external NATS server has no operator token unless
// given one: refused as a usage error naming the flag, before anything is
// made (it exited with an internal field's name once connected).
func TestServeHTTPOnExternalNATSNeedsAToken(t *testing.T) {
	untouched := filepath.Join(t.TempDir(), "data")
	_, errs, code := runCLI(t, "serve", "--nats", "nats://127.0.0.1:1", "--worker", "w1", "--data", untouched, "--http", "127.0.0.1:0")
	if code != cli.ExitUsage || !strings.Contains(errs, "--operator-token") {
		t.Fatalf("exit %d (%s), want %d naming --operator-token", code, errs, cli.ExitUsage)
	}
	if _, err := os.Stat(untouched); err == nil {
		t.Fatal("a usage error made the data folder")
	}
}
