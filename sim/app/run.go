package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/workers"
	"github.com/corpsim/corpsim/worlds"
)

// RunOptions describe one session run with embedded defaults.
type RunOptions struct {
	World string // shipped name or file path
	Seed  uint64
	// Secret, when set, keys the session's draws (payload.NewDrawKey):
	// its hidden rules and facts, its arrivals and efforts can no longer
	// be worked out from its seed by whoever lacks the secret. The log
	// records the key, not the secret.
	Secret    []byte
	Load      float64 // scales arrival rates; 0 means 1
	Agents    string  // "greedy", or "greedy,alice=idle"
	Data      string  // data folder for the Pebble log
	Ephemeral bool    // in-memory log
	// KeepEvents is how many of its latest events the in-memory log of an
	// Ephemeral run keeps (memlog.NewWindow); 0 keeps every one.
	KeepEvents  int
	Log         events.Log
	TurnTimeout time.Duration
	Logger      hclog.Logger
	Session     string // "" makes a new ULID
	Progress    func(seq uint64, simTime int64)
	Bus         *natsserver.Server      // nil starts an embedded server for this run (the event feed is on it)
	Listen      string                  // with no Bus: let network clients reach the embedded server here
	Seats       map[string]agents.Agent // agents that replace the named ones for these members
	LLM         agents.Agent            // plays the seats --agents gives to "llm"
	// SeatsOverBus asks the seats this process plays over the bus, as
	// remote ones are (agents/natshost, JSON both ways), instead of giving
	// their agents the observations in process. The log is the same.
	SeatsOverBus bool
	// CheckpointEvery is the checkpoint interval in events (0: the driver's default; negative: none).
	CheckpointEvery int
	// Limits bound observations and messages of a new session (zero fields: the defaults).
	Limits org.Limits
	// MaxBatch bounds the events persisted in one append (0: the driver's
	// default; 1: every step on its own, the turns of built-in agents
	// played in process included).
	MaxBatch int
	// MaxEvents is the session's budget of events (0: sim.DefaultMaxEvents);
	// once it is spent the session ends "event_limit".
	MaxEvents int
	// WorldLimits bound the world file and what a session of it may ask
	// at its load (zero fields: the defaults): checked before any work.
	WorldLimits worlds.Limits
	// quiet: the world's warnings were logged by the caller (Eval, Sweep).
	quiet bool
}

// RunResult is what a run produced.
type RunResult struct {
	Session string `json:"session"`
	World   string `json:"world"`
	Seed    uint64 `json:"seed"`
	// Keyed says that the session's draws were keyed with an operator's
	// secret (RunOptions.Secret): its world is not the one its seed alone
	// draws.
	Keyed     bool               `json:"keyed,omitempty"`
	Events    uint64             `json:"events"`
	StateHash string             `json:"state_hash"`
	Ended     string             `json:"ended"`
	SimTime   string             `json:"sim_end"`
	Agents    map[string]string  `json:"agents"`
	Parent    string             `json:"parent,omitempty"`
	ForkSeq   uint64             `json:"fork_seq,omitempty"`
	Score     policies.Scorecard `json:"score"`
	// Failure is why the agents' last failed turn failed (turn.failed), if
	// any turn failed.
	Failure string `json:"failure,omitempty"`
	// Recorded is the reward the log recorded while it ran, and under
	// which rubric (corpsim score: beside the scorecard re-graded now).
	Recorded *sim.Recorded `json:"recorded,omitempty"`
	// Recalled is what the agents that remember were shown of the
	// session's past before a resume or a fork went on (Recall); nil when
	// none was.
	Recalled *Recalled          `json:"recalled,omitempty"`
	Wall     time.Duration      `json:"-"`
	Meta     events.SessionMeta `json:"-"`
	Stats
}

// Stats are a run's wall-clock figures, for benchmarks (tests/bench.sh);
// they vary between runs of the same seed, unlike everything else in a
// RunResult.
type Stats struct {
	WallSeconds      float64 `json:"wall_seconds,omitempty"`       // the driver's run, without loading the world
	EventsPerSecond  float64 `json:"events_per_second,omitempty"`  // events this run appended / wall
	TicketsPerSecond float64 `json:"tickets_per_second,omitempty"` // resolved tickets / wall
	PeakRSSBytes     int64   `json:"peak_rss_bytes,omitempty"`     // the process's peak resident set so far (0 where unknown)
}

// statsOf fills the wall-clock figures of a run that appended events after
// seq from and took wall.
func statsOf(res *RunResult, from uint64, wall time.Duration) {
	res.Wall = wall
	s := wall.Seconds()
	if s <= 0 {
		return
	}
	res.WallSeconds = s
	res.EventsPerSecond = float64(res.Events-min(from, res.Events)) / s
	res.TicketsPerSecond = float64(res.Score.TicketsResolved) / s
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		res.PeakRSSBytes = int64(ru.Maxrss) * 1024 // kilobytes on Linux
		if runtime.GOOS == "darwin" {
			res.PeakRSSBytes = int64(ru.Maxrss) // bytes there
		}
	}
}

// LoadWorld loads a shipped world by name or a world file by path, with
// its source bytes, within the default limits.
func LoadWorld(name string) (*worlds.World, []byte, error) {
	return LoadWorldLimited(name, worlds.Limits{})
}

// LoadWorldLimited is LoadWorld within lim (zero fields: the defaults): a
// world file over the size limit is refused from its size, without being
// read whole, and the rest before the YAML parser runs.
func LoadWorldLimited(name string, lim worlds.Limits) (*worlds.World, []byte, error) {
	if err := lim.Validate(); err != nil {
		return nil, nil, usage(err)
	}
	// A large file's long lists are decoded on every processor.
	opts := worlds.Options{Limits: lim, Parallel: workers.Parallel}
	if src, err := worlds.Source(name); err == nil {
		w, err := worlds.LoadWith(name+".yaml", src, opts)
		return w, src, err
	}
	if !strings.ContainsAny(name, "/.") {
		return nil, nil, Usagef("no shipped world %q (shipped: %s) and no such file", name, strings.Join(worlds.Names(), ", "))
	}
	src, err := ReadWorldFile(name, lim)
	if err != nil {
		return nil, nil, err
	}
	w, err := worlds.LoadWith(name, src, opts)
	return w, src, err
}

// ReadWorldFile reads the world file at path, refusing one over lim's file
// size (FileBytes) without reading it into memory: a regular file by its
// size, anything else after limit+1 bytes.
func ReadWorldFile(path string, lim worlds.Limits) ([]byte, error) {
	limit := lim.WithDefaults().FileBytes
	tooLarge := func(size string) error {
		return worlds.ErrorList{{File: path, Msg: fmt.Sprintf("%v: the file is %s bytes, above the limit of %d (%s)",
			worlds.ErrLimit, size, limit, worlds.FlagFileBytes)}}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("world: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > int64(limit) {
		return nil, tooLarge(strconv.FormatInt(fi.Size(), 10))
	}
	src, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("world: %w", err)
	}
	if len(src) > limit {
		return nil, tooLarge("more than " + strconv.Itoa(limit))
	}
	return src, nil
}

// admit checks that a session of w may run at load within lim: the load
// (a UsageError if it is not a load at all or above --max-load) and the
// tickets its arrivals would bring.
func admit(w *worlds.World, load float64, lim worlds.Limits) error {
	if err := worlds.CheckLoad(load, lim.WithDefaults().MaxLoad); err != nil {
		return usage(err)
	}
	return w.Admit(load, lim)
}

// loadOr1 is a session's load: 0 means 1.
func loadOr1(load float64) float64 {
	if load == 0 {
		return 1
	}
	return load
}

// logWarnings logs a world's warnings (mistakes that do not stop a run).
func logWarnings(logger hclog.Logger, w *worlds.World) {
	for _, e := range w.Warnings {
		orNull(logger).Warn("world: " + e.Error())
	}
}

// ParseAgents assigns an agent to every agent seat of w from a spec such as
// "greedy" or "greedy,alice=idle": a bare name is the default for all seats.
// "llm" names the llm agent, which haveLLM says is configured.
func ParseAgents(spec string, w *worlds.World, haveLLM bool) (map[string]string, error) {
	seats, err := AssignSeats(spec, w, false, haveLLM)
	if errors.Is(err, ErrNoLLM) {
		return nil, Usagef("--agents names llm, but no llm agent is configured (--llm-model)")
	}
	if err != nil {
		return nil, Usagef("--%v", err)
	}
	return seats, nil
}

// Run runs one new session end to end: the world, the log, the embedded
// NATS server (the event feed), the seats (in process, or over the bus with
// SeatsOverBus), the driver; it returns the scorecard.
func Run(ctx context.Context, o RunOptions) (*RunResult, error) {
	// The load first: a NaN or a negative load is refused before the
	// world is read, and before any session is created.
	if err := o.WorldLimits.Validate(); err != nil {
		return nil, usage(err)
	}
	if err := worlds.CheckNewLoad(loadOr1(o.Load), o.WorldLimits.WithDefaults().MaxLoad); err != nil {
		return nil, usage(err)
	}
	w, src, err := LoadWorldLimited(o.World, o.WorldLimits)
	if err != nil {
		return nil, err
	}
	if err := admit(w, loadOr1(o.Load), o.WorldLimits); err != nil {
		return nil, err
	}
	if !o.quiet {
		logWarnings(o.Logger, w)
	}
	seats, err := AssignSeats(o.Agents, w, false, o.LLM != nil)
	if errors.Is(err, ErrNoLLM) {
		return nil, Usagef("--agents names llm, but no llm agent is configured (--llm-model)")
	}
	if err != nil {
		return nil, Usagef("--%v", err)
	}
	log := o.Log
	if log == nil {
		if o.Ephemeral {
			log = newMemLog(o.KeepEvents)
		} else if log, err = OpenLog(ctx, o.Data, false, o.Logger); err != nil {
			return nil, err
		}
		defer log.Close()
		if o.Ephemeral && o.CheckpointEvery == 0 {
			// The log dies with this process: nothing will resume or fork
			// from a checkpoint, so none is taken unless asked for.
			o.CheckpointEvery = -1
		}
	}
	session := o.Session
	if session == "" {
		session = ulid.Make().String()
	}
	if err := o.Limits.Validate(); err != nil {
		return nil, Usagef("%v", err)
	}
	if err := checkPlay(o); err != nil {
		return nil, err
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: o.Seed, Session: session, Load: o.Load, Limits: o.Limits, WorldLimits: o.WorldLimits,
		DrawKey: payload.NewDrawKey(o.Secret, o.Seed), NewSequencer: driver.NewSequencer})
	if err != nil {
		return nil, err
	}
	meta := events.SessionMeta{ID: session, World: w.Name, WorldHash: w.Hash, Seed: o.Seed, Agents: seats,
		Created: time.Now().UTC().Format(time.RFC3339), MaxEvents: RecordedBudget(o.MaxEvents)}
	return play(ctx, o, log, meta, e, playNew)
}

// play runs a session's engine with its seats — the agents this process
// plays, in process or over the bus — and the event feed on the embedded
// NATS server: a new session from its start (fresh), or an existing one
// from where e stands.
// How play drives its session.
type playMode int

const (
	playNew      playMode = iota // a new session: the driver's Run
	playContinue                 // a session in the log, resumed: Continue
	playFork                     // a fork not in the log yet (LoadFork): Fork
)

// ErrPanicked is the error of a session that panicked: driver.ErrPanicked.
var ErrPanicked = driver.ErrPanicked

func play(ctx context.Context, o RunOptions, log events.Log, meta events.SessionMeta, e *sim.Engine, mode playMode) (*RunResult, error) {
	logger := orNull(o.Logger)
	truth := e.Truth()
	seats, err := BuildSeats(meta, e.State().World, SeatOptions{LLM: o.LLM, Custom: o.Seats, Lenient: true, Truth: &truth})
	whose := "session " + meta.ID
	if mode == playFork { // not in the log: nothing was stored
		whose = "a fork of session " + meta.Parent
	}
	var noLLM *NoLLMError
	if errors.As(err, &noLLM) {
		return nil, Usagef("%s plays %s with the llm agent: give --llm-model (and --llm-base-url) to play them, or --agents to play them otherwise",
			whose, strings.Join(noLLM.Seats, ", "))
	}
	if err != nil {
		return nil, err
	}
	if len(seats.Remote) > 0 && o.Bus == nil {
		// Nobody can reach a remote seat here: only corpsim serve gives
		// one its credentials. Each turn would wait out its timeout.
		return nil, Usagef("%s plays %s remotely, which only corpsim serve does: give --agents to play them here (e.g. --agents %s=greedy), or leave it to a serve of its data folder",
			whose, strings.Join(seats.Remote, ", "), seats.Remote[0])
	}
	meta.Agents = seats.Assigned
	defer seats.Forget(meta.ID)
	var recalled *Recalled
	if mode != playNew {
		// Agents made anew that remember are shown the turns before this
		// one; a fork not in the log yet has its parent's up to the fork.
		session := meta.ID
		if mode == playFork {
			session = meta.Parent
		}
		recalled = RecallOrWarn(ctx, log, session, meta.ID, e.State().LastSeq, seats, logger)
	}
	srv := o.Bus
	if srv == nil {
		var auth *natsserver.Auth
		if o.Listen != "" {
			// A listening bus is reachable by anyone on the host: only the
			// holder of the operator token (DATA/operator.token) may use it.
			token, err := OperatorToken(o.Data, o.Ephemeral)
			if err != nil {
				return nil, err
			}
			auth = natsserver.NewAuth(token)
		}
		// Its port opens once the list responder below is subscribed: a
		// sessions --nats that reached it before was told "no responders".
		if srv, err = natsserver.Start(natsserver.Options{Logger: logger, Listen: o.Listen, Auth: auth, OpenLater: true}); err != nil {
			return nil, err
		}
		defer srv.Shutdown()
	}
	conn, err := srv.Connect("driver")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if o.Listen != "" {
		// corpsim sessions --nats, as a serve answers it: this one
		// session, as its log holds it now (its ID is what log --follow
		// needs, and run prints it only at the end).
		id, known := meta.ID, meta // meta is the driver's from here on
		listed, err := conn.Subscribe(wire.ListSubject, func(msg *nats.Msg) {
			m, err := log.Session(context.Background(), id)
			if err != nil { // not in the log before its first batch: running all the same
				m = known
				m.Status = events.StatusRunning
			}
			if last, err := log.LastSeq(context.Background(), id); err == nil {
				m.LastSeq = last
			}
			b, _ := json.Marshal([]events.SessionMeta{m})
			_ = msg.Respond(b)
		})
		if err != nil {
			return nil, err
		}
		defer func() { _ = listed.Unsubscribe() }()
		// The server has the subscription before the port opens.
		if err := conn.Flush(); err != nil {
			return nil, err
		}
	}
	if o.Bus == nil && o.Listen != "" {
		if err := srv.Open(); err != nil {
			return nil, err
		}
		if o.Data != "" && !o.Ephemeral {
			if err := WriteBusURL(o.Data, srv.ClientURL()); err != nil {
				return nil, err
			}
			defer RemoveBusURL(o.Data)
		}
	}
	ho := HostOptions{Session: meta.ID, Conn: conn, OverBus: o.SeatsOverBus, Logger: logger, Timeout: o.TurnTimeout}
	if o.SeatsOverBus {
		if ho.HostConn, err = srv.Connect("agents"); err != nil {
			return nil, err
		}
		defer ho.HostConn.Close()
	}
	asker, stop, err := seats.Host(ho)
	if err != nil {
		return nil, err
	}
	defer stop()

	d := driver.New(driver.Config{Log: log, Conn: conn, Seats: asker, Logger: logger, TurnTimeout: o.TurnTimeout,
		Progress: o.Progress, CheckpointEvery: o.CheckpointEvery, MaxBatch: o.MaxBatch, Interest: srv.Interest, MaxEvents: o.MaxEvents,
		Memory: seats.Memory, Remembers: seats.Remembers})
	from := e.State().LastSeq
	start := time.Now()
	meta, err = driver.Guard(logger, log, meta, func() (events.SessionMeta, error) {
		switch mode {
		case playNew:
			return d.Run(ctx, meta, e)
		case playFork:
			return d.Fork(ctx, meta, e)
		}
		return d.Continue(ctx, meta, e)
	})
	if err != nil {
		if meta.Status == events.StatusInterrupted && !o.Ephemeral {
			return nil, fmt.Errorf("session %s interrupted at seq %d, its last durable event (corpsim resume %s continues it): %w", meta.ID, meta.LastSeq, meta.ID, err)
		}
		return nil, fmt.Errorf("session %s: %w", meta.ID, err)
	}
	res := ResultOf(meta, e)
	res.Recalled = recalled
	statsOf(res, from, time.Since(start))
	return res, nil
}

// RecordedBudget is the budget of events a session's metadata records
// (events.SessionMeta.MaxEvents): 0 for the default (sim.DefaultMaxEvents).
func RecordedBudget(n int) int {
	if n == sim.DefaultMaxEvents {
		return 0
	}
	return n
}

// CheckMaxEvents refuses a budget of events (--max-events) the engine
// would not take: negative, or 1 to sim.MinMaxEvents-1 (0 is the default).
func CheckMaxEvents(n int) error {
	if n < 0 || 0 < n && n < sim.MinMaxEvents {
		return Usagef("--max-events must be at least %d (or 0 for the default, %d), got %d", sim.MinMaxEvents, sim.DefaultMaxEvents, n)
	}
	return nil
}

// checkPlay refuses the options of a session to play that cannot mean
// what they say: --max-events (CheckMaxEvents), a negative --keep-events
// or --turn-timeout (a negative budget timed every turn out at once).
func checkPlay(o RunOptions) error {
	if err := CheckMaxEvents(o.MaxEvents); err != nil {
		return err
	}
	if o.KeepEvents < 0 {
		return Usagef("--keep-events %d: at least 0 (0 keeps every event)", o.KeepEvents)
	}
	if o.TurnTimeout < 0 {
		return Usagef("--turn-timeout %s: at least 0 (0: 30s)", o.TurnTimeout)
	}
	return nil
}

// ErrAgentsFailed is RunResult.Err's error for a session that ended
// because its agents failed every turn they were asked
// (sim.EndAgentsFailed): its score is no result.
var ErrAgentsFailed = errors.New("the agents failed every turn they were asked")

// Err is nil for a session that gave a result, and an error wrapping
// ErrAgentsFailed, with the last failure's reason, for one whose agents
// failed every turn (its status is failed).
func (r *RunResult) Err() error {
	if r.Ended != sim.EndAgentsFailed {
		return nil
	}
	return fmt.Errorf("session %s failed: %w (%d turn.failed events; the last: %s)", r.Session, ErrAgentsFailed, r.Score.TurnErrors, r.Failure)
}

// ResultOf is the result of a session whose engine stands at its end (or
// wherever it stopped): the metadata, the end and the scorecard.
func ResultOf(meta events.SessionMeta, e *sim.Engine) *RunResult {
	st := e.State()
	w := st.World
	res := &RunResult{Session: meta.ID, World: w.Name, Seed: meta.Seed, Keyed: e.Keyed(), Events: st.LastSeq,
		Ended: st.EndReason, SimTime: w.Calendar.Wall(st.Now).Format(time.RFC3339), Agents: meta.Agents,
		Parent: meta.Parent, ForkSeq: meta.ForkSeq, Score: policies.Score(st), Meta: meta, Failure: e.LastFailure()}
	if st.Ended {
		res.StateHash = e.EndStateHash() // computed once, when the session ended
	} else {
		res.StateHash, res.Ended = e.StateHash(), string(meta.Status)
	}
	return res
}
