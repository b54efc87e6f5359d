package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// chatter messages bob on every turn; sleeper (bob) reads its inbox only
// every few hours, so messages pile up in it.
// It records the messages bob's observations showed.
type chatter struct {
	mu  sync.Mutex
	saw []string
}

func (c *chatter) Decide(_ context.Context, o org.Observation) ([]org.Action, error) {
	if o.Member == "bob" {
		c.mu.Lock()
		for _, m := range o.Inbox {
			c.saw = append(c.saw, m.ID)
		}
		c.mu.Unlock()
		return []org.Action{{Type: org.ActWait, For: "4h"}}, nil
	}
	return []org.Action{{Type: org.ActMessage, To: "bob", Text: fmt.Sprintf("turn %d from %s", o.Turn, o.Member)}, {Type: org.ActWait, For: "1h"}}, nil
}

// TestInboxPagingInALiveRun runs agents who message bob faster than he
// reads, with an inbox page of two messages, and checks from the log alone
// that every delivered message reached its recipient's observation exactly
// once and in order, and that paging happened; a second run is identical,
// and a fork (with other agents) keeps the session's limits.
func TestInboxPagingInALiveRun(t *testing.T) {
	data := t.TempDir()
	c := &chatter{}
	seats := map[string]agents.Agent{}
	for _, m := range []string{"alice", "bob", "carol"} {
		seats[m] = c
	}
	o := app.RunOptions{World: "startup", Seed: 3, Agents: "idle", Data: data, Seats: seats, Limits: org.Limits{Inbox: 2}}
	res := mustRun(t, o)
	evs := storedEvents(t, data, res.Session)
	read := checkPaging(t, evs, 2)
	if !slices.Equal(c.saw, read["bob"]) {
		t.Fatalf("bob's observations showed %v, but his turns read %v: a message shown twice or never", c.saw, read["bob"])
	}
	if len(c.saw) == 0 {
		t.Fatal("bob saw no messages")
	}
	o.Data = t.TempDir()
	if again := mustRun(t, o); again.StateHash != res.StateHash || again.Events != res.Events {
		t.Fatalf("a second run ended with %s after %d events, want %s after %d", again.StateHash, again.Events, res.StateHash, res.Events)
	}
	at := evs[len(evs)/3].Seq
	for insideTurn(evs, at) { // not between a turn and what it did (refused)
		at--
	}
	fork := cliResult(t, "fork", res.Session, "--at", seqArg(at), "--agents", "idle", "--data", data)
	checkPaging(t, storedEvents(t, data, fork.Session), 2)
	if out, errs, code := runCLI(t, "verify", fork.Session, "--data", data); code != cli.ExitOK {
		t.Fatalf("verify of the fork: exit %d\n%s%s", code, out, errs)
	}
}

// checkPaging replays evs and checks that no turn read more than page
// inbox messages and that each member read every delivered message once,
// in order. It returns what each member's turns read; it fails if no turn
// was paged.
func checkPaging(t *testing.T, evs []events.Event, page int) map[string][]string {
	t.Helper()
	w, err := worlds.Shipped("startup")
	if err != nil {
		t.Fatal(err)
	}
	st := org.New(w)
	delivered := map[string][]string{} // member -> message ids, in delivery order
	read := map[string][]string{}      // member -> message ids its turns consumed
	paged := 0
	for _, ev := range evs {
		if ev.Type == payload.EvTurn {
			var p payload.Turn
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			inbox := st.Member(ev.Actor).Inbox
			n := len(inbox)
			if p.InboxRead > 0 {
				n = p.InboxRead
				paged++
			}
			if n > page {
				t.Fatalf("turn at seq %d read %d messages with an inbox page of %d", ev.Seq, n, page)
			}
			read[ev.Actor] = append(read[ev.Actor], inbox[:n]...)
		}
		if err := st.Apply(ev); err != nil {
			t.Fatalf("replay at seq %d: %v", ev.Seq, err)
		}
		if ev.Type == payload.EvMessageDelivered {
			var p payload.MessageDelivered
			_ = json.Unmarshal(ev.Payload, &p)
			for _, m := range st.Messages {
				if m.ID == p.Message {
					delivered[m.To] = append(delivered[m.To], m.ID)
				}
			}
		}
	}
	for member, ids := range delivered {
		// What is still in the inbox at the end was delivered but not read.
		want := ids[:len(ids)-len(st.Member(member).Inbox)]
		if !slices.Equal(read[member], want) {
			t.Fatalf("%s read %v, want each delivered message once, in order: %v", member, read[member], want)
		}
	}
	if paged == 0 {
		t.Fatal("no turn was paged: the messages no longer pile up in an inbox")
	}
	t.Logf("%d messages, %d paged turns", len(st.Messages), paged)
	return read
}
