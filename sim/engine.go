package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// Default costs of actions in working time (worlds.DefaultCosts); a
// version 2 world may set its own (worlds.World.ActionCosts).
const (
	MinTurnCost     = worlds.DefaultTurnCost // every turn takes at least this long
	ClaimCost       = worlds.DefaultClaimCost
	CompleteCost    = worlds.DefaultCompleteCost
	RequestCost     = worlds.DefaultRequestCost
	DecideCost      = worlds.DefaultDecideCost
	MessageCost     = worlds.DefaultMessageCost
	MessageLatency  = worlds.DefaultMessageLatency // from sending to delivery
	DefaultWorkSpan = worlds.DefaultWorkSpan       // work without "for" lasts this long, or until the effort is spent
)

// ErrReplayMismatch is returned by Apply when a recorded session.ended names
// a state hash other than the replayed state's.
var ErrReplayMismatch = errors.New("sim: replayed state hash differs from the recorded one")

// Config configures an Engine. The zero value of every field but World means the default.
type Config struct {
	World   *worlds.World
	Source  []byte // the world file's bytes, recorded in session.started
	Seed    uint64
	Session string       // copied into every event's Session field
	Rules   policies.Set // nil means policies.Default()
	// Load scales arrival rates and counts: 2 brings twice the tickets. 0 means 1.
	Load float64
	// Limits bound observations and messages (zero fields: the defaults).
	// They are recorded in session.started; a replayed engine takes them
	// from there.
	Limits org.Limits
	// WorldLimits are the world budgets the session's world was loaded
	// and admitted within; those raised above the defaults are recorded in
	// session.started, so that its replay, resume and fork load the world
	// within them (RecordedWorld).
	WorldLimits worlds.Limits
	// NewSequencer makes what each state of the engine hands the hashing
	// of the tickets it retires to, off the engine's goroutine
	// (org.Sequencer: the driver's workers.Chain); nil hashes them on it.
	NewSequencer func() org.Sequencer
	// ApplyOnly makes an engine that only re-applies recorded events
	// (corpsim replay): it keeps no timers, which nothing but the events it
	// would make next reads, so it cannot Start, Resume or Snapshot.
	ApplyOnly bool
	// MaxEvents bounds the events a session appends, session.ended
	// included: once it is spent the session ends "event_limit" instead of
	// growing without bound. 0 means DefaultMaxEvents; below MinMaxEvents
	// is an error. It is not recorded: an engine rebuilt from a log gets
	// its caller's (SetMaxEvents).
	MaxEvents int
	// DrawKey, when set, is what every draw of the session is made with
	// besides the seed (worlds.NewDraws): payload.NewDrawKey of an
	// operator's secret and the session's root seed, recorded in
	// session.started. An engine rebuilt from a log takes the recorded
	// one (the driver's Origin), so replay, forks and resumes need no
	// secret. nil draws from the seed alone.
	DrawKey []byte
	// RootSeed, when set, is the seed the session's session.started
	// recorded, where the engine goes on with another (a fork's Seed):
	// the colleagues' hidden rules are the session's from its start,
	// drawn with it, as its records are. nil: Seed is the root's.
	RootSeed *uint64
	// LogFormat is the log format a new session writes (session.started
	// records it): 0 means payload.LogFormat; payload.OldestLogFormat and
	// later are accepted, so that a test can record a session as an older
	// build did. An engine that replays, restores or continues a session
	// writes the format the session recorded.
	LogFormat int
}

// Budgets of events per session (Config.MaxEvents).
const (
	DefaultMaxEvents = 10_000_000
	MinMaxEvents     = 3 // session.started, a reward and session.ended
)

// Turn asks one member to decide.
type Turn struct {
	Member      string
	Observation org.Observation
}

// Answer is a member's answer to a Turn. Exactly one of Actions (possibly
// empty), Malformed, Failed or TimedOut describes it.
type Answer struct {
	Member    string
	Turn      uint64 // the Observation's Turn being answered
	Actions   []org.Action
	Malformed string // why the reply could not be read
	// Failed says why the member's agent could not decide (its backend
	// failed: an endpoint that cannot be reached, or answers an error).
	// The turn is recorded as turn.failed with the reason.
	Failed   string
	TimedOut bool
}

// Why a session ends (session.ended's reason, org.State's EndReason).
const (
	EndComplete     = "complete"      // every task is done and nothing more will arrive
	EndHorizon      = "horizon"       // simulated time reached the world's horizon
	EndQuiescent    = "quiescent"     // nothing is left to happen
	EndAgentsFailed = "agents_failed" // the agents failed every turn they were asked (org.State.AgentsFailed)
	EndEventLimit   = "event_limit"   // the session's budget of events (Config.MaxEvents) was spent
)

// ExplainEnd says in a sentence what an end reason means, for people
// reading a scorecard ("" for a reason it does not know).
func ExplainEnd(reason string) string {
	switch reason {
	case EndComplete:
		return "every task is done and nothing more will arrive"
	case EndHorizon:
		return "simulated time reached the world's horizon"
	case EndQuiescent:
		return "nothing was left to happen before the horizon: no arrival, timer, message or return was due, and every member was waiting with nothing due to wake it (a member who waits is asked again only when something changes; work may remain that no one took or could take)"
	case EndAgentsFailed:
		return "the agents failed every turn they were asked (their backend could not decide)"
	case EndEventLimit:
		return "the session's budget of events (--max-events) was spent"
	}
	return ""
}

// MaxFailReason bounds the bytes of a failed turn's reason that
// turn.failed records; a longer one is cut.
const MaxFailReason = 1000

// Ready is what the engine needs its driver to do: persist and publish
// Events, then (after Advance) ask Turns. Done means the session has ended.
type Ready struct {
	Events []events.Event
	Turns  []Turn
	Done   bool
}

type timerKind uint8

const (
	timerMember timerKind = iota + 1
	timerWork
	timerMessage
	timerArrival   // id: arrival ID
	timerInterrupt // id: index of the world's interruption
	timerProject   // id: project ID
	timerReturn    // id: member back from leave
	timerQueueUp   // id: queue whose outage ends
	timerEscalate  // id: request; step and approver say which assignment it watches
	timerSLA       // id: ticket whose SLA passes
	timerCaseSLA   // id: case whose SLA passes
	timerShiftEnd  // id: member whose working period ends (shifts.go)
)

type timer struct {
	kind  timerKind
	id    string
	cause uint64
	step  int    // timerEscalate
	who   string // timerEscalate: the approver it watches
}

// Engine is the simulation of one session. It is not safe for concurrent use.
type Engine struct {
	cfg     Config
	book    *policies.Book // the rules (Config.Rules), filed by action type
	st      *org.State
	timers  clock.Queue[timer]
	pushed  []pushed // by member number (Member.Num): the BusyUntil a timer was pushed for
	idKey   [32]byte
	startMs int64
	now     clock.Time

	candidates []string // members that may be due at now
	pending    []events.Event
	arena      []byte // the current block event payloads are encoded into
	handed     int
	turns      []Turn   // outstanding agent turns
	npcDue     []string // NPCs due at the same instant as turns
	npcAnswers []Answer // the answers of npcDue, in its order
	done       bool
	started    bool
	limit      uint64 // the last seq an event other than the end's may have (MaxEvents less the end's two)
	over       bool   // an event was refused for the budget: the session ends "event_limit"
	ending     bool   // end is emitting the session's last events
	endHash    string
	seen       uint64          // the last seq of the state the due members observe
	reward     policies.Credit // score changes since the last reward event
	failure    string          // the reason of the last turn.failed (not part of the state)
	recorded   Recorded        // the rewards the log recorded (not part of the state)

	// Reused buffers and caches of the hot path; none is part of the state.
	keyBuf    []byte            // random-draw keys (see key)
	queueTeam map[string]string // queue -> team of its tickets without one
	cols      []colleague       // by org.Member.Num
	due       []string          // dueNow's result
	answers   []Answer          // Step's answers in member order
	slots     payloadSlots
	acts      []org.Action  // NPC answers' actions of the instant (see npcDecide)
	cals      calendars     // schedules by member and team (shifts.go)
	decoded   payload.Reuse // the payloads apply decodes (replay), reused event after event
	scratch   struct {
		complete org.Action // the completion resolves checks (see resolves)
	}
	format int          // the session's log format (payload.LogFormat for a new one)
	draws  worlds.Draws // what every draw is made with: cfg.Seed, and cfg.DrawKey if set
	truth  worlds.Draws // the hidden rules': the root's seed (Config.RootSeed) and cfg.DrawKey
	// resolved is the ticket.resolved this Tick emitted last (format 5),
	// which its colleague's next step may be recorded in (see then).
	resolved resolvedNow
	memory   json.RawMessage // the agents' memory in the checkpoint it was restored from (Memory)
}

// resolvedNow is a ticket.resolved the engine emitted and has not encoded
// yet: its seq, its place in pending and its payload.
type resolvedNow struct {
	seq uint64
	at  int
	p   payload.TicketResolved
}

// resolve emits the ticket.resolved of task, whose last stint ends now. In
// format 5 its payload is encoded once its colleague has decided what next
// (then), or before anything else is emitted or the Tick ends
// (encodeResolved): the colleague's next step, when it comes first, is
// recorded in it without encoding it twice.
func (e *Engine) resolve(task *org.Task, cause uint64) {
	r := payload.TicketResolved{Task: task.ID, Work: task.Stint}
	if e.format < org.ThenFormat {
		emitVia(e, &e.slots.resolved, payload.EvTicketResolved, task.Assignee, cause, r)
		return
	}
	e.encodeResolved()
	e.slots.resolved = r
	seq := e.record(payload.EvTicketResolved, task.Assignee, cause, &e.slots.resolved, nil)
	e.slots.resolved = payload.TicketResolved{}
	e.resolved = resolvedNow{seq: seq, at: len(e.pending) - 1, p: r}
}

// encodeResolved encodes the ticket.resolved that resolve left unencoded,
// if any: no next step is recorded in it any more.
func (e *Engine) encodeResolved() {
	if r := &e.resolved; r.seq != 0 {
		e.slots.resolved = r.p
		e.pending[r.at].Payload = e.encode(&e.slots.resolved)
		e.slots.resolved = payload.TicketResolved{}
		*r = resolvedNow{}
	}
}

// New makes an engine for a world and seed. Call Start for a new session,
// or Apply the recorded events and then Resume.
func New(cfg Config) (*Engine, error) {
	if cfg.World == nil {
		return nil, errors.New("sim: no world")
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	if cfg.MaxEvents < MinMaxEvents {
		return nil, fmt.Errorf("sim: a budget of %d events is below the minimum of %d", cfg.MaxEvents, MinMaxEvents)
	}
	if n := len(cfg.DrawKey); n != 0 && n != payload.DrawKeyBytes {
		return nil, fmt.Errorf("sim: a draw key of %d bytes (payload.NewDrawKey makes %d)", n, payload.DrawKeyBytes)
	}
	if cfg.LogFormat == 0 {
		cfg.LogFormat = payload.LogFormat
	}
	if cfg.LogFormat < payload.OldestLogFormat || cfg.LogFormat > payload.LogFormat {
		return nil, fmt.Errorf("sim: log format %d is not one this build writes (%d to %d)", cfg.LogFormat, payload.OldestLogFormat, payload.LogFormat)
	}
	if cfg.DrawKey != nil && cfg.LogFormat < payload.DrawKeyFormat {
		return nil, fmt.Errorf("sim: log format %d cannot record a draw key (format %d and later do)", cfg.LogFormat, payload.DrawKeyFormat)
	}
	e := &Engine{
		cfg:     cfg,
		st:      org.New(cfg.World),
		startMs: cfg.World.Calendar.Start.UnixMilli(),
		limit:   uint64(cfg.MaxEvents - 2),
		cals:    newCalendars(cfg.World),
		format:  cfg.LogFormat,
		draws:   worlds.NewDraws(cfg.Seed, cfg.DrawKey),
	}
	e.truth = e.draws
	if cfg.RootSeed != nil && *cfg.RootSeed != cfg.Seed {
		e.truth = worlds.NewDraws(*cfg.RootSeed, cfg.DrawKey)
	}
	e.st.SetJudge(policies.Judge)
	if cfg.NewSequencer != nil {
		e.st.SetSequencer(cfg.NewSequencer())
	}
	e.cols = newColleagues(cfg.World, e.st)
	rules := cfg.Rules
	if rules == nil {
		rules = policies.Default()
	}
	e.book = rules.Compile()
	h := sha256.New()
	h.Write([]byte(cfg.World.Hash))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], cfg.Seed)
	h.Write(b[:])
	copy(e.idKey[:], h.Sum(nil))
	return e, nil
}

// SetMaxEvents sets the session's budget of events (Config.MaxEvents; 0
// means the default) for what the engine does from now on: an engine
// rebuilt from a log (Rebuild, or the driver's Load) gets the budget of
// whoever continues it. A session that already holds more ends at once.
func (e *Engine) SetMaxEvents(n int) error {
	if n == 0 {
		n = DefaultMaxEvents
	}
	if n < MinMaxEvents {
		return fmt.Errorf("sim: a budget of %d events is below the minimum of %d", n, MinMaxEvents)
	}
	e.cfg.MaxEvents, e.limit = n, uint64(n-2)
	return nil
}

// room reports whether n more events fit in the session's budget (besides
// the end's); once they do not, the session ends "event_limit" at the next
// settle. Units of work (a timer, a ticket, a member's turn) ask before
// they start, so that they are recorded whole.
func (e *Engine) room(n int) bool {
	if !e.over && e.st.LastSeq+uint64(n) > e.limit {
		e.over = true
	}
	return !e.over
}

// State is the engine's current state. Callers must not change it.
func (e *Engine) State() *org.State { return e.st }

// Draws are the draws the engine makes from now on (the seed it goes on
// with, and the session's draw key if it was started with one).
func (e *Engine) Draws() worlds.Draws { return e.draws }

// Truth are the draws the session's hidden truth comes from — its records
// and its colleagues' hidden rules, drawn with the seed it started with
// (and its draw key), also in a fork that goes on with another seed — for
// an agent told them (the oracle).
func (e *Engine) Truth() worlds.Draws { return e.truth }

// DrawKey is the session's draw key (Config.DrawKey; nil: none).
func (e *Engine) DrawKey() []byte { return slices.Clone(e.cfg.DrawKey) }

// Keyed reports whether the session's draws are keyed (Config.DrawKey).
func (e *Engine) Keyed() bool { return e.draws.Keyed() }

// Now is the current simulated time.
func (e *Engine) Now() clock.Time { return e.now }

// Done reports whether the session has ended.
func (e *Engine) Done() bool { return e.done }

// Start opens a new session: it emits session.started and asks every agent seat to decide.
func (e *Engine) Start() {
	e.mustKeepTimers("Start")
	if e.started || e.st.LastSeq != 0 {
		panic("sim: Start on a started engine")
	}
	e.started = true
	var first []payload.ArrivalNext
	for i := range e.cfg.World.Arrivals {
		a := &e.cfg.World.Arrivals[i]
		at, ok := e.arrivalAt(a, 0, a.Start)
		first = append(first, payload.NextArrival(a.ID, at, ok))
	}
	// The file's name, not the path it was read by: the same file run
	// from another folder makes the same log, and the operator's folders
	// are not in it (nor in the training data exported from it).
	e.emit(payload.EvSessionStarted, "", 0, payload.SessionStarted{Format: e.format,
		World: e.cfg.World.Name, WorldFile: fileName(e.cfg.World.File), WorldHash: e.cfg.World.Hash, Seed: e.cfg.Seed,
		Load: e.load(), Source: string(e.cfg.Source), Arrivals: first, Limits: e.cfg.Limits.Compact(),
		WorldLimits: recordWorldLimits(e.cfg.WorldLimits), DrawKey: e.cfg.DrawKey})
	e.settle()
}

// Apply applies one recorded event, exactly as the live run applied it. A
// session.ended whose state hash differs from the replayed state's returns
// an error wrapping ErrReplayMismatch.
func (e *Engine) Apply(ev events.Event) error {
	if len(e.pending) > 0 || len(e.turns) > 0 {
		return errors.New("sim: Apply during a live step")
	}
	if ev.Type == payload.EvSessionEnded {
		var p payload.SessionEnded
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return fmt.Errorf("sim: seq %d: %w", ev.Seq, err)
		}
		got := e.StateHash()
		if got != p.StateHash {
			return fmt.Errorf("%w: at seq %d recorded %s, replayed %s", ErrReplayMismatch, ev.Seq, p.StateHash, got)
		}
		e.endHash = got
	}
	e.started = true
	// The live engine had fired or dropped every timer due before this
	// event's time when it made the event (Tick pops them in order, and
	// no timer is set in the past); replay has nothing to fire them for.
	// Dropping them keeps the queue as the live run's was, instead of
	// holding every timer of the session.
	for {
		at, _, ok := e.timers.Peek()
		if !ok || at >= clock.Time(ev.Time) {
			break
		}
		e.timers.Pop()
	}
	return e.apply(ev)
}

// Resume continues a session whose recorded events were applied with Apply:
// it asks whoever is due now. If the log already ended, Ready reports Done.
func (e *Engine) Resume() {
	e.mustKeepTimers("Resume")
	e.memory = nil // what the agents remembered is a recall's, on an engine of its own
	if e.st.Ended {
		e.done = true
		return
	}
	e.settle()
}

// StateHash is the hex SHA-256 of the state.
func (e *Engine) StateHash() string {
	h := e.st.Hash()
	return hex.EncodeToString(h[:])
}

// EndStateHash is the state hash recorded in session.ended (the state after
// every event before it), or "" while the session has not ended.
func (e *Engine) EndStateHash() string { return e.endHash }

// LastFailure is the reason of the session's last turn.failed event, or ""
// if no turn failed: why the agents could not decide, for a report.
func (e *Engine) LastFailure() string { return e.failure }

// Recorded is what the reward events of a log said: their team rewards'
// sum and the rubrics that graded them, in the order they first appear.
// A log recorded under an older rubric replays and is re-graded by this
// one; Recorded keeps what it was given at the time.
type Recorded struct {
	Team    float64  `json:"team"`
	Rubrics []string `json:"rubrics,omitempty"`
}

// Recorded returns the rewards of the events applied (replay) or emitted.
func (e *Engine) Recorded() Recorded { return e.recorded }

// Ready returns the events emitted since the last Advance and the turns to
// ask. The Events slice is the engine's: it is valid until the Advance
// after it, and the engine reuses its array afterwards (copy the events to
// keep them).
func (e *Engine) Ready() Ready {
	rd := Ready{Events: e.pending, Done: e.done}
	e.handed = len(e.pending)
	if len(e.turns) > 0 {
		rd.Turns = make([]Turn, len(e.turns))
		for i, t := range e.turns {
			t.Observation = e.observe(t.Member)
			rd.Turns[i] = t
		}
	}
	return rd
}

// ReadyIDs is Ready without the turns' observations: each Turn names its
// member only. A caller that asks many members at once builds each
// observation with Observe as it sends it, so that thousands of them are
// not held together. Observe must be called before Step, from the
// goroutine that owns the engine. The Turns slice is the engine's, as the
// Events slice is: read it, do not change it; it is valid until Step.
func (e *Engine) ReadyIDs() Ready {
	rd := Ready{Events: e.pending, Done: e.done}
	e.handed = len(e.pending)
	if len(e.turns) > 0 {
		rd.Turns = e.turns[:len(e.turns):len(e.turns)] // no copy per round
	}
	return rd
}

// Observe is what member sees now: the observation Ready gives it.
func (e *Engine) Observe(member string) org.Observation { return e.observe(member) }

// Advance tells the engine that the events of the last Ready are durable and published.
func (e *Engine) Advance() {
	if e.handed == len(e.pending) {
		clear(e.pending) // drop the references to the payloads
		e.pending = e.pending[:0]
	} else {
		e.pending = e.pending[e.handed:]
	}
	e.handed = 0
}

func (e *Engine) observe(id string) org.Observation { return e.observeAt(id, 0, e.now) }

// Step applies the answers to the outstanding turns, in member-ID order, and
// moves on to whoever is due next at the same instant. Answers for members
// that were not asked are ignored; a member asked but not answered times out.
func (e *Engine) Step(answers []Answer) {
	if len(e.turns) == 0 && len(e.npcDue) == 0 {
		return
	}
	all := e.answers[:0]
	var byID map[string]Answer // for many answers; a few are searched
	if len(answers) > 16 {
		byID = make(map[string]Answer, len(answers))
		for _, a := range answers {
			byID[a.Member] = a
		}
	}
	for _, t := range e.turns {
		a, ok := Answer{}, false
		if byID != nil {
			a, ok = byID[t.Member]
		} else {
			// The last answer for a member counts, as in the map.
			for i := len(answers) - 1; i >= 0; i-- {
				if answers[i].Member == t.Member {
					a, ok = answers[i], true
					break
				}
			}
		}
		if !ok {
			a = Answer{Member: t.Member, TimedOut: true}
		}
		a.Member = t.Member
		all = append(all, a)
	}
	all = append(all, e.npcAnswers...)
	if !slices.IsSortedFunc(all, byMember) {
		slices.SortFunc(all, byMember)
	}
	e.turns, e.npcDue = e.turns[:0], e.npcDue[:0]
	clear(e.npcAnswers) // drop the references to the actions
	e.npcAnswers = e.npcAnswers[:0]
	for i := range all {
		// A turn records at most its actions, the turn and a wait; one
		// that does not fit is not taken (the session ends, see settle).
		if e.room(2 + len(all[i].Actions)) {
			e.takeTurn(all[i])
		}
		all[i] = Answer{} // drop the references to the actions
	}
	e.answers = all[:0]
	// Every NPC answer is taken: the arena starts again. It is not
	// cleared: what its old actions name (a few IDs) stays reachable
	// only until they are overwritten, and never more than its capacity.
	e.acts = e.acts[:0]
	e.settle()
}

func byMember(a, b Answer) int { return strings.Compare(a.Member, b.Member) }

// Tick advances simulated time to the next timer and fires every timer due
// then. It ends the session at the horizon, or when nothing is left to happen.
func (e *Engine) Tick() {
	if e.done || len(e.turns) > 0 {
		return
	}
	defer e.encodeResolved() // a next step is recorded in its resolve within this Tick only
	for {
		at, t, ok := e.timers.Peek()
		if !ok {
			e.end(EndQuiescent)
			return
		}
		if !e.timerValid(at, t) {
			e.timers.Pop()
			continue
		}
		if at > e.cfg.World.Horizon {
			e.now = e.cfg.World.Horizon
			e.end(EndHorizon)
			return
		}
		e.now = at
		break
	}
	for {
		at, t, ok := e.timers.Peek()
		if !ok || at != e.now || !e.room(1) {
			break
		}
		e.timers.Pop()
		if !e.timerValid(at, t) {
			continue
		}
		switch t.kind {
		case timerMember:
			e.candidates = append(e.candidates, t.id)
		case timerWork:
			task := e.st.Task(t.id)
			if e.resolves(task) {
				e.resolve(task, t.cause)
				continue
			}
			emitVia(e, &e.slots.finished, payload.EvWorkFinished, task.Assignee, t.cause, payload.WorkFinished{Task: task.ID, Work: task.Stint})
		case timerMessage:
			e.emit(payload.EvMessageDelivered, "", t.cause, payload.MessageDelivered{Message: t.id})
		default:
			e.fireTimer(t)
		}
	}
	e.settle()
}

func (e *Engine) timerValid(at clock.Time, t timer) bool {
	switch t.kind {
	case timerMember:
		m := e.st.Member(t.id)
		return m.Pending && e.wakeAt(m) == at
	case timerWork:
		task := e.st.Task(t.id)
		return task != nil && task.Status == org.StatusInProgress && task.WorkUntil == at
	case timerMessage:
		msg := e.st.Message(t.id)
		return msg != nil && !msg.Delivered
	}
	return e.worldTimerValid(at, t)
}

// settle finds who is due now: agents become outstanding turns; NPCs due
// alone decide at once. It ends the session when all work is done.
func (e *Engine) settle() {
	for !e.done {
		if !e.room(1) {
			e.end(EndEventLimit)
			return
		}
		if e.st.AllDone() {
			e.end(EndComplete)
			return
		}
		if e.st.AgentsFailed() {
			// Nothing the agents would be asked next can be answered
			// either: the session is a failure, not a score of 0.
			e.end(EndAgentsFailed)
			return
		}
		due := e.dueNow()
		if len(due) == 0 {
			return
		}
		if len(due) == 1 && e.st.Member(due[0]).NPC {
			// A colleague due alone (the common case of a serving
			// desk): what Step does with its one answer, without
			// gathering, sorting and clearing a list of answers.
			e.seen = e.st.LastSeq
			if a := e.npcDecide(due[0]); e.room(2 + len(a.Actions)) {
				e.takeTurn(a)
			}
			e.acts = e.acts[:0]
			continue
		}
		if !e.allNPC(due) {
			// Agents are about to be asked: the score changes since the
			// last reward are paid first, so each agent sees the reward of
			// what happened before it decides. NPCs need no reward, so a
			// stretch of NPC work is paid in one event.
			e.payReward()
		}
		e.seen = e.st.LastSeq
		for _, id := range due {
			if e.st.Member(id).NPC {
				e.npcDue = append(e.npcDue, id)
			} else {
				e.turns = append(e.turns, Turn{Member: id})
			}
		}
		e.npcAnswers = e.npcAnswers[:0] // every due colleague decides on the state of now
		for _, id := range e.npcDue {
			e.npcAnswers = append(e.npcAnswers, e.npcDecide(id))
		}
		if len(e.turns) > 0 {
			return
		}
		e.Step(nil)
		return
	}
}

// dueNow returns the candidate members that want a turn now, sorted, without repeats.
func (e *Engine) dueNow() []string {
	c := e.candidates
	e.candidates = c[:0] // reused: the members are copied to out first
	slices.Sort(c)
	out := e.due[:0]
	for i, id := range c {
		if i > 0 && c[i-1] == id {
			continue
		}
		if m := e.st.Member(id); m != nil && m.Pending && e.wakeAt(m) <= e.now {
			out = append(out, id)
		}
	}
	e.due = out
	return out
}

func (e *Engine) allNPC(ids []string) bool {
	for _, id := range ids {
		if !e.st.Member(id).NPC {
			return false
		}
	}
	return true
}

// Unpaid is the team score's change since the last reward event, which
// the next one pays: the team score less Unpaid is the sum of the rewards
// the log holds.
func (e *Engine) Unpaid() float64 { return e.reward.Team }

// payReward emits the score change since the last reward, if any.
func (e *Engine) payReward() {
	if e.reward.Zero() {
		return
	}
	r := payload.Reward{Team: e.reward.Team, Members: e.reward.Members, Rubric: policies.RubricVersion}
	e.emit(payload.EvReward, "", e.st.LastSeq, r)
}

func (e *Engine) end(reason string) {
	e.ending = true // the end's events are outside the budget's limit, within MaxEvents
	e.payReward()
	e.endHash = e.StateHash()
	e.emit(payload.EvSessionEnded, "", 0, payload.SessionEnded{Reason: reason, StateHash: e.endHash})
	e.done = true
}

// emit makes an event at the current time, applies it, and queues it for
// Ready. An event past the session's budget (see room) is not made: emit
// returns 0, and the session ends "event_limit" at the next settle.
func (e *Engine) emit(typ, actor string, cause uint64, typed any) uint64 {
	if !e.ending && typ != payload.EvSessionStarted && !e.room(1) {
		return 0
	}
	e.encodeResolved()
	return e.record(typ, actor, cause, typed, e.encode(typed))
}

// record makes, applies and queues the event of payload typed, encoded as p.
func (e *Engine) record(typ, actor string, cause uint64, typed any, p []byte) uint64 {
	seq := e.st.LastSeq + 1
	ev := events.Event{
		ID: events.NewID(e.idKey, e.startMs, int64(e.now), seq), Session: e.cfg.Session,
		Seq: seq, Time: int64(e.now), Type: typ, Actor: actor, Cause: cause, Payload: p,
	}
	if err := e.applyWith(ev, typed); err != nil {
		panic(fmt.Sprintf("sim: engine emitted an event that does not apply: %v", err))
	}
	e.pending = append(e.pending, ev)
	return seq
}

// payloadSlots hold the payloads of a ticket's life while they are
// emitted: passed by pointer to a slot, a payload is not boxed on the heap
// for every event.
type payloadSlots struct {
	created   payload.TaskCreated
	turn      payload.Turn
	claimed   payload.TaskClaimed
	started   payload.WorkStarted
	finished  payload.WorkFinished
	completed payload.TaskCompleted
	waiting   payload.MemberWaiting
	served    payload.TicketServed
	resolved  payload.TicketResolved
}

// emitVia is emit of p, passed through slot (see payloadSlots). Emitting
// applies the event and does not emit again, so a slot is never in use twice.
func emitVia[T any](e *Engine, slot *T, typ, actor string, cause uint64, p T) uint64 {
	*slot = p
	seq := e.emit(typ, actor, cause, slot)
	var zero T
	*slot = zero // keep no references
	return seq
}

// encode returns typed's JSON in a slice of the engine's payload arena:
// events hold slices of large shared blocks instead of one allocation each.
func (e *Engine) encode(typed any) []byte {
	if cap(e.arena)-len(e.arena) < arenaBlock/16 {
		e.arena = make([]byte, 0, arenaBlock)
	}
	start := len(e.arena)
	b, err := payload.Append(e.arena, typed)
	if err != nil {
		panic("sim: payload does not encode: " + err.Error())
	}
	if cap(b) != cap(e.arena) {
		// The block was full and append moved it: give the event its own
		// copy and start a fresh block, so earlier events keep theirs.
		p := slices.Clone(b[start:])
		e.arena = make([]byte, 0, arenaBlock)
		return p
	}
	e.arena = b
	return b[start:len(b):len(b)]
}

// fileName is the last element of a world file's path; "" for a world
// read from no file.
func fileName(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Base(path)
}

// arenaBlock is the size of the blocks event payloads are encoded into.
const arenaBlock = 64 << 10

// apply is the single transition function, live and in replay: state, then timers.
// Nothing keeps the decoded payload past applyWith (every reader copies
// what it needs with payload.As), so it is decoded into e.decoded.
func (e *Engine) apply(ev events.Event) error {
	return e.applyWith(ev, payload.DecodeReuse(&ev, &e.decoded))
}

// applyWith is apply with the payload value the engine encoded the event
// from (nil in replay), to skip decoding it again.
func (e *Engine) applyWith(ev events.Event, typed any) error {
	if t := clock.Time(ev.Time); t > e.now {
		e.now = t
		e.candidates = e.candidates[:0]
	}
	if ev.Type == payload.EvReward {
		// A recorded reward must be what the rubric makes of the events before it.
		p, err := payload.As[payload.Reward](&ev, typed)
		if err != nil {
			return fmt.Errorf("sim: reward at seq %d: %w", ev.Seq, err)
		}
		// A log graded under another rubric is re-graded, not refused:
		// only this rubric's rewards must match (corpsim score).
		if p.Rubric == policies.RubricVersion {
			if math.Abs(p.Team-e.reward.Team) > 1e-6 {
				return fmt.Errorf("%w: reward at seq %d records %g, the rubric gives %g", ErrReplayMismatch, ev.Seq, p.Team, e.reward.Team)
			}
			if id, rec, got, ok := splitMismatch(p.Members, e.reward.Members); ok {
				return fmt.Errorf("%w: reward at seq %d records %g for %s, the rubric gives %g", ErrReplayMismatch, ev.Seq, rec, id, got)
			}
		}
		e.recorded.Team += p.Team
		if !slices.Contains(e.recorded.Rubrics, p.Rubric) {
			e.recorded.Rubrics = append(e.recorded.Rubrics, p.Rubric)
		}
	}
	if err := e.st.ApplyWith(ev, typed); err != nil {
		return err
	}
	if ev.Type == payload.EvReward {
		e.reward = policies.Credit{}
	} else {
		policies.AddDelta(&e.reward, e.st, ev, typed)
	}
	e.follow(&ev, typed)
	return nil
}

// splitMismatch finds the first member, in ID order, whose share of a
// reward the log records (rec) other than the rubric gives it (got); a
// member missing from one side has 0 there.
func splitMismatch(rec, got map[string]float64) (id string, r, g float64, ok bool) {
	ids := make([]string, 0, len(rec)+len(got))
	for id := range rec { // order: sorted below
		ids = append(ids, id)
	}
	for id := range got { // order: sorted below
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if math.Abs(rec[id]-got[id]) > 1e-6 {
			return id, rec[id], got[id], true
		}
	}
	return "", 0, 0, false
}

// pushed is the time a member's wake timer was last pushed for, if set.
type pushed struct {
	at  clock.Time
	set bool
}

// pushedFor returns m's entry of e.pushed.
func (e *Engine) pushedFor(m *org.Member) *pushed {
	if n := m.Num(); n >= len(e.pushed) {
		e.pushed = append(e.pushed, make([]pushed, n+1-len(e.pushed))...)
	}
	return &e.pushed[m.Num()]
}

// setTimer sets a timer due at at, unless the engine keeps none
// (Config.ApplyOnly).
func (e *Engine) setTimer(at clock.Time, t timer) {
	if !e.cfg.ApplyOnly {
		e.timers.Push(at, t)
	}
}

// mustKeepTimers panics when the engine keeps no timers: what op would do
// next, or record, depends on them.
func (e *Engine) mustKeepTimers(op string) {
	if e.cfg.ApplyOnly {
		panic("sim: " + op + " of an engine that only re-applies events (Config.ApplyOnly)")
	}
}

// follow does what follows an applied event outside the state: the timers
// it sets, the shifts it watches and the members it woke.
func (e *Engine) follow(evp *events.Event, typed any) {
	ev := *evp
	switch ev.Type {
	case payload.EvWorkStarted:
		p, _ := payload.As[payload.WorkStarted](&ev, typed) // Apply decoded it already
		e.setTimer(p.Until, timer{kind: timerWork, id: p.Task, cause: ev.Seq})
	case payload.EvTicketServed:
		p, _ := payload.As[payload.TicketServed](&ev, typed)
		e.setTimer(p.Until, timer{kind: timerWork, id: p.Task, cause: ev.Seq})
	case payload.EvTicketResolved:
		// The ticket its colleague serves next, if the event says (format 5).
		if p, _ := payload.As[payload.TicketResolved](&ev, typed); p.Next != "" {
			e.setTimer(p.NextUntil, timer{kind: timerWork, id: p.Next, cause: ev.Seq})
		}
	case payload.EvSessionStarted:
		// Decoded once here, for the format (CheckFormat passed it in
		// Apply) and for the first arrivals.
		p, _ := payload.As[payload.SessionStarted](&ev, typed)
		e.format = max(p.Format, payload.OldestLogFormat)
		e.scheduleFor(ev, &p)
	case payload.EvMessageSent:
		p, _ := payload.As[payload.MessageSent](&ev, typed)
		e.setTimer(p.DeliverAt, timer{kind: timerMessage, id: p.Message, cause: ev.Seq})
	default:
		e.scheduleFor(ev, typed)
	case payload.EvSessionEnded:
		e.done = true
	case payload.EvTurnFailed:
		if p, err := payload.As[payload.TurnFailed](&ev, typed); err == nil {
			e.failure = p.Reason
		}
	}
	if len(e.cals.handover) > 0 {
		e.watchShifts(&ev, typed)
	}
	woken := e.st.TakeWoken()
	if e.cfg.ApplyOnly {
		return // nobody is asked: who is due, and when, is for timers
	}
	for _, m := range woken {
		if !m.Pending {
			continue
		}
		if at := e.wakeAt(m); at <= e.now {
			e.candidates = append(e.candidates, m.ID)
		} else if p := e.pushedFor(m); p.at != at { // an entry never set reads 0, as the map it replaced did
			*p = pushed{at: at, set: true}
			e.setTimer(at, timer{kind: timerMember, id: m.ID})
		}
	}
}
