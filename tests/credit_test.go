package tests

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/sim/app"
)

// The tests in this file run corpsim credit through cli.Main on a real
// Pebble data folder: every counterfactual is a fork played to its end.

func creditResult(t *testing.T, args ...string) *app.CreditResult {
	t.Helper()
	out := mustCLI(t, append(args, "--json")...)
	var res app.CreditResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("corpsim %s --json: %v in\n%s", strings.Join(args, " "), err, out)
	}
	return &res
}

// TestCreditMatchesWhoDidTheWork credits the seats of credit-split, where
// Ada does the product (50 points), Ben the guide (5) and Cy nothing, the
// bonus (10) needing both: with the idle baseline the marginal
// contributions are 60, 15 and 0 — their signs and order are who did the
// work. The Shapley estimate is reproducible from its seed and, like true
// Shapley values, adds up to the session's score minus every seat idle;
// the forks are kept as sessions of the data folder that diff can compare.
func TestCreditMatchesWhoDidTheWork(t *testing.T) {
	data := t.TempDir()
	run := cliResult(t, "run", "--world", filepath.Join("testdata", "worlds", "credit-split.yaml"), "--data", data)
	if run.Score.TeamScore != 65 {
		t.Fatalf("the session scored %v; the world is built for 65 (all done on time)", run.Score.TeamScore)
	}
	res := creditResult(t, "credit", run.Session, "--data", data, "--shapley", "6", "--seed", "3")
	if res.Score != 65 || res.Baseline != "idle" {
		t.Fatalf("credit of score %v with baseline %q; want 65, idle", res.Score, res.Baseline)
	}
	got := map[string]app.SeatCredit{}
	for _, s := range res.Seats {
		got[s.Member] = s
	}
	want := map[string]float64{"ada": 60, "ben": 15, "cy": 0}
	for m, w := range want {
		s, ok := got[m]
		if !ok {
			t.Fatalf("no credit for %s in %+v", m, res.Seats)
		}
		if math.Abs(s.Marginal-w) > 1e-6 || math.Abs(res.Score-s.ForkScore-s.Marginal) > 1e-6 {
			t.Errorf("%s: marginal %v (fork %s scored %v); want %v", m, s.Marginal, s.Fork, s.ForkScore, w)
		}
		if s.Fork == "" || s.FirstAction < 2 || s.Shapley == nil {
			t.Errorf("%s: fork %q at first action #%d, shapley %v", m, s.Fork, s.FirstAction, s.Shapley)
		}
	}
	if !(got["ada"].Marginal > got["ben"].Marginal && got["ben"].Marginal > 0 && got["cy"].Marginal == 0) {
		t.Fatalf("marginals ada %v, ben %v, cy %v: want ada > ben > 0 = cy", got["ada"].Marginal, got["ben"].Marginal, got["cy"].Marginal)
	}
	// Exact Shapley values of this game: ada 55, ben 10, cy 0 (the bonus
	// is shared by the two it needs); every permutation gives cy 0.
	sum := 0.0
	for _, s := range res.Seats {
		sum += *s.Shapley
	}
	if res.Empty == nil || math.Abs(sum-(res.Score-*res.Empty)) > 1e-5 {
		t.Errorf("Shapley estimates add up to %v; want score %v - every seat idle %v", sum, res.Score, res.Empty)
	}
	if *got["cy"].Shapley != 0 || !(*got["ada"].Shapley > *got["ben"].Shapley) {
		t.Errorf("Shapley ada %v, ben %v, cy %v: want ada > ben and cy 0", *got["ada"].Shapley, *got["ben"].Shapley, *got["cy"].Shapley)
	}
	again := creditResult(t, "credit", run.Session, "--data", data, "--shapley", "6", "--seed", "3")
	for i, s := range again.Seats {
		if *s.Shapley != *res.Seats[i].Shapley || s.Marginal != res.Seats[i].Marginal {
			t.Errorf("second credit of %s: marginal %v, Shapley %v; first %v, %v", s.Member, s.Marginal, *s.Shapley, res.Seats[i].Marginal, *res.Seats[i].Shapley)
		}
	}

	// The forks are sessions of the data folder, children of the session.
	list := mustCLI(t, "sessions", "--data", data)
	for _, f := range res.Forks {
		if !strings.Contains(list, f.Session) {
			t.Fatalf("fork %s is not among the sessions:\n%s", f.Session, list)
		}
	}
	if n := len(res.Forks); n < 3 || n > 7 { // 3 marginal forks, at most 2^3 - 1 coalitions
		t.Fatalf("%d forks; want 3 to 7", n)
	}
	diff := mustCLI(t, "diff", run.Session, got["ada"].Fork, "--data", data)
	if !strings.Contains(diff, "ada") {
		t.Errorf("diff of the session and ada's fork does not mention ada:\n%s", diff)
	}

	// With the seats' own agent as the baseline the forks replay the session.
	same := creditResult(t, "credit", run.Session, "--data", data, "--baseline", "greedy")
	for _, s := range same.Seats {
		if s.Marginal != 0 {
			t.Errorf("%s: marginal %v against greedy played again; want 0", s.Member, s.Marginal)
		}
	}

	text := mustCLI(t, "credit", run.Session, "--data", data)
	for _, w := range []string{"MARGINAL", "ada", "60.00", "corpsim diff " + run.Session} {
		if !strings.Contains(text, w) {
			t.Errorf("credit output lacks %q:\n%s", w, text)
		}
	}
}

// TestCreditStartup credits a startup session: Alice, the only lead, is
// the one seat nobody can stand in for, so her marginal contribution is
// the largest; the engineers can stand in for each other.
func TestCreditStartup(t *testing.T) {
	data := t.TempDir()
	run := cliResult(t, "run", "--world", "startup", "--data", data)
	res := creditResult(t, "credit", run.Session, "--data", data)
	var members []string
	best := res.Seats[0]
	for _, s := range res.Seats {
		members = append(members, s.Member)
		if s.Marginal > best.Marginal {
			best = s
		}
		if s.Marginal < 0 {
			t.Errorf("%s: marginal %v; idle cannot do better than greedy here", s.Member, s.Marginal)
		}
	}
	t.Logf("startup marginals: %+v", res.Seats)
	if !slices.Equal(members, []string{"alice", "bob", "carol", "dave", "erin"}) {
		t.Fatalf("credited %v; want startup's five seats", members)
	}
	if best.Member != "alice" || best.Marginal != res.Score {
		t.Fatalf("largest marginal %s %v; want alice with the whole score %v", best.Member, best.Marginal, res.Score)
	}

	// The forks played one at a time or all five at once: the same
	// credit, the forks listed in the seats' order either way.
	for _, parallel := range []string{"1", "5"} {
		again := creditResult(t, "credit", run.Session, "--data", data, "--parallel", parallel)
		if len(again.Seats) != len(res.Seats) || len(again.Forks) != len(res.Seats) {
			t.Fatalf("--parallel %s: %d seats in %d forks; want %d and %d", parallel, len(again.Seats), len(again.Forks), len(res.Seats), len(res.Seats))
		}
		for i, s := range again.Seats {
			w := res.Seats[i]
			if s.Member != w.Member || s.FirstAction != w.FirstAction || s.ForkScore != w.ForkScore || s.Marginal != w.Marginal {
				t.Errorf("--parallel %s: %+v; the default credit gave %+v", parallel, s, w)
			}
			if f := again.Forks[i]; f.Session != s.Fork || !slices.Equal(f.Baseline, []string{s.Member}) || f.Score != s.ForkScore {
				t.Errorf("--parallel %s: fork %d is %+v; want %s's (%s, score %v)", parallel, i, f, s.Member, s.Fork, s.ForkScore)
			}
		}
	}

	// --members credits only the seats named, one fork each, with the
	// marginals of the whole credit.
	some := creditResult(t, "credit", run.Session, "--data", data, "--members", "dave,alice")
	if len(some.Seats) != 2 || len(some.Forks) != 2 || some.Seats[0].Member != "alice" || some.Seats[1].Member != "dave" {
		t.Fatalf("--members dave,alice credited %+v in %d forks; want alice and dave, one fork each", some.Seats, len(some.Forks))
	}
	for _, s := range some.Seats {
		i := slices.IndexFunc(res.Seats, func(w app.SeatCredit) bool { return w.Member == s.Member })
		if w := res.Seats[i]; s.Marginal != w.Marginal || s.FirstAction != w.FirstAction {
			t.Errorf("%s: %+v with --members, %+v in the whole credit", s.Member, s, w)
		}
	}
}

// TestCreditOfAFork: a fork's seats played only from its fork point (its
// parent's agents before): its counterfactuals start there, not at the
// seats' first actions inside the parent's part, so that the others are
// replayed as in the session. A fork of a greedy session played idle from
// its middle, credited against the idle baseline, is its own counterfactual:
// every marginal is 0 (from the seats' first actions every seat was idle
// from the start, and each marginal was the greedy part's score).
func TestCreditOfAFork(t *testing.T) {
	data := t.TempDir()
	run := cliResult(t, "run", "--world", "startup", "--data", data)
	var fork *app.RunResult
	var forkAt uint64
	for at := run.Events / 2; at > 1 && fork == nil; at-- {
		if _, _, code := runCLI(t, "fork", run.Session, "--at", seqArg(at), "--agents", "idle", "--create-only", "--data", data); code == cli.ExitOK {
			fork, forkAt = cliResult(t, "fork", run.Session, "--at", seqArg(at), "--agents", "idle", "--data", data), at
		}
	}
	if fork == nil || fork.Score.TeamScore == 0 {
		t.Fatalf("no fork of %s played idle from its middle with a score: %+v", run.Session, fork)
	}
	res := creditResult(t, "credit", fork.Session, "--data", data)
	for _, s := range res.Seats {
		if s.Marginal != 0 {
			t.Errorf("%s: marginal %v (fork %s scored %v of %v); want 0: the fork is idle from its fork point", s.Member, s.Marginal, s.Fork, s.ForkScore, res.Score)
		}
		// Its first action is the fork's own, after the fork point (the
		// column showed one of the parent's agents').
		if s.FirstAction != 0 && s.FirstAction <= forkAt {
			t.Errorf("%s: first action #%d, at or before the fork point %d", s.Member, s.FirstAction, forkAt)
		}
	}
}

// TestCreditUsage: a baseline that is no built-in agent, or a negative
// --shapley, is a usage error (exit 2).
func TestCreditUsage(t *testing.T) {
	data := t.TempDir()
	run := cliResult(t, "run", "--world", filepath.Join("testdata", "worlds", "credit-split.yaml"), "--data", data)
	for _, args := range [][]string{
		{"credit", run.Session, "--data", data, "--baseline", "nobody"},
		{"credit", run.Session, "--data", data, "--shapley", "-1"},
		{"credit", run.Session, "--data", data, "--members", "nobody"},
		{"credit", run.Session, "--data", data, "--members", "ada", "--shapley", "2"},
	} {
		if _, errs, code := runCLI(t, args...); code != cli.ExitUsage {
			t.Errorf("corpsim %s: exit %d (%s); want 2", strings.Join(args, " "), code, errs)
		} else {
			t.Logf("corpsim %s: %s", strings.Join(args[2:], " "), strings.TrimSpace(errs))
		}
	}
}
