package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// The tests in this file play real sessions (driver, embedded NATS, Pebble),
// export them with `corpsim export` and read the JSON Lines back.

// exportedMessage is a chat message as corpsim export writes it.
type exportedMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (m exportedMessage) text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// exportedEpisode is one line of --format sft.
type exportedEpisode struct {
	Session    string            `json:"session"`
	World      string            `json:"world"`
	Seed       uint64            `json:"seed"`
	Member     string            `json:"member"`
	Agent      string            `json:"agent"`
	Status     string            `json:"status"`
	Messages   []exportedMessage `json:"messages"`
	Tools      []agents.Tool     `json:"tools"`
	Reward     float64           `json:"reward"`
	TeamReward float64           `json:"team_reward"`
	Turns      int               `json:"turns"`
	Turn       uint64            `json:"turn"`
}

// exportedPair is one line of --format dpo.
type exportedPair struct {
	World           string            `json:"world"`
	Seed            uint64            `json:"seed"`
	Member          string            `json:"member"`
	Prompt          []exportedMessage `json:"prompt"`
	Chosen          []exportedMessage `json:"chosen"`
	Rejected        []exportedMessage `json:"rejected"`
	ChosenReward    float64           `json:"chosen_reward"`
	RejectedReward  float64           `json:"rejected_reward"`
	ChosenSession   string            `json:"chosen_session"`
	RejectedSession string            `json:"rejected_session"`
}

// readJSONL reads a JSON Lines file the way a training pipeline would.
func readJSONL[T any](tb testing.TB, path string) []T {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// scorecard is what `corpsim score SESSION --json` reports.
func scorecard(tb testing.TB, data, session string) policies.Scorecard {
	tb.Helper()
	var res app.RunResult
	out := mustCLI(tb, "score", session, "--data", data, "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		tb.Fatalf("score --json: %v in\n%s", err, out)
	}
	return res.Score
}

func delivered(s policies.Scorecard, member string) (float64, bool) {
	for _, m := range s.Members {
		if m.Member == member {
			return m.Delivered, true
		}
	}
	return 0, false
}

// recorder plays greedy on every seat and keeps what each member was sent.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]org.Observation
}

func (r *recorder) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	r.mu.Lock()
	r.seen[o.Member] = append(r.seen[o.Member], o)
	r.mu.Unlock()
	return (&agents.Greedy{}).Decide(ctx, o)
}

// turnOf is a member's answered turn in the log: its actions and, by index,
// the refusals they met.
type turnOf struct {
	turn    uint64
	actions []org.Action
	refused map[int]payload.ActionRejected
}

// answeredTurns reads a session's answered turns per agent seat from its log.
func answeredTurns(tb testing.TB, data, session string) map[string][]turnOf {
	tb.Helper()
	out := map[string][]turnOf{}
	where := map[uint64][2]int{} // turn seq -> member index, turn index
	var members []string
	for _, ev := range storedEvents(tb, data, session) {
		switch ev.Type {
		case payload.EvTurn:
			if ev.Actor == "frank" { // the startup world's NPC
				continue
			}
			p := payloadOf[payload.Turn](tb, ev)
			out[ev.Actor] = append(out[ev.Actor], turnOf{turn: p.Turn, actions: p.Actions, refused: map[int]payload.ActionRejected{}})
			members = append(members, ev.Actor)
			where[ev.Seq] = [2]int{len(members) - 1, len(out[ev.Actor]) - 1}
		case payload.EvActionRejected:
			if w, ok := where[ev.Cause]; ok {
				p := payloadOf[payload.ActionRejected](tb, ev)
				out[members[w[0]]][w[1]].refused[p.Index] = p
			}
		}
	}
	return out
}

// TestExportSFT: a session whose seats recorded what they were sent, and a
// random team's session, exported as SFT transcripts: one line per seat, the
// LLM agent's system prompt, each observation exactly as sent, the recorded
// actions as tool calls that parse back into them, each refusal as its
// call's result, and the rewards corpsim score reports.
func TestExportSFT(t *testing.T) {
	data := t.TempDir()
	rec := &recorder{seen: map[string][]org.Observation{}}
	seats := map[string]agents.Agent{}
	for _, m := range []string{"alice", "bob", "carol", "dave", "erin"} {
		seats[m] = rec
	}
	a := mustRun(t, app.RunOptions{World: "startup", Seed: 4, Agents: "greedy", Data: data, Seats: seats})
	b := cliResult(t, "run", "--world", "startup", "--seed", "4", "--agents", "random", "--data", data)
	out := filepath.Join(t.TempDir(), "sft.jsonl")
	_, errs, code := runCLI(t, "export", a.Session, b.Session, "--format", "sft", "-o", out, "--data", data)
	if code != cli.ExitOK || !strings.Contains(errs, "10 episodes of 2 sessions") {
		t.Fatalf("export exited %d: %s", code, errs)
	}
	if again := mustCLI(t, "export", a.Session, b.Session, "--data", data); again != string(mustRead(t, out)) {
		t.Fatal("a second export to stdout differs from the first to a file")
	}
	// The transcripts wait in a spill file beside the output (none left
	// behind), or in $TMPDIR for stdout; where none can be made, in
	// memory, said on stderr: the same lines.
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".corpsim-export-*")); len(left) > 0 {
		t.Errorf("spill files left beside the output: %v", left)
	}
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	again, errs, code := runCLI(t, "export", a.Session, b.Session, "--data", data)
	if code != cli.ExitOK || again != string(mustRead(t, out)) || strings.Count(errs, "the transcripts are held in memory") != 1 {
		t.Fatalf("export to stdout with no temporary folder exited %d (same lines: %v): %s", code, again == string(mustRead(t, out)), errs)
	}
	eps := readJSONL[exportedEpisode](t, out)
	if len(eps) != 10 {
		t.Fatalf("got %d lines, want 10 (5 seats × 2 sessions)", len(eps))
	}
	cards := map[string]policies.Scorecard{a.Session: scorecard(t, data, a.Session), b.Session: scorecard(t, data, b.Session)}
	turns := map[string]map[string][]turnOf{a.Session: answeredTurns(t, data, a.Session), b.Session: answeredTurns(t, data, b.Session)}
	calls, refusals := 0, 0
	startup, err := worlds.Shipped("startup")
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range eps {
		want := []string{a.Session, b.Session}[i/5]
		if ep.Session != want || ep.World != "startup" || ep.Seed != 4 || len(ep.Tools) != len(agents.ToolDefsFor(startup)) {
			t.Fatalf("line %d: %s %s seed %d with %d tools, want session %s, startup, seed 4, startup's %d tools", i+1, ep.Session, ep.World, ep.Seed, len(ep.Tools), want, len(agents.ToolDefsFor(startup)))
		}
		agent := map[string]string{a.Session: "custom", b.Session: "random"}[ep.Session]
		if ep.Agent != agent {
			t.Errorf("line %d: agent %q, want %q", i+1, ep.Agent, agent)
		}
		card := cards[ep.Session]
		d, ok := delivered(card, ep.Member)
		if !ok || ep.Reward != d || ep.TeamReward != card.TeamScore {
			t.Errorf("%s/%s: rewards %g and %g, corpsim score says %g and %g", ep.Session, ep.Member, ep.Reward, ep.TeamReward, d, card.TeamScore)
		}
		msgs := ep.Messages
		if len(msgs) == 0 || msgs[0].Role != "system" || !strings.HasPrefix(msgs[0].text(), "You are "+ep.Member+", a") {
			t.Fatalf("%s/%s: the transcript does not open with the LLM agent's system prompt", ep.Session, ep.Member)
		}
		k := 1
		recorded := turns[ep.Session][ep.Member]
		if ep.Turns != len(recorded) {
			t.Errorf("%s/%s: %d turns, the log has %d", ep.Session, ep.Member, ep.Turns, len(recorded))
		}
		for n, rt := range recorded {
			if k+1 >= len(msgs) || msgs[k].Role != "user" || msgs[k+1].Role != "assistant" {
				t.Fatalf("%s/%s turn %d: messages %d and %d are not an observation and an answer", ep.Session, ep.Member, rt.turn, k, k+1)
			}
			if ep.Session == a.Session {
				o := rec.seen[ep.Member][n]
				o.Session = ""
				user, err := llm.ObservationMessage(o)
				if err != nil {
					t.Fatal(err)
				}
				if msgs[k].text() != user {
					t.Fatalf("%s turn %d: the observation differs from what the seat was sent:\ngot  %s\nwant %s", ep.Member, rt.turn, msgs[k].text(), user)
				}
			} else if !strings.HasPrefix(msgs[k].text(), "Turn ") || !strings.Contains(msgs[k].text(), `"member":"`+ep.Member+`"`) {
				t.Fatalf("%s turn %d: user message %.80q is not the member's observation", ep.Member, rt.turn, msgs[k].text())
			}
			asst := msgs[k+1]
			k += 2
			if len(asst.ToolCalls) != len(rt.actions) {
				t.Fatalf("%s/%s turn %d: %d tool calls, the log has %d actions", ep.Session, ep.Member, rt.turn, len(asst.ToolCalls), len(rt.actions))
			}
			for j, act := range rt.actions {
				tc := asst.ToolCalls[j]
				got, err := agents.ActionFromToolCall(tc.Function.Name, []byte(tc.Function.Arguments))
				if err != nil || got != act || tc.Type != "function" {
					t.Errorf("%s/%s turn %d call %d: %s %s parses into %+v, %v; the log has %+v", ep.Session, ep.Member, rt.turn, j,
						tc.Function.Name, tc.Function.Arguments, got, err, act)
				}
				res := msgs[k]
				k++
				if res.Role != "tool" || res.ToolCallID != tc.ID {
					t.Fatalf("%s/%s turn %d call %d: message %d is %s for %q, want the call's result", ep.Session, ep.Member, rt.turn, j, k-1, res.Role, res.ToolCallID)
				}
				calls++
				if rej, ok := rt.refused[j]; ok {
					refusals++
					if !strings.HasPrefix(res.text(), "refused ("+rej.Kind) || !strings.HasSuffix(res.text(), rej.Reason) {
						t.Errorf("%s/%s turn %d: result %q, want the refusal %s: %s", ep.Session, ep.Member, rt.turn, res.text(), rej.Kind, rej.Reason)
					}
				} else if res.text() != "accepted" {
					t.Errorf("%s/%s turn %d: result %q, want accepted", ep.Session, ep.Member, rt.turn, res.text())
				}
			}
		}
		if k != len(msgs) {
			t.Errorf("%s/%s: %d messages, %d accounted for by the log's turns", ep.Session, ep.Member, len(msgs), k)
		}
	}
	if calls < 100 || refusals == 0 {
		t.Errorf("%d tool calls, %d refused: want a real workload with refusals", calls, refusals)
	}

	// --min-reward keeps the episodes whose reward reaches it.
	out2 := filepath.Join(t.TempDir(), "best.jsonl")
	mustCLI(t, "export", a.Session, b.Session, "--min-reward", "30", "-o", out2, "--data", data)
	var want []string
	for _, ep := range eps {
		if ep.Reward >= 30 {
			want = append(want, ep.Session+"/"+ep.Member)
		}
	}
	var got []string
	for _, ep := range readJSONL[exportedEpisode](t, out2) {
		got = append(got, ep.Session+"/"+ep.Member)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || len(got) == 0 || len(got) == len(eps) {
		t.Errorf("--min-reward 30 kept %v, want %v", got, want)
	}
}

// TestExportDPO: greedy and random teams on the same world and seed make
// preference pairs, the higher reward chosen, with corpsim score's
// rewards; a session of another seed pairs with nothing, and says so.
func TestExportDPO(t *testing.T) {
	data := t.TempDir()
	g := cliResult(t, "run", "--seed", "4", "--agents", "greedy", "--data", data)
	r := cliResult(t, "run", "--seed", "4", "--agents", "random", "--data", data)
	x := cliResult(t, "run", "--seed", "3", "--agents", "random", "--data", data)
	out := filepath.Join(t.TempDir(), "dpo.jsonl")
	_, errs, code := runCLI(t, "export", g.Session, r.Session, x.Session, "--format", "dpo", "-o", out, "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("export exited %d: %s", code, errs)
	}
	if !strings.Contains(errs, "session "+x.Session+" (world startup, seed 3) shares its world and seed, and its draw key, load, seed at event 1, log format and the event each seed began at, with no other session") {
		t.Errorf("stderr does not say that seed 3 pairs with nothing:\n%s", errs)
	}
	cards := map[string]policies.Scorecard{g.Session: g.Score, r.Session: r.Score}
	for id := range cards {
		cards[id] = scorecard(t, data, id)
	}
	pairs := readJSONL[exportedPair](t, out)
	wantPairs := 0
	for _, m := range []string{"alice", "bob", "carol", "dave", "erin"} {
		dg, _ := delivered(cards[g.Session], m)
		dr, _ := delivered(cards[r.Session], m)
		if dg != dr {
			wantPairs++
		}
	}
	if len(pairs) != wantPairs || wantPairs == 0 {
		t.Fatalf("got %d pairs, want %d (one per member whose rewards differ)", len(pairs), wantPairs)
	}
	for _, p := range pairs {
		if p.World != "startup" || p.Seed != 4 {
			t.Errorf("pair of %s seed %d, want startup seed 4", p.World, p.Seed)
		}
		if !(p.ChosenReward > p.RejectedReward) {
			t.Errorf("%s: chosen %g is not above rejected %g", p.Member, p.ChosenReward, p.RejectedReward)
		}
		dc, _ := delivered(cards[p.ChosenSession], p.Member)
		dr, _ := delivered(cards[p.RejectedSession], p.Member)
		if p.ChosenReward != dc || p.RejectedReward != dr || p.ChosenSession == p.RejectedSession {
			t.Errorf("%s: %s %g over %s %g; corpsim score says %g and %g", p.Member, p.ChosenSession, p.ChosenReward, p.RejectedSession, p.RejectedReward, dc, dr)
		}
		if len(p.Prompt) < 2 || p.Prompt[0].Role != "system" || p.Prompt[1].Role != "user" ||
			len(p.Chosen) == 0 || p.Chosen[0].Role != "assistant" || len(p.Rejected) == 0 || p.Rejected[0].Role != "assistant" {
			t.Errorf("%s: prompt of %d messages, continuations of %d and %d: want system and observation, then assistant turns",
				p.Member, len(p.Prompt), len(p.Chosen), len(p.Rejected))
		}
	}

	// Different seeds: no pairs, and stderr says why.
	out, errs, code = runCLI(t, "export", g.Session, x.Session, "--format", "dpo", "--data", data)
	if code != cli.ExitOK || out != "" || strings.Count(errs, "with no other session given: no pairs") != 2 {
		t.Fatalf("different seeds: exit %d, %d bytes of pairs, stderr:\n%s", code, len(out), errs)
	}
	// Many sessions alone: five are named, the rest counted.
	many := []string{"export", g.Session, x.Session}
	for seed := 20; seed < 25; seed++ {
		many = append(many, cliResult(t, "run", "--world", "startup", "--seed", strconv.Itoa(seed), "--data", data).Session)
	}
	_, errs, code = runCLI(t, append(many, "--format", "dpo", "--data", data)...)
	if code != cli.ExitOK || strings.Count(errs, "with no other session given: no pairs") != 5 || !strings.Contains(errs, "and 2 more sessions alone in their situation") {
		t.Fatalf("7 sessions alone: exit %d, stderr:\n%s", code, errs)
	}
	// A margin above every difference leaves no pairs.
	out, _, code = runCLI(t, "export", g.Session, r.Session, "--format", "dpo", "--margin", "1000", "--data", data)
	if code != cli.ExitOK || out != "" {
		t.Fatalf("--margin 1000: exit %d, output %.200q", code, out)
	}

	// A session that did not end (a fork made and not run): its rewards
	// are what was earned where it stopped. dpo leaves it out, saying so;
	// sft exports it, each line saying its status, and says so.
	var stopped string
	for at := g.Events / 2; at > 1 && stopped == ""; at-- {
		if o, _, code := runCLI(t, "fork", g.Session, "--at", seqArg(at), "--agents", "random", "--create-only", "--json", "--data", data); code == cli.ExitOK {
			var m struct{ ID string }
			if err := json.Unmarshal([]byte(o), &m); err != nil {
				t.Fatal(err)
			}
			stopped = m.ID
		}
	}
	out, errs, code = runCLI(t, "export", g.Session, r.Session, stopped, "--format", "dpo", "--data", data)
	if code != cli.ExitOK || !strings.Contains(errs, "session "+stopped+" is interrupted, not finished: its rewards are partial, so it makes no pairs") ||
		len(strings.Split(strings.TrimSpace(out), "\n")) != wantPairs {
		t.Fatalf("dpo with an interrupted session: exit %d, %d lines (want %d), stderr:\n%s", code, len(strings.Split(strings.TrimSpace(out), "\n")), wantPairs, errs)
	}
	// With the interrupted one left out, g is alone: no rewards were compared.
	out, errs, code = runCLI(t, "export", g.Session, stopped, "--format", "dpo", "--data", data)
	if code != cli.ExitOK || out != "" || !strings.Contains(errs, "session "+g.Session+" (world") || strings.Contains(errs, "differ by more than") {
		t.Fatalf("dpo of a session and an interrupted one: exit %d, %d bytes of pairs, stderr:\n%s", code, len(out), errs)
	}
	sft := filepath.Join(t.TempDir(), "sft.jsonl")
	if _, errs, code = runCLI(t, "export", stopped, "--format", "sft", "-o", sft, "--data", data); code != cli.ExitOK || !strings.Contains(errs, "session "+stopped+" is interrupted, not finished") {
		t.Fatalf("sft of an interrupted session: exit %d, stderr:\n%s", code, errs)
	}
	for _, ep := range readJSONL[exportedEpisode](t, sft) {
		if ep.Status != "interrupted" {
			t.Errorf("%s's episode says status %q; want interrupted", ep.Member, ep.Status)
		}
	}
}

// TestExportJSONL: the raw stream has one line per event of each session,
// each naming its session, as corpsim log prints them.
func TestExportJSONL(t *testing.T) {
	data := t.TempDir()
	a := cliResult(t, "run", "--seed", "2", "--data", data)
	b := cliResult(t, "run", "--seed", "4", "--agents", "random", "--data", data)
	out := mustCLI(t, "export", a.Session, b.Session, "--format", "jsonl", "-o", "-", "--data", data)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if uint64(len(lines)) != a.Events+b.Events {
		t.Fatalf("got %d lines, want %d + %d events", len(lines), a.Events, b.Events)
	}
	logA := mustCLI(t, "log", a.Session, "--data", data)
	if !strings.HasPrefix(out, logA) {
		t.Error("the first session's lines are not what corpsim log prints")
	}
	for i, line := range lines {
		var ev events.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		want := a.Session
		if uint64(i) >= a.Events {
			want = b.Session
		}
		if ev.Session != want {
			t.Fatalf("line %d names session %s, want %s", i+1, ev.Session, want)
		}
	}
}

func TestExportErrors(t *testing.T) {
	data := t.TempDir()
	a := cliResult(t, "run", "--seed", "1", "--data", data)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no session", []string{"export"}, cli.ExitUsage, "export: takes at least 1 argument, got 0"},
		{"unknown format", []string{"export", a.Session, "--format", "csv"}, cli.ExitUsage, `--format "csv"`},
		{"unknown reward", []string{"export", a.Session, "--reward", "sum"}, cli.ExitUsage, `--reward "sum"`},
		{"min-reward for dpo", []string{"export", a.Session, "--format", "dpo", "--min-reward", "1"}, cli.ExitUsage, "--min-reward is for --format sft"},
		{"margin for sft", []string{"export", a.Session, "--margin", "1"}, cli.ExitUsage, "--margin is for --format dpo"},
		{"margin 0 for sft", []string{"export", a.Session, "--margin", "0"}, cli.ExitUsage, "--margin is for --format dpo"},
		{"reward for jsonl", []string{"export", a.Session, "--format", "jsonl", "--reward", "team"}, cli.ExitUsage, "--reward is for --format sft or dpo"},
		{"min-reward NaN", []string{"export", a.Session, "--min-reward", "NaN"}, cli.ExitUsage, "--min-reward must be a number, got NaN"},
		{"margin NaN", []string{"export", a.Session, "--format", "dpo", "--margin", "nan"}, cli.ExitUsage, "--margin must be a number, got NaN"},
		{"unknown session", []string{"export", a.Session, "NOSUCH"}, cli.ExitError, "no session NOSUCH in"},
		{"no data folder", []string{"export", a.Session, "--data", filepath.Join(data, "nowhere")}, cli.ExitError, "no such folder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--data") {
				args = append(args, "--data", data)
			}
			_, errs, code := runCLI(t, args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("got exit %d and %q, want exit %d and a message containing %q", code, errs, tc.code, tc.want)
			}
		})
	}
	// What is not a regular file is written through, not replaced: here a
	// symbolic link (a device such as /dev/null or a pipe goes the same way).
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.jsonl"), filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "export", a.Session, "-o", link, "--data", data)
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("-o through a symbolic link replaced the link: %v, %v", st.Mode(), err)
	}
	if n := len(readJSONL[exportedEpisode](t, target)); n != 5 {
		t.Fatalf("the link's target holds %d episodes, want 5", n)
	}
	// A failed export leaves no file behind.
	out := filepath.Join(t.TempDir(), "x.jsonl")
	if _, _, code := runCLI(t, "export", a.Session, "NOSUCH", "-o", out, "--data", data); code == cli.ExitOK {
		t.Fatal("exported an unknown session")
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
		t.Errorf("a failed export left %d files", len(ents))
	}
}

// llmGreedy is an OpenAI-compatible endpoint that plays greedy: it reads
// the observation out of the last user message and answers with greedy's
// actions as tool calls, numbered as corpsim export numbers them. It keeps
// every request's messages.
type llmGreedy struct {
	mu   sync.Mutex
	reqs [][]exportedMessage
	t    testing.TB
}

func (f *llmGreedy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []exportedMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req.Messages)
	f.mu.Unlock()
	lines := strings.Split(req.Messages[len(req.Messages)-1].text(), "\n")
	var o org.Observation
	if len(lines) < 2 || json.Unmarshal([]byte(lines[1]), &o) != nil {
		f.t.Errorf("the last message is not an observation: %.200q", lines[0])
		http.Error(w, "no observation", http.StatusBadRequest)
		return
	}
	acts, _ := (&agents.Greedy{}).Decide(r.Context(), o)
	if o.Turn == 2 || o.Turn == 5 { // a slip the engine refuses: only designers design
		acts = append([]org.Action{{Type: org.ActClaim, Task: "design-ux"}}, acts...)
	}
	var calls []any
	for i, a := range acts {
		name, args, err := agents.ToolCallFromAction(a)
		if err != nil {
			f.t.Errorf("greedy's %+v: %v", a, err)
		}
		calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", o.Turn, i+1), "type": "function",
			"function": map[string]any{"name": name, "arguments": string(args)}})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
		"role": "assistant", "content": nil, "tool_calls": calls}}}})
}

// TestExportMatchesAnLLMSeat: bob is played by the LLM agent, keeping two
// earlier turns, against an endpoint that plays greedy (and twice claims a
// task its role may not take). Exported with
// --history 2, each of bob's lines is the request the agent sent — system
// prompt, two turns of history with their results, the observation —
// followed by the endpoint's answer; only the session ID, which the export
// leaves out of observations, differs.
func TestExportMatchesAnLLMSeat(t *testing.T) {
	f := &llmGreedy{t: t}
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "k")
	data := t.TempDir()
	res := cliResult(t, "run", "--seed", "4", "--agents", "greedy,bob=llm", "--llm-history", "2", "--data", data,
		"--llm-base-url", srv.URL+"/v1", "--llm-model", "fake", "--llm-key-env", "TEST_LLM_KEY")
	out := filepath.Join(t.TempDir(), "windows.jsonl")
	mustCLI(t, "export", res.Session, "--history", "2", "-o", out, "--data", data)
	var bob []exportedEpisode
	for _, ep := range readJSONL[exportedEpisode](t, out) {
		if ep.Member == "bob" {
			bob = append(bob, ep)
		}
	}
	if len(bob) != len(f.reqs) || len(bob) < 5 {
		t.Fatalf("%d lines for bob, the endpoint was asked %d times", len(bob), len(f.reqs))
	}
	d, _ := delivered(scorecard(t, data, res.Session), "bob")
	refused := 0
	for i, ep := range bob {
		req := f.reqs[i]
		want := slices.Clone(req)
		for j := range want {
			if want[j].Role == "user" {
				s := strings.Replace(want[j].text(), `"session":"`+res.Session+`"`, `"session":""`, 1)
				want[j].Content = &s
			}
			if want[j].Role == "tool" && strings.HasPrefix(want[j].text(), "refused") {
				refused++
			}
		}
		answer := ep.Messages[len(ep.Messages)-1]
		if answer.Role != "assistant" {
			t.Fatalf("line %d ends with %s, want bob's answer", i+1, answer.Role)
		}
		got, _ := json.Marshal(ep.Messages[:len(ep.Messages)-1])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Fatalf("line %d (turn %d) is not the request the LLM seat sent:\ngot  %.3000s\nwant %.3000s", i+1, ep.Turn, got, w)
		}
		if i > 2 && strings.Count(string(got), `"role":"user"`) != 3 {
			t.Errorf("line %d: %d observations, want the turn's and 2 earlier ones", i+1, strings.Count(string(got), `"role":"user"`))
		}
		if ep.Reward != d || ep.Agent != "llm" {
			t.Errorf("line %d: reward %g of %s, want %g of llm", i+1, ep.Reward, ep.Agent, d)
		}
	}
	if refused == 0 {
		t.Error("no refusal reached bob's history: the test does not see results of refused calls")
	}
}
