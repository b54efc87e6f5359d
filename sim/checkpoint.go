package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	segjson "github.com/segmentio/encoding/json"
	"sort"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// engineSnapshot is everything an Engine needs to continue from where a
// checkpoint was taken: the state and the derived bookkeeping that replay
// would otherwise rebuild event by event.
type engineSnapshot struct {
	Version    int                   `json:"v"`
	State      json.RawMessage       `json:"state,omitempty"` // spliced in by snapshot
	Timers     []timerSnapshot       `json:"timers"`
	Pushed     map[string]clock.Time `json:"pushed"`
	Now        clock.Time            `json:"now"`
	Candidates []string              `json:"candidates,omitempty"`
	Seen       uint64                `json:"seen"`
	EndHash    string                `json:"end_hash,omitempty"`
	Done       bool                  `json:"done,omitempty"`
	Reward     policies.Credit       `json:"reward"` // score changes not yet paid as a reward event
	// Format is the session's log format when it is later than 2; a
	// checkpoint without it was taken of a format-2 session.
	Format int `json:"format,omitempty"`
	// Memory is what the session's agents remembered at this point, as
	// the driver gave it (CheckpointWith): opaque to the engine, which
	// carries it for a recall (sim/app) and restores nothing from it.
	Memory json.RawMessage `json:"memory,omitempty"`
}

type timerSnapshot struct {
	At    clock.Time `json:"at"`
	Kind  timerKind  `json:"kind"`
	ID    string     `json:"id"`
	Cause uint64     `json:"cause,omitempty"`
	// Step and Who are an escalation's: the step of its request and the
	// approver it waits for. A checkpoint without them (before they were
	// written) restored no escalation at all: see escalationsOf.
	Step int    `json:"step,omitempty"`
	Who  string `json:"who,omitempty"`
}

// escalationsOf fills in the step and approver of the escalation timers of
// a checkpoint taken before they were written: a request's latest timer
// (the highest cause) is the one its current step set, if it is still
// pending; its earlier ones were for steps or approvers since passed, and
// are left as they were read, which no longer fire.
func escalationsOf(st *org.State, timers []timerSnapshot) {
	latest := map[string]int{} // request -> index of its latest escalation timer
	for i, t := range timers {
		if t.Kind != timerEscalate || t.Who != "" {
			continue
		}
		if j, ok := latest[t.ID]; !ok || t.Cause > timers[j].Cause {
			latest[t.ID] = i
		}
	}
	for id, i := range latest { // order: each request fills in its own timer
		if r := st.Request(id); r != nil && r.Status == org.RequestPending && r.Current < len(r.Steps) && escalates(st, r) {
			timers[i].Step, timers[i].Who = r.Current, r.Steps[r.Current].Approver
		}
	}
}

// Snapshot encodes the engine's state after the last event it emitted or
// applied, for a checkpoint. Take it between Ready and Step: members asked
// to decide but not yet answered are recorded as due, so a restored engine
// asks them again.
func (e *Engine) Snapshot() []byte {
	return e.snapshot(e.st.Snapshot(), nil)
}

// Checkpoint returns the state hash and the Snapshot together, encoding the
// state once for both.
func (e *Engine) Checkpoint() (stateHash string, snapshot []byte) {
	return e.CheckpointWith(nil)
}

// CheckpointWith is Checkpoint with memory, what the session's agents
// remember at this point (a JSON value, or nil for none), kept in the
// snapshot: an engine Restored from it returns it from Memory.
func (e *Engine) CheckpointWith(memory json.RawMessage) (stateHash string, snapshot []byte) {
	st := e.st.Snapshot()
	h := sha256.Sum256(st)
	return hex.EncodeToString(h[:]), e.snapshot(st, memory)
}

// Memory is what the agents remembered at the checkpoint the engine was
// Restored from (CheckpointWith), or nil; nil once it Resumes.
func (e *Engine) Memory() json.RawMessage { return e.memory }

// pushedMap is e.pushed as a checkpoint lists it: by member ID.
func (e *Engine) pushedMap() map[string]clock.Time {
	m := make(map[string]clock.Time)
	for i, p := range e.pushed {
		if p.set {
			m[e.st.Members[i].ID] = p.at
		}
	}
	return m
}

// snapshot encodes the engine around the state's own encoding, which is
// spliced in rather than passed through encoding/json again (a large
// state would be scanned and copied once more for nothing).
func (e *Engine) snapshot(state []byte, memory json.RawMessage) []byte {
	e.mustKeepTimers("Snapshot")
	sn := engineSnapshot{Version: 1, Pushed: e.pushedMap(), Now: e.now, Seen: e.seen, EndHash: e.endHash, Done: e.done, Reward: e.reward, Memory: memory}
	if e.format > 2 {
		sn.Format = e.format
	}
	for _, it := range e.timers.Items() {
		v := it.Value
		sn.Timers = append(sn.Timers, timerSnapshot{At: it.At, Kind: v.kind, ID: v.id, Cause: v.cause, Step: v.step, Who: v.who})
	}
	due := append([]string(nil), e.candidates...)
	for _, t := range e.turns {
		due = append(due, t.Member)
	}
	due = append(due, e.npcDue...)
	sort.Strings(due)
	sn.Candidates = due
	rest, err := json.Marshal(sn)
	if err != nil {
		panic("sim: snapshot does not encode: " + err.Error())
	}
	// rest is {"v":1,...}: put "state" first.
	b := make([]byte, 0, len(state)+len(rest)+16)
	b = append(b, `{"state":`...)
	b = append(b, state...)
	b = append(b, ',')
	return append(b, rest[1:]...)
}

// Restore makes an engine from a Snapshot taken with the same world (cfg
// gives the world, seed and session). stateHash, if not empty, must equal
// the restored state's hash. Call Resume on the result to continue.
func Restore(cfg Config, data []byte, stateHash string) (*Engine, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	// A checkpoint is decoded with segmentio's drop-in decoder of
	// encoding/json (org.Restore's state too): most of a fork's or
	// resume's load was encoding/json's scanning of the snapshot (three
	// passes over the state's bytes), and it takes half the time.
	// The restore tests (checkRestores: every shipped world, cut at many
	// points) check that a restored engine writes its snapshot again byte
	// for byte; a load also checks the restored state's hash against the
	// one recorded with the checkpoint.
	var sn engineSnapshot
	if err := segjson.Unmarshal(data, &sn); err != nil {
		return nil, fmt.Errorf("sim: checkpoint: %w", err)
	}
	if sn.Version != 1 {
		return nil, fmt.Errorf("sim: checkpoint version %d not supported", sn.Version)
	}
	st, err := org.Restore(cfg.World, sn.State)
	if err != nil {
		return nil, fmt.Errorf("sim: checkpoint: %w", err)
	}
	st.SetJudge(policies.Judge)
	if e.cfg.NewSequencer != nil {
		st.SetSequencer(e.cfg.NewSequencer())
	}
	e.st = st
	if stateHash != "" && e.StateHash() != stateHash {
		return nil, fmt.Errorf("%w: checkpoint at seq %d records %s, its state hashes to %s", ErrReplayMismatch, st.LastSeq, stateHash, e.StateHash())
	}
	escalationsOf(st, sn.Timers)
	for _, t := range sn.Timers {
		e.setTimer(t.At, timer{kind: t.Kind, id: t.ID, cause: t.Cause, step: t.Step, who: t.Who})
	}
	for id, at := range sn.Pushed { // order: each member's entry is set once, by its own number
		if m := st.Member(id); m != nil {
			*e.pushedFor(m) = pushed{at: at, set: true}
		}
	}
	e.now, e.candidates, e.seen, e.endHash, e.done, e.reward = sn.Now, sn.Candidates, sn.Seen, sn.EndHash, sn.Done, sn.Reward
	e.memory = sn.Memory
	e.format = max(sn.Format, 2)
	if e.format > payload.LogFormat {
		return nil, fmt.Errorf("sim: checkpoint of a log of format %d, newer than this build's %d", e.format, payload.LogFormat)
	}
	st.Format = e.format
	e.started = true
	return e, nil
}

// escalates reports whether r's current step set an escalation timer (its
// role's escalate_after, as scheduleEscalation reads it).
func escalates(st *org.State, r *org.Request) bool {
	c, ok := st.World.Chain(r.Chain)
	if !ok {
		return false
	}
	var after clock.Duration
	for _, s := range c.Steps {
		if s.Role == r.Steps[r.Current].Role {
			after = s.EscalateAfter
		}
	}
	return after != 0
}
