package tests

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/worlds"
)

// worlds gen refuses sizes it cannot make as asked, as usage errors naming
// the flag, where it rounded them up or replaced them by its defaults
// (--teams -1 made 1 team, --teams 5 --members 2 made 15 members) or
// called a bad --horizon a bug; what it can make loads.
func TestWorldsGenRefusesWhatItCannotMake(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--teams", "-1"}, "--teams -1: at least 1"},
		{[]string{"--members", "0"}, "--members 0: at least 1"},
		{[]string{"--tasks", "0"}, "--tasks 0: at least 1"},
		{[]string{"--projects", "0"}, "--projects 0: at least 1"},
		{[]string{"--teams", "5", "--members", "2"}, "--members 2: each of the 5 teams has a lead, a designer and an engineer, so at least 15"},
		{[]string{"--tasks", "2", "--chains", "3"}, "--chains 3: a project of 2 tasks has at most 2 chains"},
		{[]string{"--tickets", "-5"}, "--tickets -5: may not be negative"},
		{[]string{"--stagger", "-1"}, "--stagger -1: may not be negative"},
		{[]string{"--horizon", "-3d"}, "--horizon: clock: invalid duration"},
		{[]string{"--horizon", "0d"}, "--horizon 0d: must be positive"},
		{[]string{"--dispatch", "some"}, `--dispatch "some": expected all or one`},
		// Sizes over the world's limits, refused before a world of that
		// size is built (a billion teams grew to gigabytes first).
		{[]string{"--teams", "1000000000"}, "--teams 1000000000: each team has at least 3 members, over the world limit of 20000 members"},
		{[]string{"--members", "30000"}, "--members 30000: over the world limit of 20000 members"},
		{[]string{"--tasks", "100000000"}, "--projects 1 × --tasks 100000000: over the world limit of 200000 tasks"},
		{[]string{"--projects", "1000", "--tasks", "1000"}, "--projects 1000 × --tasks 1000: over the world limit of 200000 tasks"},
		{[]string{"--name", "x\nversion: 2"}, `--name "x\nversion: 2": a name has no control characters`},
		{[]string{"--projects", "2", "--stagger", "1", "--horizon", "1d"}, "--stagger 1 with --projects 2: the last project would start after 1d, at or after --horizon 1d"},
	} {
		out, errs, code := runCLI(t, append([]string{"worlds", "gen"}, tc.args...)...)
		if code != cli.ExitUsage || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("worlds gen %s: exit %d, %q; want exit %d saying %q and nothing written", strings.Join(tc.args, " "), code, errs, cli.ExitUsage, tc.want)
		}
	}
	out, errs, code := runCLI(t, "worlds", "gen", "--teams", "2", "--members", "6", "--tasks", "3", "--chains", "3", "--horizon", "30d")
	if code != cli.ExitOK || !strings.Contains(out, "horizon: 30d") {
		t.Fatalf("worlds gen at the smallest sizes: exit %d, %s", code, errs)
	}
	// Defaults not given are raised to fit the sizes asked, as before.
	for _, args := range [][]string{{"--teams", "3"}, {"--tasks", "2"}} {
		if _, errs, code := runCLI(t, append([]string{"worlds", "gen"}, args...)...); code != cli.ExitOK {
			t.Errorf("worlds gen %v: exit %d, %s; want the defaults raised to fit", args, code, errs)
		}
	}
	// A world over a limit the flags do not show is a usage error naming
	// it, not a bug: 6,000 tickets a team an hour over 6 years.
	if _, errs, code := runCLI(t, "worlds", "gen", "--teams", "2000", "--tickets", "1", "--horizon", "2000d"); code != cli.ExitUsage || !strings.Contains(errs, "over a world limit") || strings.Contains(errs, "a bug") {
		t.Errorf("worlds gen over the arrivals' limit: exit %d, %s", code, errs)
	}
	// A name YAML would read otherwise is written quoted and read back.
	for _, name := range []string{"Q&A: team", "#x", "true", "null", "a 'b' \"c\"", "émile"} {
		out, errs, code := runCLI(t, "worlds", "gen", "--name", name)
		if code != cli.ExitOK {
			t.Fatalf("worlds gen --name %q: exit %d, %s", name, code, errs)
		}
		w, err := worlds.Load("gen.yaml", []byte(out))
		if err != nil || w.Name != name {
			t.Errorf("worlds gen --name %q reads back as %q (%v)", name, w.Name, err)
		}
	}
}

// eval and sweep refuse seeds that would wrap past the largest to 0, and
// a negative --parallel, instead of running seed 0 or one per core.
func TestEpisodesRefuseSeedsThatWrap(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--world", "startup", "--seeds", "2", "--first-seed", "18446744073709551615"},
		{"sweep", "--world", "startup", "--seeds", "3", "--first-seed", "18446744073709551614", "--loads", "1", "--agents", "greedy"},
	} {
		out, errs, code := runCLI(t, args...)
		if code != cli.ExitUsage || !strings.Contains(errs, "the last seed would pass 18446744073709551615") || out != "" {
			t.Errorf("%s: exit %d, %q; want a usage error", strings.Join(args, " "), code, errs)
		}
	}
	// More episodes than a run keeps scorecards of: refused before any
	// starts (100,000,000 seeds ran out of memory at once).
	for _, args := range [][]string{
		{"eval", "--world", "startup", "--seeds", "100000000"},
		{"sweep", "--world", "startup", "--seeds", "30000", "--loads", "1,2", "--agents", "greedy,random"},
	} {
		if out, errs, code := runCLI(t, args...); code != cli.ExitUsage || !strings.Contains(errs, "at most 100000 episodes") || out != "" {
			t.Errorf("%s: exit %d, %q; want a usage error", strings.Join(args, " "), code, errs)
		}
	}
	if _, errs, code := runCLI(t, "eval", "--world", "startup", "--seeds", "2", "--parallel", "-3"); code != cli.ExitUsage || !strings.Contains(errs, "--parallel -3") {
		t.Errorf("eval --parallel -3: exit %d, %q; want a usage error", code, errs)
	}
	out, errs, code := runCLI(t, "eval", "--world", "startup", "--seeds", "1", "--first-seed", "18446744073709551615", "--json")
	if code != cli.ExitOK || !strings.Contains(out, "18446744073709551615") {
		t.Fatalf("eval of the largest seed alone: exit %d, %s", code, errs)
	}
}

// A --memprofile that cannot be written is said before the command runs
// (it ran the whole session, printed its scorecard, then failed); one that
// can is written at the end.
func TestMemProfilePathCheckedFirst(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "missing", "m.prof")
	out, errs, code := runCLI(t, "--memprofile", bad, "run", "--ephemeral")
	if code == cli.ExitOK || out != "" || !strings.Contains(errs, bad) {
		t.Errorf("--memprofile %s: exit %d, stdout %q, stderr %q; want a refusal naming it before anything runs", bad, code, out, errs)
	}
	good := filepath.Join(t.TempDir(), "m.prof")
	if _, errs, code := runCLI(t, "--memprofile", good, "run", "--ephemeral"); code != cli.ExitOK {
		t.Fatalf("--memprofile %s: exit %d, %s", good, code, errs)
	}
	if fi, err := os.Stat(good); err != nil || fi.Size() == 0 {
		t.Fatalf("the profile: %v, %v", fi, err)
	}
}

// log --type takes several types, repeated or as a list (the last one
// given was the only one printed).
func TestLogPrintsSeveralTypes(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--data", data, "--json")
	if code != cli.ExitOK {
		t.Fatalf("run: %d %s", code, errs)
	}
	var res struct{ Session string }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--type", "turn", "--type", "reward"}, {"--type", "turn,reward"}} {
		out, errs, code := runCLI(t, append([]string{"log", res.Session, "--data", data}, args...)...)
		if code != cli.ExitOK {
			t.Fatalf("log %v: %d %s", args, code, errs)
		}
		seen := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct{ Type string }
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
			seen[ev.Type]++
		}
		if len(seen) != 2 || seen["turn"] == 0 || seen["reward"] == 0 {
			t.Errorf("log %v printed %v; want turns and rewards only", args, seen)
		}
	}
}

// score's recorded reward is every reward event the session logged, also
// when it rebuilds the state from a checkpoint (it counted only the
// rewards after the last one: 49.74 of 427.75 for support-desk seed 1).
func TestScoreRecordsEveryReward(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--world", "support-desk", "--seed", "1", "--data", data, "--checkpoint-every", "500", "--json")
	if code != cli.ExitOK {
		t.Fatalf("run: %d %s", code, errs)
	}
	var res struct{ Session string }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runCLI(t, "log", res.Session, "--data", data, "--type", "reward")
	var logged float64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Payload struct{ Team float64 } }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		logged += ev.Payload.Team
	}
	out, errs, code = runCLI(t, "score", res.Session, "--data", data, "--json")
	var sc struct {
		Score struct {
			TeamScore float64 `json:"team_score"`
		}
		Recorded struct{ Team float64 }
	}
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &sc) != nil {
		t.Fatalf("score: %d %s", code, errs)
	}
	if math.Abs(sc.Recorded.Team-logged) > 1e-6 || math.Abs(logged-sc.Score.TeamScore) > 1e-6 || logged == 0 {
		t.Fatalf("score records %g; the log's rewards add up to %g, the team score is %g", sc.Recorded.Team, logged, sc.Score.TeamScore)
	}
}

// A usage error of a subcommand names the command, as its flag errors do:
// a script running several learns which one it called wrong.
func TestUsageErrorsNameTheirCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "corpsim: report: -o FILE is required"},
		{[]string{"log", "--type", "nosuch", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, `corpsim: log: --type "nosuch" is not an event type`},
		{[]string{"worlds", "gen", "--members", "1"}, "corpsim: worlds gen: --members 1:"},
		{[]string{"sessions", "--status", "paused"}, "corpsim: sessions --status paused: only the server running a session knows it paused"},
	} {
		_, errs, code := runCLI(t, c.args...)
		if code != 2 || !strings.HasPrefix(errs, c.want) {
			t.Errorf("corpsim %s: exit %d, %q; want exit 2 and a message beginning %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}

// The llm agent's numbers are checked before a session starts: a NaN
// temperature failed every request (the session ended quiescent, exit 0).
func TestLLMFlagsRefuseNonsense(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--llm-temperature", "NaN", "--llm-temperature NaN: a number, at least 0"},
		{"--llm-temperature", "+Inf", "--llm-temperature +Inf: a number, at least 0"},
		{"--llm-temperature", "-3", "--llm-temperature -3: a number, at least 0"},
		{"--llm-history", "-5", "--llm-history -5: at least 0"},
	} {
		out, errs, code := runCLI(t, "run", "--ephemeral", "--agents", "greedy,alice=llm", "--llm-model", "m", tc.flag, tc.value)
		if code != cli.ExitUsage || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%s %s: exit %d, %q; want a usage error saying %q", tc.flag, tc.value, code, errs, tc.want)
		}
	}
}
