package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
)

// Log is what the export reads sessions from; every events.Log is one.
type Log interface {
	Session(ctx context.Context, id string) (events.SessionMeta, error)
	Read(ctx context.Context, session string, from uint64) iter.Seq2[events.Event, error]
	Scan(ctx context.Context, session string, from uint64, fn func(*events.Event) error) error
}

var _ Log = (events.Log)(nil)

// Prompts are the texts of a transcript besides the agent's tool calls.
// corpsim export gives the LLM agent's (agents/llm), so that the data reads
// like what a seat played by an LLM is sent. A nil field means its default.
type Prompts struct {
	// System is the system message of a member's transcript, from its first
	// observation; nil means none.
	System func(org.Observation) string
	// Observation is the user message of a turn; nil means the observation
	// as JSON.
	Observation func(org.Observation) (string, error)
	// Result is the tool message answering the call that became action a,
	// refused with rej (nil when it was accepted); nil means a JSON object
	// {"accepted":true} or {"accepted":false,"kind":…,"rule":…,"reason":…}.
	Result func(a org.Action, rej *org.RejectedView) string
}

// Options configure Episodes. The zero value is valid.
type Options struct {
	Prompts Prompts
	// Progress, if set, is told how far the reading has come: after each
	// event replayed (stage "replay", seq of the last), and by WriteSFT
	// after each line written (stage "write", lines of all it will write).
	Progress func(stage string, done, total uint64)
}

// Message is one chat message in the OpenAI format. Content is null for an
// assistant message made of tool calls only.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant or tool
	Content    *string    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the tool and carries its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Episode is one member's session as a chat transcript: one SFT example.
type Episode struct {
	Session string `json:"session"`
	World   string `json:"world"`
	Seed    uint64 `json:"seed"`
	Member  string `json:"member"`
	Agent   string `json:"agent"` // what played the seat, from the session's metadata
	// Status is the session's: "finished", or "interrupted" (stopped, or
	// not yet resumed) or "failed", whose episodes end where it stopped
	// and whose rewards are what it had earned by then.
	Status   string        `json:"status"`
	Messages []Message     `json:"messages"`
	Tools    []agents.Tool `json:"tools"` // the world's (agents.ToolDefsFor), as the llm agent offers them
	// Reward is the member's delivered value and TeamReward the team
	// score, by Rubric on the session's last state (corpsim score).
	Reward     float64 `json:"reward"`
	TeamReward float64 `json:"team_reward"`
	Rubric     string  `json:"rubric"`
	// Turns counts the member's answered turns; TimedOut the turns it was
	// asked and did not answer in time, and TurnErrors those its agent
	// could not decide (turn.failed: its backend failed), which the
	// transcript leaves out.
	Turns      int `json:"turns"`
	TimedOut   int `json:"timed_out,omitempty"`
	TurnErrors int `json:"turn_errors,omitempty"`
	// ForkedFrom is a fork's "PARENT@SEQ": its events up to SEQ, and the
	// first InheritedTurns of Turns among them (of a window's turns, for
	// a window), were played by the parent's agents (and seed), not by
	// Agent.
	ForkedFrom     string `json:"forked_from,omitempty"`
	InheritedTurns int    `json:"inherited_turns,omitempty"`
	// Turn is set on a window (see Windows): the turn whose answer it ends with.
	Turn uint64 `json:"turn,omitempty"`
	// Outcomes are the rubric's verdicts on the outcome steps the member
	// completed (format 2 systems): which record, how many fields right,
	// and whether it is a wrong outcome.
	Outcomes []policies.OutcomeCard `json:"outcomes,omitempty"`

	worldHash string // with Seed, root, key and load, which episodes may be paired
	load      float64
	root      uint64 // the seed event 1 was drawn with (Seed goes on from a fork's point)
	draws     string // the seeds its events were drawn with, from which seq each (seedHistory)
	key       string // a digest of the session's draw key ("": none)
	format    int    // its log format: the rules it was judged by
	spans     []span // the answered turns' messages
	forkSeq   uint64 // a fork's point (ForkedFrom)
}

// seedHistory says which seed each of session m's events was drawn with:
// "1:S" for a session of one seed, "1:S,N:T" for a fork at N-1 that went
// on with seed T, and so on up its forks' chain. Two sessions of the same
// world, load and draw key played the same situation only if theirs are
// equal: a fork of a parent at 197 with seed 11 and one at 1 with seed 11
// share their seed but not their draws.
func seedHistory(ctx context.Context, log Log, m events.SessionMeta) (string, error) {
	chain := []events.SessionMeta{m}
	for cur := m; cur.Parent != ""; {
		p, err := log.Session(ctx, cur.Parent)
		if err != nil {
			return "", fmt.Errorf("export: session %s, the parent of %s: %w", cur.Parent, cur.ID, err)
		}
		if len(chain) > 1_000_000 || p.ID == m.ID {
			return "", fmt.Errorf("export: session %s: its forks' chain does not end", m.ID)
		}
		chain, cur = append(chain, p), p
	}
	type seg struct{ from, seed uint64 }
	var segs []seg
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		if c.Parent == "" {
			segs = []seg{{1, c.Seed}}
			continue
		}
		n := 0
		for n < len(segs) && segs[n].from <= c.ForkSeq {
			n++
		}
		segs = segs[:n]
		if len(segs) == 0 || segs[len(segs)-1].seed != c.Seed {
			segs = append(segs, seg{c.ForkSeq + 1, c.Seed})
		}
	}
	parts := make([]string, len(segs))
	for i, sg := range segs {
		parts[i] = fmt.Sprintf("%d:%d", sg.from, sg.seed)
	}
	return strings.Join(parts, ","), nil
}

// span is where an answered turn's messages are in an Episode: its
// observation at user, its answer at user+1, then its results.
type span struct {
	turn uint64
	seq  uint64 // the turn's event
	user int
}

// Windows cuts ep into one example per answered turn, the way an LLM agent
// that keeps history earlier turns of its conversation (agents/llm's
// MaxHistory) is asked and answers: the system prompt, up to history
// earlier turns (observation, answer, results), then the turn's
// observation and the answer, which ends the example (its results came
// after). Each window carries ep's header and rewards, and in Turn the
// turn it ends with. A negative history keeps none.
func (ep *Episode) Windows(history int) []Episode {
	history = max(history, 0)
	out := make([]Episode, 0, len(ep.spans))
	for i, sp := range ep.spans {
		w := *ep
		w.Turn, w.spans = sp.turn, nil
		w.InheritedTurns = 0 // of the window's turns
		for _, in := range ep.spans[max(0, i-history) : i+1] {
			if in.seq <= ep.forkSeq {
				w.InheritedTurns++
			}
		}
		from := ep.spans[max(0, i-history)].user
		w.Messages = make([]Message, 0, ep.spans[0].user+sp.user+2-from)
		w.Messages = append(w.Messages, ep.Messages[:ep.spans[0].user]...) // the system prompt
		w.Messages = append(w.Messages, ep.Messages[from:sp.user+2]...)
		out = append(out, w)
	}
	return out
}

// turnRec is one turn of a member, gathered from the log.
type turnRec struct {
	member      string
	seq, seen   uint64
	at          clock.Time // when it was asked: the time of its event
	turn        uint64
	actions     []org.Action
	timedOut    bool
	failed      bool                      // turn.failed: the agent could not decide
	refused     map[int]*org.RejectedView // by the action's index
	wholeReason *org.RejectedView         // the whole reply was refused (index -1)
	reads       []org.ReadResult          // what its accepted gets and searches returned, in order (format 2)
	first       bool                      // the member's first answered turn, which the system prompt opens
	observed    bool                      // user (and system) were rendered from its observation
	user        string                    // the observation as the user message
	system      string                    // first: the system prompt
}

// turnMsgs is an answered turn as chat messages: the system prompt (the
// member's first answered turn only), its observation, its answer and
// the results of the answer's calls.
type turnMsgs struct {
	system     *Message
	user, asst Message
	results    []Message
	turn, seq  uint64
}

// replayed is a session read to its end: what every episode's header
// says besides the member's own.
type replayed struct {
	id        string
	meta      events.SessionMeta
	draws     string // seedHistory's
	st        *org.State
	card      policies.Scorecard
	delivered map[string]float64 // each member's delivered value, by the card
	load      float64
	root      uint64
	key       string
	format    int
	// seats are the members an agent played (the world's members that are
	// not simulated colleagues), in ID order.
	seats []string
}

// Episodes reads session id and returns, for every member seat an agent
// played (the world's members that are not simulated colleagues), its
// transcript, in member-ID order. It reads the log twice: once for the
// turns and refusals, once to replay the state each turn observed; a log
// that does not replay (a corrupt event, a state hash that differs) is an
// error, as for corpsim replay. It holds every transcript until it returns:
// WriteSFT writes the same lines from a spill instead.
func Episodes(ctx context.Context, log Log, id string, o Options) ([]Episode, error) {
	type transcript struct {
		tally
		msgs  []Message
		spans []span
	}
	byMember := map[string]*transcript{}
	r, err := o.read(ctx, log, id, func(t *turnRec, m *turnMsgs) error {
		tr := byMember[t.member]
		if tr == nil {
			tr = &transcript{msgs: []Message{}}
			byMember[t.member] = tr
		}
		if !tr.add(t) {
			return nil
		}
		if m.system != nil {
			tr.msgs = append(tr.msgs, *m.system)
		}
		tr.spans = append(tr.spans, span{turn: m.turn, seq: m.seq, user: len(tr.msgs)})
		tr.msgs = append(tr.msgs, m.user, m.asst)
		tr.msgs = append(tr.msgs, m.results...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Episode, 0, len(r.seats))
	for _, member := range r.seats {
		ep := r.header(member)
		if tr := byMember[member]; tr != nil {
			ep.Messages, ep.spans = tr.msgs, tr.spans
			tr.fill(&ep)
		}
		out = append(out, ep)
	}
	return out, nil
}

// tally counts a member's turns as read hands them over.
type tally struct {
	seqs               []uint64 // the answered turns' events, in order
	timedOut, failures int
}

// add counts t and reports whether it was answered (then it comes with
// its messages).
func (c *tally) add(t *turnRec) bool {
	switch {
	case t.timedOut:
		c.timedOut++
	case t.failed:
		c.failures++
	default:
		c.seqs = append(c.seqs, t.seq)
		return true
	}
	return false
}

// fill sets ep's counts of turns: answered, timed out, failed, and the
// answered ones its parent's agents played (a fork's, up to its point).
func (c *tally) fill(ep *Episode) {
	ep.Turns, ep.TimedOut, ep.TurnErrors = len(c.seqs), c.timedOut, c.failures
	ep.InheritedTurns = inherited(c.seqs, ep.forkSeq)
}

// inherited counts the turns of seqs at or before a fork's point.
func inherited(seqs []uint64, forkSeq uint64) int {
	n := 0
	for _, seq := range seqs {
		if seq <= forkSeq {
			n++
		}
	}
	return n
}

// header is member's episode without its transcript: the session's, the
// member's rewards and outcome verdicts; no messages (an empty list).
func (r *replayed) header(member string) Episode {
	ep := Episode{Session: r.id, World: r.st.World.Name, Seed: r.meta.Seed, Member: member, Agent: r.meta.Agents[member], Status: string(r.meta.Status),
		Messages: []Message{}, Tools: agents.ToolDefsFor(r.st.World), Reward: r.delivered[member], TeamReward: r.card.TeamScore,
		Rubric: r.card.Rubric, worldHash: r.st.World.Hash, load: r.load, root: r.root, draws: r.draws, key: r.key, format: r.format}
	if r.meta.Parent != "" {
		ep.ForkedFrom, ep.forkSeq = fmt.Sprintf("%s@%d", r.meta.Parent, r.meta.ForkSeq), r.meta.ForkSeq
	}
	contentEpisode(&ep, r.st.World, r.card.Outcomes)
	return ep
}

// read reads session id in two passes: the turns and their refusals,
// then a replay that renders each answered turn's observation after the
// event it saw. It hands every turn of a seat to emit, each member's in
// order, once the replay has gone past everything the turn caused (the
// member's next turn, or the end): an answered one with its messages, a
// timed-out or failed one with none. What it keeps of a turn meanwhile is
// its messages' text, not the observation.
func (o Options) read(ctx context.Context, log Log, id string, emit func(*turnRec, *turnMsgs) error) (*replayed, error) {
	meta, err := log.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	// Pass 1: the turns, their refusals, and which states were observed.
	var turns []*turnRec
	bySeq := map[uint64]*turnRec{}
	var last uint64
	for ev, err := range log.Read(ctx, id, 1) {
		if err != nil {
			return nil, err
		}
		last = ev.Seq
		switch ev.Type {
		case payload.EvTurn, payload.EvTurnTimeout, payload.EvTurnFailed:
			t := &turnRec{member: ev.Actor, seq: ev.Seq, at: clock.Time(ev.Time), timedOut: ev.Type == payload.EvTurnTimeout, failed: ev.Type == payload.EvTurnFailed}
			if t.failed {
				var p payload.TurnFailed
				if err := json.Unmarshal(ev.Payload, &p); err != nil {
					return nil, &events.CorruptError{Session: ev.Session, Seq: ev.Seq, Err: err}
				}
				t.turn, t.seen = p.Turn, p.Seen
			} else if t.timedOut {
				var p payload.TurnTimeout
				if err := json.Unmarshal(ev.Payload, &p); err != nil {
					return nil, &events.CorruptError{Session: ev.Session, Seq: ev.Seq, Err: err}
				}
				t.turn, t.seen = p.Turn, p.Seen
			} else {
				var p payload.Turn
				if err := json.Unmarshal(ev.Payload, &p); err != nil {
					return nil, &events.CorruptError{Session: ev.Session, Seq: ev.Seq, Err: err}
				}
				t.turn, t.seen, t.actions = p.Turn, p.Seen, p.Actions
			}
			turns = append(turns, t)
			bySeq[ev.Seq] = t
		case payload.EvActionRejected:
			t := bySeq[ev.Cause]
			if t == nil || t.member != ev.Actor {
				continue // not an answer's refusal
			}
			var p payload.ActionRejected
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				return nil, &events.CorruptError{Session: ev.Session, Seq: ev.Seq, Err: err}
			}
			r := &org.RejectedView{Action: p.Action, Kind: p.Kind, Rule: p.Rule, Reason: p.Reason}
			if p.Index < 0 {
				t.wholeReason = r
				continue
			}
			if t.refused == nil {
				t.refused = map[int]*org.RejectedView{}
			}
			t.refused[p.Index] = r
		}
	}
	if last == 0 {
		return nil, fmt.Errorf("%w (session %s is empty)", sim.ErrNotASession, id)
	}
	need := map[uint64][]*turnRec{}
	mine := map[string][]*turnRec{} // each member's turns, in order
	answered := map[string]bool{}   // the member answered a turn before
	for _, t := range turns {
		if !t.timedOut && !t.failed {
			need[t.seen] = append(need[t.seen], t)
			t.first, answered[t.member] = !answered[t.member], true
		}
		mine[t.member] = append(mine[t.member], t)
	}
	draws, err := seedHistory(ctx, log, meta)
	if err != nil {
		return nil, err
	}
	// Pass 2: replay, and render each observation after the event it saw.
	r := &replayed{id: id, meta: meta, draws: draws}
	var e *sim.Engine
	seat := map[string]bool{}
	observe := func(seq uint64) error {
		st := e.State()
		for _, t := range need[seq] {
			if !seat[t.member] {
				continue
			}
			v := st.ViewAt(t.member, 0, t.at)
			if v.Turn != t.turn {
				return fmt.Errorf("export: session %s: %s's turn at seq %d is turn %d, but the state at seq %d says turn %d",
					id, t.member, t.seq, t.turn, seq, v.Turn)
			}
			v.Session = ""
			if t.first && o.Prompts.System != nil {
				t.system = o.Prompts.System(v)
			}
			var err error
			if t.user, err = o.Prompts.observation(v); err != nil {
				return fmt.Errorf("export: session %s, %s: %w", id, t.member, err)
			}
			t.observed = true
		}
		return nil
	}
	// done: how many of each member's turns were handed to emit.
	done := map[string]int{}
	flush := func(member string, before uint64) error {
		ts := mine[member]
		for ; done[member] < len(ts) && ts[done[member]].seq < before; done[member]++ {
			t := ts[done[member]]
			if !seat[member] {
				continue
			}
			if t.timedOut || t.failed {
				if err := emit(t, nil); err != nil {
					return err
				}
				continue
			}
			m, err := o.Prompts.messages(t)
			if err != nil {
				return fmt.Errorf("export: session %s, %s: %w", id, member, err)
			}
			if err := emit(t, &m); err != nil {
				return err
			}
			*t = turnRec{member: t.member, seq: t.seq} // its text is out: keep nothing
		}
		return nil
	}
	// The replay borrows each event from the log (Scan): Apply keeps
	// nothing of it.
	errStop := errors.New("stop")
	err = log.Scan(ctx, id, 1, func(ev *events.Event) error {
		if ev.Seq > last {
			return errStop // appended since the first pass
		}
		if e == nil {
			var err error
			if e, err = sim.Rebuild(one(*ev), id, sim.Config{}); err != nil {
				return err
			}
			var p payload.SessionStarted
			_ = json.Unmarshal(ev.Payload, &p) // Rebuild decoded it already
			r.load, r.root, r.format = p.Load, p.Seed, p.Format
			if len(p.DrawKey) > 0 {
				sum := sha256.Sum256(p.DrawKey)
				r.key = hex.EncodeToString(sum[:8])
			}
			for _, m := range e.State().World.Members {
				if m.NPC == nil {
					seat[m.ID] = true
					r.seats = append(r.seats, m.ID)
				}
			}
			slices.Sort(r.seats)
		} else if err := e.Apply(*ev); err != nil {
			return fmt.Errorf("session %s: replay at seq %d: %w", id, ev.Seq, err)
		}
		if t := bySeq[ev.Seq]; t != nil {
			// What the member's earlier turns caused is behind: they are whole.
			if err := flush(t.member, ev.Seq); err != nil {
				return err
			}
		}
		if ev.Type == payload.EvRecordRead {
			keepRead(e.State(), ev, bySeq)
		}
		if o.Progress != nil {
			o.Progress("replay", ev.Seq, last)
		}
		return observe(ev.Seq)
	})
	if err != nil && err != errStop {
		return nil, err
	}
	if e == nil || e.State().LastSeq != last {
		return nil, fmt.Errorf("export: session %s: the second reading stopped before seq %d", id, last)
	}
	for _, member := range r.seats {
		if err := flush(member, last+1); err != nil {
			return nil, err
		}
	}
	r.st = e.State()
	r.card = policies.Score(r.st)
	r.delivered = make(map[string]float64, len(r.card.Members))
	for _, mc := range r.card.Members {
		r.delivered[mc.Member] = mc.Delivered
	}
	return r, nil
}

func one(ev events.Event) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) { yield(ev, nil) }
}

// messages says answered turn t as chat messages.
func (p Prompts) messages(t *turnRec) (turnMsgs, error) {
	if !t.observed {
		return turnMsgs{}, fmt.Errorf("turn %d at seq %d: no observation was rebuilt for seq %d", t.turn, t.seq, t.seen)
	}
	m := turnMsgs{turn: t.turn, seq: t.seq, user: Message{Role: "user", Content: text(t.user)}, asst: Message{Role: "assistant"}}
	if t.first && p.System != nil {
		m.system = &Message{Role: "system", Content: text(t.system)}
	}
	for i, a := range t.actions {
		call := ToolCall{ID: fmt.Sprintf("call_%d_%d", t.turn, i+1), Type: "function", Function: callOf(a)}
		m.asst.ToolCalls = append(m.asst.ToolCalls, call)
		rej := t.refused[i]
		if t.wholeReason != nil { // a stale or malformed reply: none of it was applied
			rej = t.wholeReason
		}
		res := p.result(a, rej)
		if rej == nil && (a.Type == org.ActGet || a.Type == org.ActSearch) && len(t.reads) > 0 {
			res, t.reads = p.readResult(res, t.reads[0]), t.reads[1:]
		}
		m.results = append(m.results, Message{Role: "tool", ToolCallID: call.ID, Content: text(res)})
	}
	if len(m.asst.ToolCalls) == 0 {
		m.asst.Content = text("")
	}
	return m, nil
}

// callOf says action a as a tool call. An action no tool can say (an LLM's
// call that did not parse, recorded as an unknown action type) keeps its
// type as the name and its other fields as the arguments.
func callOf(a org.Action) FunctionCall {
	name, args, err := agents.ToolCallFromAction(a)
	if err == nil {
		return FunctionCall{Name: name, Arguments: string(args)}
	}
	b, _ := json.Marshal(a)
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(b, &fields)
	delete(fields, "type")
	b, _ = json.Marshal(fields) // keys sorted
	return FunctionCall{Name: a.Type, Arguments: string(b)}
}

func (p Prompts) observation(o org.Observation) (string, error) {
	if p.Observation != nil {
		return p.Observation(o)
	}
	b, err := json.Marshal(o)
	return string(b), err
}

func (p Prompts) result(a org.Action, rej *org.RejectedView) string {
	if p.Result != nil {
		return p.Result(a, rej)
	}
	r := struct {
		Accepted bool   `json:"accepted"`
		Kind     string `json:"kind,omitempty"`
		Rule     string `json:"rule,omitempty"`
		Reason   string `json:"reason,omitempty"`
	}{Accepted: rej == nil}
	if rej != nil {
		r.Kind, r.Rule, r.Reason = rej.Kind, rej.Rule, rej.Reason
	}
	b, _ := json.Marshal(r)
	return string(b)
}

func text(s string) *string { return &s }
