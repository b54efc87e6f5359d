package export_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/export"
	"github.com/corpsim/corpsim/worlds"
)

// seen is what the agents of a driven session were sent, per member, in order.
type seen map[string][]org.Observation

// decide answers one turn; it may time out, misanswer or act.
type decide func(o org.Observation) sim.Answer

// team plays the startup world's seats: greedy, with random for carol and
// a few turns spoiled on purpose — a timeout, a stale reply, a reply that
// did not parse — so that every kind of turn is exported.
func team(seed uint64) decide {
	carol := agents.NewRandom(seed, "carol")
	return func(o org.Observation) sim.Answer {
		switch {
		case o.Member == "dave" && o.Turn == 2:
			return sim.Answer{Member: o.Member, TimedOut: true}
		case o.Member == "erin" && o.Turn == 3:
			return sim.Answer{Member: o.Member, Turn: o.Turn + 7, Actions: []org.Action{{Type: org.ActWait}}}
		case o.Member == "bob" && o.Turn == 4:
			return sim.Answer{Member: o.Member, Malformed: "malformed reply: unexpected EOF"}
		}
		var acts []org.Action
		if o.Member == "carol" {
			acts, _ = carol.Decide(context.Background(), o)
		} else {
			acts, _ = (&agents.Greedy{}).Decide(context.Background(), o)
		}
		if o.Member == "alice" && o.Turn == 2 {
			// What the LLM agent records for a tool call that did not parse.
			acts = append([]org.Action{{Type: "invalid", Text: `unknown tool "fly"`}}, acts...)
		}
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
	}
}

func greedyOnly(o org.Observation) sim.Answer {
	acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
	return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
}

func mustWorld(tb testing.TB, name string) (*worlds.World, []byte) {
	tb.Helper()
	src, err := worlds.Source(name)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := worlds.Load(name+".yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return w, src
}

// drive runs e as the driver does, storing every batch in log under
// session, and records what each member was sent. It stops after limit
// events when limit > 0.
func drive(tb testing.TB, log events.Log, session string, e *sim.Engine, d decide, limit int) seen {
	tb.Helper()
	ctx := context.Background()
	obs := seen{}
	last, err := log.LastSeq(ctx, session)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; ; i++ {
		if i > 100_000 {
			tb.Fatal("the session does not end")
		}
		rd := e.Ready()
		if n := len(rd.Events); n > 0 {
			if err := log.Append(ctx, session, last, rd.Events); err != nil {
				tb.Fatal(err)
			}
			last = rd.Events[n-1].Seq
		}
		e.Advance()
		if rd.Done || limit > 0 && last >= uint64(limit) {
			return obs
		}
		if len(rd.Turns) == 0 {
			e.Tick()
			continue
		}
		var ans []sim.Answer
		for _, t := range rd.Turns {
			// What the agent gets went through JSON, as over the bus.
			b, _ := json.Marshal(t.Observation)
			var o org.Observation
			if err := json.Unmarshal(b, &o); err != nil {
				tb.Fatal(err)
			}
			obs[o.Member] = append(obs[o.Member], o)
			ans = append(ans, d(o))
		}
		e.Step(ans)
	}
}

// mustSession runs a new session of world with seed into log.
func mustSession(tb testing.TB, log events.Log, id, world string, seed uint64, d decide) seen {
	tb.Helper()
	w, src := mustWorld(tb, world)
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: id})
	if err != nil {
		tb.Fatal(err)
	}
	seats := map[string]string{}
	for _, m := range w.Members {
		if m.NPC == nil {
			seats[m.ID] = "test"
		}
	}
	meta := events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: seed, Agents: seats, Status: events.StatusRunning}
	if err := log.CreateSession(context.Background(), meta); err != nil {
		tb.Fatal(err)
	}
	e.Start()
	return drive(tb, log, id, e, d, 0)
}

// mustFork makes session id a fork of parent at seq at and plays it on with d.
func mustFork(tb testing.TB, log events.Log, id, parent string, at uint64, d decide) seen {
	tb.Helper()
	ctx := context.Background()
	pm, err := log.Session(ctx, parent)
	if err != nil {
		tb.Fatal(err)
	}
	meta := events.SessionMeta{ID: id, World: pm.World, WorldHash: pm.WorldHash, Seed: pm.Seed, Agents: pm.Agents,
		Parent: parent, ForkSeq: at, Status: events.StatusRunning}
	if err := log.CreateSession(ctx, meta); err != nil {
		tb.Fatal(err)
	}
	prefix := func(yield func(events.Event, error) bool) {
		for ev, err := range log.Read(ctx, id, 1) {
			if ev.Seq > at || !yield(ev, err) {
				return
			}
		}
	}
	e, err := sim.Rebuild(prefix, id, sim.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	e.Resume()
	return drive(tb, log, id, e, d, 0)
}

func mustEpisodes(tb testing.TB, log export.Log, id string, o export.Options) map[string]export.Episode {
	tb.Helper()
	eps, err := export.Episodes(context.Background(), log, id, o)
	if err != nil {
		tb.Fatalf("Episodes(%s): %v", id, err)
	}
	out := map[string]export.Episode{}
	for i, ep := range eps {
		if i > 0 && eps[i-1].Member >= ep.Member {
			tb.Errorf("episodes out of member order: %s before %s", eps[i-1].Member, ep.Member)
		}
		out[ep.Member] = ep
	}
	return out
}

func readAll(tb testing.TB, log events.Log, id string) []events.Event {
	tb.Helper()
	var out []events.Event
	for ev, err := range log.Read(context.Background(), id, 1) {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// recorded is a member's turns as the log has them: the turn events'
// actions and the refusals they caused, by action index (-1: the reply).
type recordedTurn struct {
	turn     uint64
	actions  []org.Action
	refused  map[int]payload.ActionRejected
	timedOut bool
}

func recordedTurns(evs []events.Event, member string) []recordedTurn {
	var out []recordedTurn
	at := map[uint64]int{}
	for _, ev := range evs {
		switch {
		case ev.Actor != member:
		case ev.Type == payload.EvTurn:
			var p payload.Turn
			_ = json.Unmarshal(ev.Payload, &p)
			at[ev.Seq] = len(out)
			out = append(out, recordedTurn{turn: p.Turn, actions: p.Actions, refused: map[int]payload.ActionRejected{}})
		case ev.Type == payload.EvTurnTimeout:
			var p payload.TurnTimeout
			_ = json.Unmarshal(ev.Payload, &p)
			out = append(out, recordedTurn{turn: p.Turn, timedOut: true})
		case ev.Type == payload.EvActionRejected:
			var p payload.ActionRejected
			_ = json.Unmarshal(ev.Payload, &p)
			if i, ok := at[ev.Cause]; ok {
				out[i].refused[p.Index] = p
			}
		}
	}
	return out
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// The transcript of every seat is what its agent was sent, turn by turn,
// with its actions as tool calls that parse back into them and each
// refusal as the result of its call; rewards are the rubric's.
func TestEpisodesShowWhatTheAgentsSaw(t *testing.T) {
	log := memlog.New()
	sent := mustSession(t, log, "s1", "startup", 3, team(3))
	evs := readAll(t, log, "s1")
	eps := mustEpisodes(t, log, "s1", export.Options{})
	w, _ := mustWorld(t, "startup")
	if len(eps) != 5 {
		t.Fatalf("got %d episodes, want one per agent seat (5)", len(eps))
	}
	if _, ok := eps["frank"]; ok {
		t.Error("frank is an NPC, but has an episode")
	}
	e, err := sim.Rebuild(func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}, "s1", sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	card := policies.Score(e.State())
	dense := map[string]float64{}
	for _, ev := range evs {
		if ev.Type == payload.EvReward {
			var r payload.Reward
			_ = json.Unmarshal(ev.Payload, &r)
			for m, x := range r.Members {
				dense[m] += x
			}
		}
	}
	var refusals, timeouts, stale, malformed, invalid int
	for _, mc := range card.Members {
		ep, ok := eps[mc.Member]
		if !ok {
			continue
		}
		t.Run(mc.Member, func(t *testing.T) {
			if ep.Reward != mc.Delivered || ep.TeamReward != card.TeamScore || ep.Rubric != card.Rubric {
				t.Errorf("rewards %g/%g %s, want the scorecard's %g/%g %s", ep.Reward, ep.TeamReward, ep.Rubric, mc.Delivered, card.TeamScore, card.Rubric)
			}
			if d := ep.Reward - dense[mc.Member]; d > 1e-6 || d < -1e-6 {
				t.Errorf("reward %g, but the member's dense rewards add up to %g", ep.Reward, dense[mc.Member])
			}
			if ep.Session != "s1" || ep.World != "startup" || ep.Seed != 3 || ep.Agent != "test" || !reflect.DeepEqual(ep.Tools, agents.ToolDefsFor(w)) {
				t.Errorf("episode header %s %s %d %s, %d tools", ep.Session, ep.World, ep.Seed, ep.Agent, len(ep.Tools))
			}
			turns := recordedTurns(evs, mc.Member)
			if len(turns) != len(sent[mc.Member]) {
				t.Fatalf("%d turns recorded, %d observations sent", len(turns), len(sent[mc.Member]))
			}
			msgs := ep.Messages
			k := 0 // next message
			answered := 0
			for i, rt := range turns {
				if rt.timedOut {
					timeouts++
					continue
				}
				answered++
				want := sent[mc.Member][i]
				want.Session = ""
				wantJSON, _ := json.Marshal(want)
				if k >= len(msgs) || msgs[k].Role != "user" || str(msgs[k].Content) != string(wantJSON) {
					t.Fatalf("turn %d: message %d is not the observation sent:\ngot  %s\nwant %s", rt.turn, k, str(msgs[min(k, len(msgs)-1)].Content), wantJSON)
				}
				k++
				asst := msgs[k]
				if asst.Role != "assistant" || len(asst.ToolCalls) != len(rt.actions) {
					t.Fatalf("turn %d: got %s with %d tool calls, want assistant with %d", rt.turn, asst.Role, len(asst.ToolCalls), len(rt.actions))
				}
				if len(rt.actions) == 0 && str(asst.Content) != "" {
					t.Errorf("turn %d: an answer without actions has content %q", rt.turn, str(asst.Content))
				}
				k++
				for j, a := range rt.actions {
					call := asst.ToolCalls[j]
					if !org.KnownAction(a.Type) {
						// No tool says it: its type and fields stand in.
						want, _ := json.Marshal(map[string]string{"text": a.Text})
						if call.Function.Name != a.Type || call.Function.Arguments != string(want) {
							t.Errorf("turn %d call %d: %+v became %s %s, want %s %s", rt.turn, j, a, call.Function.Name, call.Function.Arguments, a.Type, want)
						}
						invalid++
					} else if back, err := agents.ActionFromToolCall(call.Function.Name, []byte(call.Function.Arguments)); err != nil || back != a || call.Type != "function" {
						t.Errorf("turn %d call %d: %s %s parses into %+v, %v; want %+v", rt.turn, j, call.Function.Name, call.Function.Arguments, back, err, a)
					}
					res := msgs[k]
					k++
					if res.Role != "tool" || res.ToolCallID != call.ID {
						t.Fatalf("turn %d call %d: got %s for %q, want its tool result", rt.turn, j, res.Role, res.ToolCallID)
					}
					rej, refused := rt.refused[j]
					if whole, ok := rt.refused[-1]; ok {
						rej, refused = whole, true
						stale++
					}
					var got struct {
						Accepted bool   `json:"accepted"`
						Kind     string `json:"kind"`
						Reason   string `json:"reason"`
					}
					if err := json.Unmarshal([]byte(str(res.Content)), &got); err != nil {
						t.Fatalf("result %q: %v", str(res.Content), err)
					}
					if got.Accepted == refused || refused && (got.Kind != rej.Kind || got.Reason != rej.Reason) {
						t.Errorf("turn %d call %d (%+v): result %s, want refused=%v %+v", rt.turn, j, a, str(res.Content), refused, rej)
					}
					if refused {
						refusals++
					}
				}
				if _, ok := rt.refused[-1]; ok && len(rt.actions) == 0 {
					malformed++
				}
			}
			if k != len(msgs) {
				t.Errorf("%d messages, %d accounted for", len(msgs), k)
			}
			if ep.Turns != answered || ep.TimedOut != len(turns)-answered {
				t.Errorf("turns %d, timed out %d; want %d and %d", ep.Turns, ep.TimedOut, answered, len(turns)-answered)
			}
		})
	}
	// The test covers what it claims to.
	if refusals < 3 || timeouts != 1 || stale != 1 || malformed != 1 || invalid != 1 {
		t.Errorf("covered %d refused calls, %d timeouts, %d stale replies' calls, %d malformed replies, %d calls no tool says; want >=3, 1, 1, 1, 1",
			refusals, timeouts, stale, malformed, invalid)
	}
}

// Prompts shape the messages: a system prompt from the first observation
// a member was sent, the observation text and the results.
func TestPromptsShapeTheMessages(t *testing.T) {
	log := memlog.New()
	sent := mustSession(t, log, "s1", "startup", 1, greedyOnly)
	var systemFor []string
	p := export.Prompts{
		System: func(o org.Observation) string {
			systemFor = append(systemFor, fmt.Sprintf("%s/%d", o.Member, o.Turn))
			return "You are " + o.Member + ", a " + o.Role
		},
		Observation: func(o org.Observation) (string, error) { return fmt.Sprintf("turn %d at %d", o.Turn, o.Time), nil },
		Result: func(a org.Action, rej *org.RejectedView) string {
			if rej != nil {
				return "no: " + rej.Reason
			}
			return "ok " + a.Type
		},
	}
	eps := mustEpisodes(t, log, "s1", export.Options{Prompts: p})
	if strings.Join(systemFor, " ") != "alice/1 bob/1 carol/1 dave/1 erin/1" {
		t.Errorf("system prompts made for %v, want each member's first turn", systemFor)
	}
	bob := eps["bob"]
	if m := bob.Messages[0]; m.Role != "system" || str(m.Content) != "You are bob, a engineer" {
		t.Errorf("first message %s %q", m.Role, str(m.Content))
	}
	if m := bob.Messages[1]; m.Role != "user" || str(m.Content) != fmt.Sprintf("turn 1 at %d", sent["bob"][0].Time) {
		t.Errorf("second message %s %q", m.Role, str(m.Content))
	}
	results := map[string]int{}
	for _, ep := range eps {
		for _, m := range ep.Messages {
			if m.Role == "tool" {
				results[strings.Fields(str(m.Content))[0]]++
			}
		}
	}
	if len(results) != 2 || results["ok"] == 0 || results["no:"] == 0 {
		t.Errorf("results %v: want accepted and refused ones (greedy engineers contend for tasks)", results)
	}
}

// A fork's episodes begin with its parent's prefix; pairs of parent and
// fork share it as their prompt.
func TestForkSharesItsParentsPrefix(t *testing.T) {
	log := memlog.New()
	mustSession(t, log, "parent", "startup", 2, greedyOnly)
	evs := readAll(t, log, "parent")
	// Fork just before bob's third turn, and let bob idle from there.
	var at uint64
	n := 0
	for _, ev := range evs {
		if ev.Type == payload.EvTurn && ev.Actor == "bob" {
			if n++; n == 3 {
				var p payload.Turn
				_ = json.Unmarshal(ev.Payload, &p)
				at = p.Seen
				break
			}
		}
	}
	idleBob := func(o org.Observation) sim.Answer {
		if o.Member == "bob" {
			return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
		}
		return greedyOnly(o)
	}
	mustFork(t, log, "fork", "parent", at, idleBob)
	pe := mustEpisodes(t, log, "parent", export.Options{})
	fe := mustEpisodes(t, log, "fork", export.Options{})
	pb, fb := pe["bob"], fe["bob"]
	// bob's first two turns and the third observation are shared.
	shared := 0
	for shared < len(pb.Messages) && shared < len(fb.Messages) {
		a, _ := json.Marshal(pb.Messages[shared])
		b, _ := json.Marshal(fb.Messages[shared])
		if !bytes.Equal(a, b) {
			break
		}
		shared++
	}
	if users := countRole(pb.Messages[:shared], "user"); users != 3 {
		t.Fatalf("parent and fork share %d messages with %d observations of bob, want 3", shared, users)
	}
	if pb.Reward <= fb.Reward {
		t.Fatalf("bob delivered %g working and %g idling; want more working", pb.Reward, fb.Reward)
	}
	// The fork says where it began, and which of its turns its parent's
	// agents played: bob's first two.
	if want := fmt.Sprintf("parent@%d", at); fb.ForkedFrom != want || fb.InheritedTurns != 2 || pb.ForkedFrom != "" || pb.InheritedTurns != 0 {
		t.Errorf("fork: forked from %q, %d inherited turns; parent: %q, %d; want %s, 2 and none", fb.ForkedFrom, fb.InheritedTurns, pb.ForkedFrom, pb.InheritedTurns, want)
	}
	var inherited []int
	for _, w := range fb.Windows(0) {
		inherited = append(inherited, w.InheritedTurns)
	}
	if len(inherited) < 3 || inherited[0] != 1 || inherited[1] != 1 || inherited[2] != 0 {
		t.Errorf("the fork's windows (no history) hold %v inherited turns; want 1, 1, then 0", inherited)
	}
	pairs, alone := export.Pairs(append(sorted(pe), sorted(fe)...), export.PairOptions{})
	if len(alone) != 0 {
		t.Errorf("alone: %v, want none", alone)
	}
	var bob *export.Pair
	for i := range pairs {
		if pairs[i].Member == "bob" {
			bob = &pairs[i]
		}
	}
	if bob == nil {
		t.Fatal("no pair for bob")
	}
	if bob.ChosenSession != "parent" || bob.RejectedSession != "fork" || bob.ChosenReward != pb.Reward || bob.RejectedReward != fb.Reward {
		t.Errorf("pair %s %g over %s %g, want parent %g over fork %g", bob.ChosenSession, bob.ChosenReward, bob.RejectedSession, bob.RejectedReward, pb.Reward, fb.Reward)
	}
	if bob.ChosenForkedFrom != "" || bob.RejectedForkedFrom != fb.ForkedFrom {
		t.Errorf("pair: forked from %q and %q; want none and %q", bob.ChosenForkedFrom, bob.RejectedForkedFrom, fb.ForkedFrom)
	}
	if len(bob.Prompt) != shared || bob.Chosen[0].Role != "assistant" || bob.Rejected[0].Role != "assistant" {
		t.Errorf("prompt of %d messages (want %d), continuations begin with %s and %s", len(bob.Prompt), shared, bob.Chosen[0].Role, bob.Rejected[0].Role)
	}
	if c, r := bob.Chosen[0].ToolCalls, bob.Rejected[0].ToolCalls; len(r) != 1 || r[0].Function.Name != "wait" || len(c) == 0 || c[len(c)-1].Function.Name == "wait" {
		t.Errorf("continuations %+v and %+v: want greedy's work and the idle wait", c, r)
	}
}

func countRole(msgs []export.Message, role string) int {
	n := 0
	for _, m := range msgs {
		if m.Role == role {
			n++
		}
	}
	return n
}

func sorted(m map[string]export.Episode) []export.Episode {
	var out []export.Episode
	for _, id := range []string{"alice", "bob", "carol", "dave", "erin"} {
		if ep, ok := m[id]; ok {
			out = append(out, ep)
		}
	}
	return out
}

// WriteEvents writes every event of every session, as corpsim log does,
// each line naming the session exported; a fork's shared events say where
// they are stored.
func TestWriteEvents(t *testing.T) {
	log := memlog.New()
	mustSession(t, log, "a", "startup", 1, greedyOnly)
	mustFork(t, log, "b", "a", 40, greedyOnly)
	var buf bytes.Buffer
	n, err := export.WriteEvents(context.Background(), &buf, log, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	ea, eb := readAll(t, log, "a"), readAll(t, log, "b")
	if n != len(ea)+len(eb) {
		t.Fatalf("wrote %d lines, want %d + %d events", n, len(ea), len(eb))
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 16<<20)
	want := append(ea, eb...)
	i := 0
	for ; sc.Scan(); i++ {
		var got events.Event
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		var extra struct {
			StoredIn string `json:"stored_in"`
		}
		_ = json.Unmarshal(sc.Bytes(), &extra)
		w := want[i]
		session, stored := "a", ""
		if i >= len(ea) {
			session = "b"
			if w.Seq <= 40 {
				stored = "a"
			}
		}
		if got.Session != session || extra.StoredIn != stored {
			t.Fatalf("line %d: session %q stored in %q, want %q and %q", i+1, got.Session, extra.StoredIn, session, stored)
		}
		got.Session = w.Session
		if !bytes.Equal(events.Encode(&got), events.Encode(&w)) {
			t.Fatalf("line %d: got %+v, want %+v", i+1, got, w)
		}
		if stored == "" {
			// Lines of events stored in their own session are corpsim log's lines.
			b, _ := json.Marshal(w)
			if !bytes.Equal(sc.Bytes(), b) {
				t.Fatalf("line %d:\ngot  %s\nwant %s", i+1, sc.Bytes(), b)
			}
		}
	}
	if i != n {
		t.Fatalf("read %d lines, wrote %d", i, n)
	}
	if _, err := export.WriteEvents(context.Background(), &buf, log, []string{"nosuch"}); err == nil {
		t.Error("an unknown session exported without error")
	}
}

func TestEpisodesOfAnUnknownSession(t *testing.T) {
	if _, err := export.Episodes(context.Background(), memlog.New(), "nosuch", export.Options{}); err == nil {
		t.Fatal("no error")
	}
}

// Windows cut an episode into one example per answered turn, with at most
// the given number of earlier turns, ending with the turn's answer.
func TestWindows(t *testing.T) {
	log := memlog.New()
	mustSession(t, log, "s1", "startup", 3, team(3))
	eps := mustEpisodes(t, log, "s1", export.Options{Prompts: export.Prompts{System: func(org.Observation) string { return "sys" }}})
	for _, ep := range []export.Episode{eps["dave"], eps["erin"]} { // with a timeout, with a stale reply
		// Where each answered turn begins, and its number.
		var users []int
		for i, m := range ep.Messages {
			if m.Role == "user" {
				users = append(users, i)
			}
		}
		for _, history := range []int{-1, 0, 2, 1000} {
			wins := ep.Windows(history)
			if len(wins) != ep.Turns || len(users) != ep.Turns {
				t.Fatalf("%s: %d windows, %d turns, %d observations", ep.Member, len(wins), ep.Turns, len(users))
			}
			var prev uint64
			for i, w := range wins {
				from := users[max(0, i-max(history, 0))]
				want := append([]export.Message{ep.Messages[0]}, ep.Messages[from:users[i]+2]...)
				a, _ := json.Marshal(w.Messages)
				b, _ := json.Marshal(want)
				if !bytes.Equal(a, b) {
					t.Fatalf("%s history %d window %d:\ngot  %s\nwant %s", ep.Member, history, i, a, b)
				}
				if w.Turn <= prev || w.Reward != ep.Reward || w.TeamReward != ep.TeamReward || w.Session != ep.Session || w.Member != ep.Member {
					t.Fatalf("%s window %d: turn %d after %d, header %+v", ep.Member, i, w.Turn, prev, w)
				}
				prev = w.Turn
			}
		}
		var turns []uint64
		for _, w := range ep.Windows(0) {
			turns = append(turns, w.Turn)
		}
		if ep.Member == "dave" && (ep.TimedOut != 1 || slices.Contains(turns, 2)) || ep.Member == "erin" && !slices.Contains(turns, 3) {
			t.Errorf("%s's windows end with turns %v (%d timed out): want dave's turn 2 (timed out) left out, erin's turn 3 (stale) in", ep.Member, turns, ep.TimedOut)
		}
	}
}
