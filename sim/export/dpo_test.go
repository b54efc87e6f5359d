package export

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
)

// transcript builds messages from a compact script: "s" system, "u:x"
// user x, "a:tool" an assistant calling tool, "a:" one with no calls,
// "t:x" a tool result x.
func transcript(script string) []Message {
	var out []Message
	for _, f := range strings.Fields(script) {
		role, body, _ := strings.Cut(f, ":")
		switch role {
		case "s":
			out = append(out, Message{Role: "system", Content: text("prompt")})
		case "u":
			out = append(out, Message{Role: "user", Content: text(body)})
		case "a":
			m := Message{Role: "assistant"}
			if body == "" {
				m.Content = text("")
			} else {
				m.ToolCalls = []ToolCall{{ID: "c", Type: "function", Function: FunctionCall{Name: body, Arguments: "{}"}}}
			}
			out = append(out, m)
		case "t":
			out = append(out, Message{Role: "tool", ToolCallID: "c", Content: text(body)})
		}
	}
	return out
}

func ep(session, world string, seed uint64, member string, reward, team float64, script string) Episode {
	return Episode{Session: session, World: world, Seed: seed, Member: member, Reward: reward, TeamReward: team,
		Messages: transcript(script), worldHash: "hash-" + world, root: seed}
}

// with is e with its draw key's digest and the seed its event 1 was drawn with.
func with(e Episode, key string, root uint64) Episode {
	e.key, e.root = key, root
	return e
}

// drawn is e with its seed history (seedHistory's).
func drawn(e Episode, draws string) Episode {
	e.draws = draws
	return e
}

func roles(msgs []Message) string {
	var out []string
	for _, m := range msgs {
		s := m.Role[:1]
		if m.Content != nil && *m.Content != "" && m.Role != "system" {
			s += ":" + *m.Content
		}
		for _, c := range m.ToolCalls {
			s += ":" + c.Function.Name
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestPairs(t *testing.T) {
	base := "s u:o1 a:claim t:ok u:o2 a:work t:ok"
	tests := []struct {
		name  string
		eps   []Episode
		o     PairOptions
		pairs []string // "member chosen>rejected prompt | chosen | rejected"
		alone []string
	}{
		{"the higher reward is chosen",
			[]Episode{ep("A", "w", 1, "bob", 10, 5, base), ep("B", "w", 1, "bob", 30, 5, "s u:o1 a:claim t:no u:o3 a:wait")},
			PairOptions{}, []string{"bob B>A s u:o1 | a:claim t:no u:o3 a:wait | a:claim t:ok u:o2 a:work t:ok"}, nil},
		{"the prompt ends before the first different choice",
			[]Episode{ep("A", "w", 1, "bob", 30, 5, base), ep("B", "w", 1, "bob", 10, 5, "s u:o1 a:claim t:ok u:o2 a:wait t:ok")},
			PairOptions{}, []string{"bob A>B s u:o1 a:claim t:ok u:o2 | a:work t:ok | a:wait t:ok"}, nil},
		{"same choice, other outcome: the prompt ends before that choice",
			[]Episode{ep("A", "w", 1, "bob", 30, 5, base), ep("B", "w", 1, "bob", 10, 5, "s u:o1 a:claim t:refused u:o9 a:wait")},
			PairOptions{}, []string{"bob A>B s u:o1 | a:claim t:ok u:o2 a:work t:ok | a:claim t:refused u:o9 a:wait"}, nil},
		{"equal rewards make no pair",
			[]Episode{ep("A", "w", 1, "bob", 10, 5, base), ep("B", "w", 1, "bob", 10, 9, "s u:o1 a:wait")},
			PairOptions{}, nil, nil},
		{"by team",
			[]Episode{ep("A", "w", 1, "bob", 10, 5, base), ep("B", "w", 1, "bob", 10, 9, "s u:o1 a:wait")},
			PairOptions{By: ByTeam}, []string{"bob B>A s u:o1 | a:wait | a:claim t:ok u:o2 a:work t:ok"}, nil},
		{"the margin is exclusive",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), ep("B", "w", 1, "bob", 12, 0, "s u:o1 a:wait"), ep("C", "w", 1, "bob", 12.5, 0, "s u:o1 a:")},
			PairOptions{Margin: 2}, []string{"bob C>A s u:o1 | a | a:claim t:ok u:o2 a:work t:ok"}, nil},
		{"other seeds and worlds are alone",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), ep("B", "w", 2, "bob", 20, 0, base), ep("C", "v", 1, "bob", 30, 0, base),
				ep("D", "w", 2, "bob", 0, 0, "s u:o1 a:wait")},
			PairOptions{}, []string{"bob B>D s u:o1 | a:claim t:ok u:o2 a:work t:ok | a:wait"}, []string{"A", "C"}},
		// The same world, seed and load, another situation: draws keyed by
		// a secret, or a fork that went on with seed 2 from seed 1's start.
		{"a keyed session and an unkeyed one are alone",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), with(ep("B", "w", 1, "bob", 20, 0, "s u:o1 a:wait"), "k1", 1)},
			PairOptions{}, nil, []string{"A", "B"}},
		{"sessions keyed alike pair",
			[]Episode{with(ep("A", "w", 1, "bob", 10, 0, base), "k1", 1), with(ep("B", "w", 1, "bob", 20, 0, "s u:o1 a:wait"), "k1", 1)},
			PairOptions{}, []string{"bob B>A s u:o1 | a:wait | a:claim t:ok u:o2 a:work t:ok"}, nil},
		{"a reseeded fork and a run of its seed are alone",
			[]Episode{ep("A", "w", 2, "bob", 10, 0, base), with(ep("B", "w", 2, "bob", 20, 0, "s u:o1 a:wait"), "", 1)},
			PairOptions{}, nil, []string{"A", "B"}},
		{"forks of one seed reseeded at different points are alone",
			[]Episode{drawn(with(ep("A", "w", 11, "bob", 10, 0, base), "", 3), "1:3,198:11"),
				drawn(with(ep("B", "w", 11, "bob", 20, 0, "s u:o1 a:wait"), "", 3), "1:3,2:11")},
			PairOptions{}, nil, []string{"A", "B"}},
		{"sessions of two log formats are alone (their rules differ)",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), func() Episode { e := ep("B", "w", 1, "bob", 20, 0, "s u:o1 a:wait"); e.format = 7; return e }()},
			PairOptions{}, nil, []string{"A", "B"}},
		{"only the same member",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), ep("A", "w", 1, "carol", 0, 0, "s u:o1 a:wait"),
				ep("B", "w", 1, "bob", 10, 0, "s u:o1 a:wait"), ep("B", "w", 1, "carol", 5, 0, base)},
			PairOptions{}, []string{"carol B>A s u:o1 | a:claim t:ok u:o2 a:work t:ok | a:wait"}, nil},
		{"a different first observation makes no pair",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), ep("B", "w", 1, "bob", 0, 0, "s u:o2 a:wait")},
			PairOptions{}, nil, nil},
		{"identical transcripts make no pair",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), ep("B", "w", 1, "bob", 0, 0, base)},
			PairOptions{}, nil, nil},
		{"one transcript goes on longer",
			[]Episode{ep("A", "w", 1, "bob", 10, 0, base), ep("B", "w", 1, "bob", 20, 0, base+" u:o3 a:wait")},
			PairOptions{}, []string{"bob B>A s u:o1 a:claim t:ok u:o2 | a:work t:ok u:o3 a:wait | a:work t:ok"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pairs, alone := Pairs(tc.eps, tc.o)
			var got []string
			for _, p := range pairs {
				got = append(got, fmt.Sprintf("%s %s>%s %s | %s | %s", p.Member, p.ChosenSession, p.RejectedSession,
					roles(p.Prompt), roles(p.Chosen), roles(p.Rejected)))
				c, r := findEp(tc.eps, p.ChosenSession, p.Member), findEp(tc.eps, p.RejectedSession, p.Member)
				if p.ChosenReward != c.Score(tc.o.By) || p.RejectedReward != r.Score(tc.o.By) || p.ChosenReward-p.RejectedReward <= tc.o.Margin {
					t.Errorf("rewards %g > %g, want %g > %g by more than %g", p.ChosenReward, p.RejectedReward, c.Score(tc.o.By), r.Score(tc.o.By), tc.o.Margin)
				}
				// Prompt + continuation is each whole transcript.
				if roles(append(slices.Clone(p.Prompt), p.Chosen...)) != roles(c.Messages) || roles(append(slices.Clone(p.Prompt), p.Rejected...)) != roles(r.Messages) {
					t.Errorf("prompt and continuations do not make up the transcripts")
				}
			}
			if !slices.Equal(got, tc.pairs) {
				t.Errorf("pairs:\ngot  %q\nwant %q", got, tc.pairs)
			}
			if !slices.Equal(alone, tc.alone) {
				t.Errorf("alone: got %v, want %v", alone, tc.alone)
			}
		})
	}
}

func findEp(eps []Episode, session, member string) *Episode {
	for i := range eps {
		if eps[i].Session == session && eps[i].Member == member {
			return &eps[i]
		}
	}
	return nil
}

func TestValidBy(t *testing.T) {
	for _, by := range []string{"", ByMember, ByTeam} {
		if err := ValidBy(by); err != nil {
			t.Errorf("%q: %v", by, err)
		}
	}
	if err := ValidBy("sum"); err == nil {
		t.Error(`"sum" accepted`)
	}
}

// metaLog is a Log of session metadata alone, for seedHistory.
type metaLog map[string]events.SessionMeta

func (l metaLog) Session(_ context.Context, id string) (events.SessionMeta, error) {
	m, ok := l[id]
	if !ok {
		return events.SessionMeta{}, events.ErrNoSession
	}
	return m, nil
}
func (metaLog) Read(context.Context, string, uint64) iter.Seq2[events.Event, error] { return nil }
func (metaLog) Scan(context.Context, string, uint64, func(*events.Event) error) error {
	return nil
}

// TestSeedHistory: which seed a session's events were drawn with, from
// which seq, up its forks' chain.
func TestSeedHistory(t *testing.T) {
	l := metaLog{
		"P":  {ID: "P", Seed: 3},
		"A":  {ID: "A", Seed: 11, Parent: "P", ForkSeq: 197}, // reseeded at 197
		"B":  {ID: "B", Seed: 11, Parent: "P", ForkSeq: 1},   // reseeded at 1
		"S":  {ID: "S", Seed: 3, Parent: "P", ForkSeq: 50},   // the parent's seed
		"C":  {ID: "C", Seed: 3, Parent: "A", ForkSeq: 300},  // back to 3 after A's 11
		"D":  {ID: "D", Seed: 11, Parent: "A", ForkSeq: 100}, // before A's reseed: P's draws, then 11
		"E":  {ID: "E", Seed: 11, Parent: "P", ForkSeq: 100}, // the same draws as D
		"A2": {ID: "A2", Seed: 11, Parent: "A", ForkSeq: 250},
	}
	for id, want := range map[string]string{"P": "1:3", "A": "1:3,198:11", "B": "1:3,2:11", "S": "1:3", "C": "1:3,198:11,301:3",
		"D": "1:3,101:11", "E": "1:3,101:11", "A2": "1:3,198:11"} {
		got, err := seedHistory(context.Background(), l, l[id])
		if err != nil || got != want {
			t.Errorf("%s: %q (%v), want %q", id, got, err, want)
		}
	}
	if _, err := seedHistory(context.Background(), l, events.SessionMeta{ID: "X", Parent: "gone"}); err == nil {
		t.Error("a fork whose parent is gone: no error")
	}
}
