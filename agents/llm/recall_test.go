package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/app"
)

// A fork of a session with an llm seat gives the new llm agent the seat's
// past turns (app.Recall, llm's Recall): the model's first request in the
// fork carries the same conversation as the parent's request for that
// turn (the same observations, tool calls and tool results), where an
// agent made anew would have sent the observation alone. The endpoint
// here gives no call IDs and no text, so that the agent numbers the calls
// in both runs: an endpoint's own IDs and text are not in the log.
func TestForkKeepsTheModelsConversation(t *testing.T) {
	f, newBob := numberedEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data := t.TempDir()
	o := app.RunOptions{World: "startup", Seed: 3, Agents: "greedy", Data: data, TurnTimeout: 20 * time.Second, Logger: hclog.NewNullLogger()}
	o.Seats = map[string]agents.Agent{"bob": newBob()}
	parent, err := app.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	sent, seen := bobsTurns(t, f, data, parent.Session)
	turn := uint64(len(seen) / 2) // the fork starts at the state this turn saw, and asks it again
	o.Seats = map[string]agents.Agent{"bob": newBob()}
	before := len(f.requests())
	fork, res, err := app.Fork(ctx, o, app.ForkOptions{Parent: parent.Session, At: seen[turn]})
	if err != nil {
		t.Fatal(err)
	}
	if res.StateHash != parent.StateHash {
		t.Errorf("the fork ended with state hash %s, its parent with %s", res.StateHash, parent.StateHash)
	}
	firstAsParent(t, f.requests()[before], sent, turn, fork.ID, parent.Session)
}

// numberedEndpoint serves sensible answers with no call IDs, so that the
// agent numbers the calls, as it numbers recalled ones; newLLM makes an
// agent asking it, keeping 3 turns.
func numberedEndpoint(t *testing.T) (f *fake, newLLM func() *llm.Agent) {
	play := sensible(t)
	f, srv := mustServe(t, func(req chatRequest) (int, []call) {
		status, calls := play(req)
		for i := range calls {
			calls[i].id = ""
		}
		return status, calls
	})
	return f, func() *llm.Agent {
		return mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "fake", APIKey: "k", MaxHistory: 3})
	}
}

// bobsTurns returns bob's turns in session: the conversation the model was
// sent for each, by turn, and the state each saw (where a fork may start:
// the end of a step; index 0 unused).
func bobsTurns(t *testing.T, f *fake, data, session string) (sent map[uint64][]chatMessage, seen []uint64) {
	t.Helper()
	sent = map[uint64][]chatMessage{}
	for _, req := range f.requests() {
		sent[lastObservation(t, req).Turn] = req.Messages
	}
	seen = bobSeen(t, data, session)
	if len(seen) < 8 {
		t.Fatalf("bob took %d turns", len(seen))
	}
	return sent, seen
}

// firstAsParent checks that first, a fork's first request, asks bob's turn
// turn with the conversation the parent sent for it, its observations
// naming the fork.
func firstAsParent(t *testing.T, first chatRequest, sent map[uint64][]chatMessage, turn uint64, fork, parent string) {
	t.Helper()
	o1 := lastObservation(t, first)
	want, ok := sent[o1.Turn]
	if !ok || o1.Turn != turn {
		t.Fatalf("the fork first asked bob turn %d, want %d", o1.Turn, turn)
	}
	g, w := messagesJSON(t, first.Messages), messagesJSON(t, want)
	if strings.Contains(g, parent) {
		t.Errorf("turn %d: the fork's first request names the parent session: its observations should name the fork", turn)
	}
	if g = strings.ReplaceAll(g, fork, parent); g != w {
		t.Errorf("the fork's first request to the model differs from the parent's for turn %d:\ngot  %s\nwant %s", o1.Turn, g, w)
	}
	if len(first.Messages) < 6 {
		t.Errorf("turn %d: the fork's first request carries %d messages: no history", turn, len(first.Messages))
	}
}

func messagesJSON(t *testing.T, m []chatMessage) string {
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bobSeen returns, by bob's turn number, the seq of the state each of his
// turns saw (index 0 unused).
func bobSeen(t *testing.T, data, session string) []uint64 {
	t.Helper()
	log, _, err := app.OpenSession(context.Background(), data, session, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	seen := []uint64{0}
	for ev, err := range log.Read(context.Background(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == payload.EvTurn && ev.Actor == "bob" {
			var p payload.Turn
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, p.Seen)
		}
	}
	return seen
}

// A session's checkpoints keep an llm seat's conversation (the seat is an
// agents.Keeper), and a fork from far into it takes the conversation from
// the latest checkpoint and is shown only the turns since: the model's
// first request in the fork is still the parent's request for that turn.
func TestForkFromACheckpointKeepsTheModelsConversation(t *testing.T) {
	f, newLLM := numberedEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data := t.TempDir()
	o := app.RunOptions{World: "startup", Seed: 3, Agents: "greedy,bob=llm", LLM: newLLM(), Data: data, CheckpointEvery: 20,
		TurnTimeout: 20 * time.Second, Logger: hclog.NewNullLogger()}
	parent, err := app.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	sent, seen := bobsTurns(t, f, data, parent.Session)
	// Forks at bob's later turns: some right at a checkpoint, some with
	// turns of his between the checkpoint and the fork.
	o.Agents = "" // the parent's seats: bob is llm's
	between := 0
	for turn := uint64(len(seen) - 2); turn > uint64(len(seen)/2); turn-- {
		o.LLM = newLLM()
		before := len(f.requests())
		fork, res, err := app.Fork(ctx, o, app.ForkOptions{Parent: parent.Session, At: seen[turn]})
		if err != nil {
			t.Fatal(err)
		}
		if res.StateHash != parent.StateHash {
			t.Errorf("turn %d: the fork ended with state hash %s, its parent with %s", turn, res.StateHash, parent.StateHash)
		}
		if res.Recalled == nil || res.Recalled.FromCheckpoint == 0 || res.Recalled.Turns >= int(turn)-1 {
			t.Fatalf("turn %d: recalled %+v; want bob's conversation from a checkpoint and fewer than his %d past turns shown", turn, res.Recalled, turn-1)
		}
		if res.Recalled.Turns > 0 {
			between++
		}
		firstAsParent(t, f.requests()[before], sent, turn, fork.ID, parent.Session)
		t.Logf("fork at seq %d (bob's turn %d): %d turns shown since the checkpoint at %d", seen[turn], turn, res.Recalled.Turns, res.Recalled.FromCheckpoint)
	}
	if between == 0 {
		t.Error("no fork had turns of bob's between its checkpoint and the fork point")
	}
}

// A seat's memory names the version of its shape; a memory of another
// version is refused, and one of the same taken, into the seat's session.
func TestSeatMemoryVersion(t *testing.T) {
	_, srv := mustServe(t, script())
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	w, _, err := app.LoadWorld("startup")
	if err != nil {
		t.Fatal(err)
	}
	seat := a.In(w, "s1", "bob")
	if _, err := seat.Decide(context.Background(), obs(1)); err != nil {
		t.Fatal(err)
	}
	mem, err := seat.(agents.Keeper).KeepMemory()
	if err != nil || !strings.HasPrefix(string(mem), `{"v":1,"session":"s1"`) {
		t.Fatalf("memory %.60s, %v", mem, err)
	}
	other := a.In(w, "s2", "bob").(agents.Keeper)
	if err := other.TakeMemory([]byte(strings.Replace(string(mem), `"v":1`, `"v":2`, 1))); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("a memory of version 2: %v, want it refused", err)
	}
	if err := other.TakeMemory(mem); err != nil {
		t.Fatal(err)
	}
	again, err := other.KeepMemory()
	// The session, and the observation in the user message (JSON in a JSON string), name s2.
	want := strings.NewReplacer(`"session":"s1"`, `"session":"s2"`, `\"session\":\"s1\"`, `\"session\":\"s2\"`).Replace(string(mem))
	if want == string(mem) || !strings.Contains(want, `\"session\":\"s2\"`) {
		t.Fatalf("the kept observation does not name the session: %.300s", mem)
	}
	if err != nil || string(again) != want {
		t.Fatalf("taken and kept again: %.200s (%v); want the memory, in session s2", again, err)
	}
}
