package tests

import (
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
)

// Log format 5 records a simulated colleague's next step in the
// ticket.resolved it follows (payload.TicketResolved.Then): a change of
// the record, not of the company. The same world, seed and agents
// recorded in formats 4 and 5 are the same events but that every format-5
// resolve with a next step stands for a format-4 resolve and the
// ticket.served or member.waiting right after it (same actor and instant,
// seen at the resolve, the same ticket, work and bounds), and the seqs
// that this shifts: each format-5 event's cause and seen are the format-4
// ones renumbered. The tasks end alike, the scorecards and dense rewards
// are equal, and both logs replay to the state hashes they record.
func TestFormat5RecordsTheSameWork(t *testing.T) {
	cases := []goldenCase{
		{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1},
		{world: "npc-desk", file: "npc-desk.yaml", agent: "planner", seed: 3},
		{world: "same-instant", file: "same-instant.yaml", agent: "random", seed: 4},
		{world: "support-desk", agent: "greedy", seed: 1},
		{world: "startup", agent: "greedy", seed: 1},
		{world: "procurement", agent: "planner", seed: 2},
		{world: "product-launch", agent: "greedy", seed: 1},
		{world: "billing-support", agent: "diligent", seed: 1},
		{world: "meetings", agent: "diligent", seed: 1},
	}
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			c4, c5 := c, c
			c4.format, c5.format = 4, 5
			ev4, ev5 := playGoldenCase(t, c4), playGoldenCase(t, c5)
			folded := alignFormat5(t, ev4, ev5)
			if c.file == "npc-desk.yaml" && folded == 0 {
				t.Fatal("format 5 recorded no next step at the desk of colleagues")
			}
			if len(ev5) != len(ev4)-folded {
				t.Errorf("format 5 holds %d events, format 4 %d, with %d next steps", len(ev5), len(ev4), folded)
			}
			sameWork(t, 4, 5, ev4, ev5)
			t.Logf("format 4: %d events, format 5: %d (%d next steps)", len(ev4), len(ev5), folded)
		})
	}
}

// alignFormat5 walks a format-4 log and the format-5 log of the same
// session together and fails t where they differ otherwise than format 5
// says; it returns how many next steps format 5 folded.
func alignFormat5(t *testing.T, ev4, ev5 []events.Event) int {
	t.Helper()
	renum := map[uint64]uint64{0: 0} // format-4 seq -> format-5 seq
	folded, i := 0, 0
	for j := range ev5 {
		if i >= len(ev4) {
			t.Fatalf("format 5 has events after format 4's last (#%d)", ev5[j].Seq)
		}
		a, b := ev4[i], ev5[j]
		renum[a.Seq] = b.Seq
		if a.Type != b.Type || a.Actor != b.Actor || a.Time != b.Time || renum[a.Cause] != b.Cause {
			t.Fatalf("format 4 #%d %s by %q at %d (cause #%d), format 5 #%d %s by %q at %d (cause #%d)",
				a.Seq, a.Type, a.Actor, a.Time, a.Cause, b.Seq, b.Type, b.Actor, b.Time, b.Cause)
		}
		i++
		switch b.Type {
		case payload.EvTicketResolved:
			p4, err4 := payload.As[payload.TicketResolved](&a, nil)
			p5, err5 := payload.As[payload.TicketResolved](&b, nil)
			if err4 != nil || err5 != nil || p4.Task != p5.Task || p4.Work != p5.Work {
				t.Fatalf("#%d: format 4 %s, format 5 %s", b.Seq, a.Payload, b.Payload)
			}
			if !p5.Then() {
				continue
			}
			if i >= len(ev4) {
				t.Fatalf("#%d carries a next step format 4 does not record", b.Seq)
			}
			step := ev4[i]
			i++
			renum[step.Seq] = b.Seq
			if step.Actor != b.Actor || step.Time != b.Time {
				t.Fatalf("#%d's next step is format 4's #%d %s by %q at %d", b.Seq, step.Seq, step.Type, step.Actor, step.Time)
			}
			switch {
			case p5.Next != "":
				want, _ := p5.Served(a.Seq)
				got, err := payload.As[payload.TicketServed](&step, nil)
				if step.Type != payload.EvTicketServed || err != nil || got != want {
					t.Fatalf("#%d serves %s; format 4's #%d is %s %s", b.Seq, b.Payload, step.Seq, step.Type, step.Payload)
				}
			default:
				want, _ := p5.Waiting(a.Seq)
				got, err := payload.As[payload.MemberWaiting](&step, nil)
				if step.Type != payload.EvMemberWaiting || err != nil || got != want {
					t.Fatalf("#%d waits %s; format 4's #%d is %s %s", b.Seq, b.Payload, step.Seq, step.Type, step.Payload)
				}
			}
			folded++
		case payload.EvTicketServed:
			p4, _ := payload.As[payload.TicketServed](&a, nil)
			p5, _ := payload.As[payload.TicketServed](&b, nil)
			p4.Seen = renum[p4.Seen]
			if p4 != p5 {
				t.Fatalf("#%d: format 4 %s, format 5 %s", b.Seq, a.Payload, b.Payload)
			}
		case payload.EvMemberWaiting:
			p4, _ := payload.As[payload.MemberWaiting](&a, nil)
			p5, _ := payload.As[payload.MemberWaiting](&b, nil)
			p4.Seen = renum[p4.Seen]
			if p4 != p5 {
				t.Fatalf("#%d: format 4 %s, format 5 %s", b.Seq, a.Payload, b.Payload)
			}
		case payload.EvTurn:
			p4, _ := payload.As[payload.Turn](&a, nil)
			p5, _ := payload.As[payload.Turn](&b, nil)
			if renum[p4.Seen] != p5.Seen || p4.Turn != p5.Turn || len(p4.Actions) != len(p5.Actions) {
				t.Fatalf("#%d: format 4 %s, format 5 %s", b.Seq, a.Payload, b.Payload)
			}
		case payload.EvSessionStarted, payload.EvSessionEnded:
			// The format, and the state hash of a state holding seqs.
		default:
			if string(a.Payload) != string(b.Payload) {
				t.Fatalf("#%d %s: format 4 %s, format 5 %s", b.Seq, b.Type, a.Payload, b.Payload)
			}
		}
	}
	if i != len(ev4) {
		t.Fatalf("format 4 has %d events after format 5's last", len(ev4)-i)
	}
	return folded
}

// A format-5 ticket.resolved whose next step would be refused as the
// event it stands for does not replay, and leaves the state as it was; a
// next step in a log of an older format does not replay either.
func TestFormat5RefusesAForgedNextStep(t *testing.T) {
	for _, format := range []int{4, 5} {
		evs := playGoldenCase(t, goldenCase{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1, format: format})
		i := slices.IndexFunc(evs, func(ev events.Event) bool {
			p, _ := payload.As[payload.TicketResolved](&ev, nil)
			return ev.Type == payload.EvTicketResolved && (format == 4 || p.Next != "")
		})
		if i < 0 {
			t.Fatalf("format %d: no ticket.resolved to forge", format)
		}
		p, err := payload.As[payload.TicketResolved](&evs[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		held := ""
		for _, task := range replayedTo(t, evs[:i]).Tasks() {
			if task.Status != org.StatusOpen && task.Status != org.StatusDone && task.ID != p.Task {
				held = task.ID
			}
		}
		type forge struct {
			name, want string
			edit       func(*payload.TicketResolved)
		}
		forges := []forge{{"a wait in a format-4 log", "a next step in a log of format 4", func(p *payload.TicketResolved) { p.Waits = true }}}
		if format == 5 {
			forges = []forge{
				{"an unknown ticket", `unknown task "nope"`, func(p *payload.TicketResolved) { p.Next = "nope" }},
				{"the resolved ticket", "already", func(p *payload.TicketResolved) { p.Next = p.Task }},
				{"a ticket another holds", "already", func(p *payload.TicketResolved) { p.Next = held }},
				{"work beyond the effort", "is not within the", func(p *payload.TicketResolved) { p.NextWork = 1 << 50 }},
				{"a wait and a serve", "both waits and serves", func(p *payload.TicketResolved) { p.Waits = true }},
				{"a wait into the past", "not in the future", func(p *payload.TicketResolved) { p.Next, p.NextWork, p.Waits, p.NextUntil = "", 0, true, 1 }},
				{"bounds without a step", "without a next step", func(p *payload.TicketResolved) { p.Next, p.NextWork = "", 0 }},
			}
			if held == "" {
				t.Fatal("no ticket held by another colleague at the resolve")
			}
		}
		for _, f := range forges {
			q := p
			f.edit(&q)
			forged := evs[i]
			forged.Payload = mustEncode(t, &q)
			_, err := sim.Rebuild(seqOf(append(slices.Clone(evs[:i]), forged)), "golden", sim.Config{})
			if err == nil || !strings.Contains(err.Error(), f.want) {
				t.Errorf("format %d, %s: Rebuild gave %v, want an error saying %q", format, f.name, err, f.want)
			}
			st := replayedTo(t, evs[:i])
			before := st.Hash()
			if err := st.Apply(forged); err == nil {
				t.Errorf("format %d, %s: Apply took it", format, f.name)
			}
			if st.Hash() != before || st.LastSeq != evs[i-1].Seq {
				t.Errorf("format %d, %s: the refused event changed the state", format, f.name)
			}
		}
	}
}

// replayedTo is the state after evs, a session's first events.
func replayedTo(tb testing.TB, evs []events.Event) *org.State {
	tb.Helper()
	e, err := sim.Rebuild(seqOf(evs), "golden", sim.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return e.State()
}

func mustEncode(tb testing.TB, p any) []byte {
	tb.Helper()
	b, err := payload.Append(nil, p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
