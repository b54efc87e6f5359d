package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// Fault kinds a soak injects.
const (
	FaultKilled       = "killed"        // a seat's connection closed for good: its turns time out
	FaultGarbage      = "garbage"       // replies that are not JSON, name the wrong turn, carry unknown fields or trailing data
	FaultFlood        = "flood"         // too many actions, oversized replies, each reply sent many times
	FaultDisconnect   = "disconnect"    // a seat drops its connection and comes back on a new one
	FaultSlowConsumer = "slow_consumer" // a watcher of the event feed that reads too slowly
)

// FaultKinds lists every fault kind, in report order.
var FaultKinds = []string{FaultKilled, FaultGarbage, FaultFlood, FaultDisconnect, FaultSlowConsumer}

// seatFaults are the faults played by a seat (the slow consumer watches a session instead).
var seatFaults = []string{FaultKilled, FaultGarbage, FaultFlood, FaultDisconnect}

// SoakOptions configure corpsim soak. The zero value of each field but
// Duration and Sessions means its default.
type SoakOptions struct {
	Duration    time.Duration // how long to keep starting sessions
	Sessions    int           // sessions running at once
	Seed        uint64        // the sessions' seeds and the faults are drawn from it
	World       string        // shipped world name or file; "" means startup
	Data        string        // data folder of the log; "" means a temporary one, removed afterwards
	TurnTimeout time.Duration // a seat's budget per turn; 0 means 1s
	Grace       time.Duration // how long sessions still running at the end may take to finish; 0 means 30s
	Logger      hclog.Logger  // the service's logger; nil: silent
}

// SoakReport is what a soak did and found. Lost must be 0.
type SoakReport struct {
	World       string  `json:"world"`
	Seed        uint64  `json:"seed"`
	Duration    string  `json:"duration"`
	Sessions    int     `json:"sessions_at_once"`
	WallSeconds float64 `json:"wall_seconds"`

	Started     int `json:"sessions_started"`
	Finished    int `json:"sessions_finished"`
	Interrupted int `json:"sessions_interrupted"` // still running when the grace period ended
	Failed      int `json:"sessions_failed"`
	NotStarted  int `json:"sessions_not_started,omitempty"` // stopped while waiting for their seats

	EventsAppended uint64   `json:"events_appended"` // every soak session's events, counted from the log
	Gaps           uint64   `json:"gaps"`            // sequence numbers missing from a session's log
	Unverified     int      `json:"unverified"`      // sessions whose replay does not verify
	Lost           uint64   `json:"events_lost"`     // Gaps + Unverified
	Problems       []string `json:"problems,omitempty"`

	Faults   map[string]int `json:"faults"`           // injected, by kind
	Rejected uint64         `json:"rejected_actions"` // action.rejected events in the soak's sessions
	Timeouts uint64         `json:"turn_timeouts"`    // turn.timeout events
	// The slow watchers' side: how often their client told them they were
	// too slow, the feed messages it dropped meanwhile, and the events they
	// read again from the history responder.
	SlowNotices int    `json:"slow_consumer_notices"`
	FeedDropped int64  `json:"feed_messages_dropped"`
	CaughtUp    uint64 `json:"feed_events_caught_up"`
	Reconnects  int    `json:"reconnects"` // disconnected seats that came back

	HeapStart uint64 `json:"heap_start_bytes"` // Go heap in use after a GC, before the first session
	HeapEnd   uint64 `json:"heap_end_bytes"`   // and after the last one stopped
	RSSStart  uint64 `json:"rss_start_bytes"`  // resident set (0 where unknown)
	RSSEnd    uint64 `json:"rss_end_bytes"`
}

// connectTimeout bounds a soak connection's dial and handshake: generous,
// as a loaded machine is what a soak makes.
const connectTimeout = 10 * time.Second

// soaker is one soak's shared state.
type soaker struct {
	o    SoakOptions
	url  string
	op   string // operator token
	svc  *Service
	oper *client.Operator

	faults     sync.Map // kind -> *atomic.Int64
	notices    atomic.Int64
	dropped    atomic.Int64
	caughtUp   atomic.Uint64
	reconnects atomic.Int64

	mu       sync.Mutex
	sessions []string
	failed   int
}

func (s *soaker) count(kind string) {
	v, _ := s.faults.LoadOrStore(kind, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// Soak runs a soak and reports what it found. It returns an error only when
// it could not run; lost events are in the report.
func Soak(ctx context.Context, o SoakOptions) (*SoakReport, error) {
	if o.World == "" {
		o.World = "startup"
	}
	if o.TurnTimeout == 0 {
		o.TurnTimeout = time.Second
	}
	if o.Grace == 0 {
		o.Grace = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	src, name, err := worldSource(o.World)
	if err != nil {
		return nil, err
	}
	// Every session is created from this text: a world that does not load
	// would have every create refused at once, and the soak would spin
	// through refusals until its time is up, to find nothing lost.
	w, err := worlds.Load(name, src)
	if err == nil {
		err = w.Admit(1, worlds.Limits{})
	}
	if err != nil {
		return nil, err
	}
	data := o.Data
	if data == "" {
		if data, err = os.MkdirTemp("", "corpsim-soak-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(data)
	}
	log, err := app.OpenLog(ctx, data, false, o.Logger)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	opToken := natsserver.NewToken()
	auth := natsserver.NewAuth(opToken)
	bus, err := natsserver.Start(natsserver.Options{Listen: addr, Auth: auth})
	if err != nil {
		return nil, err
	}
	defer bus.Shutdown()
	svc, err := New(Config{Log: log, Bus: bus, Auth: auth, Logger: o.Logger, TurnTimeout: o.TurnTimeout,
		JoinTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	closeSvc := sync.OnceFunc(svc.Close)
	defer closeSvc()
	url := bus.ClientURL()
	oper, err := client.Dial(url, opToken, nats.Timeout(connectTimeout))
	if err != nil {
		return nil, err
	}
	defer oper.Close()
	s := &soaker{o: o, url: url, op: opToken, svc: svc, oper: oper}
	rep := &SoakReport{World: name, Seed: o.Seed, Duration: o.Duration.String(), Sessions: o.Sessions, Faults: map[string]int{}}
	rep.HeapStart, rep.RSSStart = memNow()
	start := time.Now()

	// Keep o.Sessions sessions running until the duration is spent.
	soakCtx, stop := context.WithTimeout(ctx, o.Duration)
	defer stop()
	slots := make(chan struct{}, o.Sessions)
	var wg sync.WaitGroup
launch:
	for i := 0; ; i++ {
		select {
		case slots <- struct{}{}:
		case <-soakCtx.Done():
			break launch
		}
		if soakCtx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-slots }()
			s.session(soakCtx, i, src)
		}(i)
	}
	// Sessions still running get the grace period to finish, then are interrupted.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(o.Grace):
		closeSvc()
		<-done
	case <-ctx.Done():
		closeSvc()
		<-done
	}
	closeSvc()
	rep.WallSeconds = time.Since(start).Seconds()
	rep.HeapEnd, rep.RSSEnd = memNow()

	s.faults.Range(func(k, v any) bool {
		rep.Faults[k.(string)] = int(v.(*atomic.Int64).Load())
		return true
	})
	rep.SlowNotices, rep.FeedDropped, rep.CaughtUp = int(s.notices.Load()), s.dropped.Load(), s.caughtUp.Load()
	rep.Reconnects = int(s.reconnects.Load())
	s.mu.Lock()
	ids := slices.Clone(s.sessions)
	s.mu.Unlock()
	checkSoak(context.WithoutCancel(ctx), log, ids, rep)
	return rep, nil
}

// checkSoak reads every soak session back from the log: it must be gapless,
// and must replay to what was recorded (a finished session to its state hash).
func checkSoak(ctx context.Context, log events.Log, ids []string, rep *SoakReport) {
	problem := func(format string, args ...any) {
		if len(rep.Problems) < 20 {
			rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
		}
	}
	for _, id := range ids {
		rep.Started++
		meta, err := log.Session(ctx, id)
		if errors.Is(err, events.ErrNoSession) {
			// Created, but stopped while it waited for its seats: the
			// driver never started it, so it has no events to lose.
			rep.NotStarted++
			continue
		}
		if err != nil {
			rep.Unverified++
			problem("session %s: %v", id, err)
			continue
		}
		switch meta.Status {
		case events.StatusFinished:
			rep.Finished++
		case events.StatusFailed:
			rep.Failed++
		default:
			rep.Interrupted++
		}
		last, err := log.LastSeq(ctx, id)
		if err != nil {
			rep.Unverified++
			problem("session %s: %v", id, err)
			continue
		}
		rep.EventsAppended += last
		var prev uint64
		for ev, err := range log.Read(ctx, id, 1) {
			if err != nil {
				problem("session %s after seq %d: %v", id, prev, err)
				break
			}
			if ev.Seq != prev+1 {
				rep.Gaps += ev.Seq - prev - 1
				problem("session %s: seqs %d..%d missing", id, prev+1, ev.Seq-1)
			}
			prev = ev.Seq
			switch ev.Type {
			case payload.EvActionRejected:
				rep.Rejected++
			case payload.EvTurnTimeout:
				rep.Timeouts++
			}
		}
		if prev < last {
			rep.Gaps += last - prev
			problem("session %s: seqs %d..%d missing", id, prev+1, last)
		}
		v := driver.Verify(ctx, log, meta)
		if meta.Status == events.StatusFinished && v.StateHash != meta.StateHash {
			v.OK = false
			v.Problems = append(v.Problems, fmt.Sprintf("replay gives state hash %s, the run recorded %s", v.StateHash, meta.StateHash))
		}
		if !v.OK {
			rep.Unverified++
			problem("session %s (%s) does not verify: %s", id, meta.Status, strings.Join(v.Problems, "; "))
		}
	}
	rep.Lost = rep.Gaps + uint64(rep.Unverified)
}

// session runs soak session i: every seat remote, some of them faulty, and
// perhaps a slow watcher of its event feed.
func (s *soaker) session(ctx context.Context, i int, src []byte) {
	rng := rand.New(rand.NewPCG(s.o.Seed, uint64(i)))
	reply, err := s.oper.Create(ctx, wire.CreateRequest{Source: string(src), Seed: s.o.Seed + uint64(i), Agents: "remote",
		TurnTimeout: s.o.TurnTimeout.String()})
	if err != nil {
		if ctx.Err() == nil {
			s.o.Logger.Error("soak: cannot create a session", "error", err)
		}
		return
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, reply.Session)
	s.mu.Unlock()

	// Faults: a seat fault chosen in turn (so the first sessions cover
	// every kind), perhaps a second one drawn at random, and a slow watcher
	// of the feed in every other session.
	members := make([]string, 0, len(reply.Seats))
	for m := range reply.Seats {
		members = append(members, m)
	}
	slices.Sort(members)
	rng.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
	plan := map[string]string{}
	kinds := []string{seatFaults[i%len(seatFaults)]}
	if rng.IntN(2) == 0 {
		kinds = append(kinds, seatFaults[rng.IntN(len(seatFaults))])
	}
	for j, k := range kinds {
		if j < len(members) {
			plan[members[j]] = k
		}
	}
	var w *slowWatcher
	if i%2 == 0 {
		if w, err = s.watch(reply.Session, rng); err != nil {
			s.o.Logger.Error("soak: cannot watch the feed", "error", err)
		}
	}
	var seats []*soakSeat
	for _, m := range slices.Sorted(maps.Keys(reply.Seats)) {
		a, err := agents.New("greedy", agents.Options{Seed: s.o.Seed + uint64(i), Member: m})
		if err != nil {
			panic(err)
		}
		ss := &soakSeat{s: s, seat: reply.Seats[m], agent: a, fault: plan[m], at: 1 + uint64(rng.IntN(3)),
			away: time.Duration(100+rng.IntN(900)) * time.Millisecond, abrupt: rng.IntN(2) == 0}
		if err := ss.connect(); err != nil {
			s.o.Logger.Error("soak: seat cannot connect", "member", m, "error", err)
			continue
		}
		seats = append(seats, ss)
	}
	_, _ = s.svc.Wait(context.Background(), reply.Session)
	for _, ss := range seats {
		ss.close()
	}
	if w != nil {
		w.close()
	}
}

// soakSeat plays one remote seat with the greedy agent, on its own
// connection with the seat's credentials, misbehaving as its fault says
// from its turn `at` on.
type soakSeat struct {
	s      *soaker
	seat   wire.Seat
	agent  agents.Agent
	fault  string
	at     uint64
	away   time.Duration
	abrupt bool // disconnect without unsubscribing first (a turn may be lost and time out)

	mu      sync.Mutex
	nc      *nats.Conn
	stopped bool
	dropped bool // the disconnect fault was played
	wg      sync.WaitGroup
}

func (ss *soakSeat) connect() error {
	nc, err := nats.Connect(ss.s.url, nats.Name("soak seat "+ss.seat.Member), nats.Token(ss.seat.Token), nats.NoReconnect(), nats.Timeout(connectTimeout),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // refused publishes are expected
	if err != nil {
		return err
	}
	ss.mu.Lock()
	if ss.stopped {
		ss.mu.Unlock()
		nc.Close()
		return errors.New("stopped")
	}
	ss.nc = nc
	ss.mu.Unlock()
	if _, err := nc.Subscribe(ss.seat.Subject, func(m *nats.Msg) { ss.handle(nc, m) }); err != nil {
		nc.Close()
		return err
	}
	return nc.Flush()
}

func (ss *soakSeat) close() {
	ss.mu.Lock()
	ss.stopped = true
	nc := ss.nc
	ss.mu.Unlock()
	ss.wg.Wait()
	if nc != nil {
		nc.Close()
	}
}

func (ss *soakSeat) handle(nc *nats.Conn, msg *nats.Msg) {
	var obs org.Observation
	if err := json.Unmarshal(msg.Data, &obs); err != nil {
		return
	}
	turn := obs.Turn
	acts, _ := ss.agent.Decide(context.Background(), obs)
	if acts == nil {
		acts = []org.Action{}
	}
	reply, _ := json.Marshal(org.Reply{Turn: turn, Actions: acts})
	on := turn >= ss.at
	switch {
	case ss.fault == FaultKilled && on:
		ss.s.count(FaultKilled)
		ss.mu.Lock()
		ss.stopped = true // never comes back
		ss.mu.Unlock()
		go nc.Close()
		return
	case ss.fault == FaultGarbage && on && turn < ss.at+3:
		ss.s.count(FaultGarbage)
		reply = garbage(turn)
	case ss.fault == FaultFlood && on && turn < ss.at+2:
		ss.s.count(FaultFlood)
		reply = flood(turn)
		for range 10 { // only the first can be a reply; the server refuses the rest
			_ = nc.Publish(msg.Reply, reply)
		}
	case ss.fault == FaultDisconnect && on && !ss.dropped:
		ss.dropped = true
		ss.s.count(FaultDisconnect)
		if !ss.abrupt {
			// Unsubscribed before the answer: the next turn finds no
			// responder (the driver asks again) until the seat is back.
			_ = msg.Sub.Unsubscribe()
		}
		_ = nc.Publish(msg.Reply, reply)
		_ = nc.Flush()
		ss.wg.Add(1)
		go func() {
			defer ss.wg.Done()
			nc.Close()
			time.Sleep(ss.away)
			ss.mu.Lock()
			stopped := ss.stopped
			ss.mu.Unlock()
			if stopped {
				return
			}
			if err := ss.connect(); err == nil {
				ss.s.reconnects.Add(1)
			}
		}()
		return
	}
	_ = nc.Publish(msg.Reply, reply)
}

// garbage is an unreadable or wrong reply to turn.
func garbage(turn uint64) []byte {
	switch turn % 4 {
	case 0:
		return []byte(`{"turn": ` + strconv.FormatUint(turn, 10) + `, "actions": [`) // cut short
	case 1:
		return []byte(`{"turn":` + strconv.FormatUint(turn+7, 10) + `,"actions":[{"type":"wait"}]}`) // a turn not asked
	case 2:
		return []byte(`{"turn":` + strconv.FormatUint(turn, 10) + `,"actions":[],"extra":true}`) // unknown field
	}
	return []byte(`{"turn":` + strconv.FormatUint(turn, 10) + `,"actions":[{"type":"teleport"}]} trailing`)
}

// flood is an oversized reply to turn: too many actions, or too many bytes.
func flood(turn uint64) []byte {
	var acts []org.Action
	if turn%2 == 0 {
		acts = []org.Action{{Type: org.ActMessage, To: "nobody", Text: strings.Repeat("flood ", org.MaxReplyBytes/6+1)}}
	} else {
		for j := 0; j <= org.MaxActions; j++ {
			acts = append(acts, org.Action{Type: org.ActClaim, Task: "no-such-task-" + strconv.Itoa(j)})
		}
	}
	b, _ := json.Marshal(org.Reply{Turn: turn, Actions: acts})
	return b
}

// slowWatcher follows a session's event feed on its own operator
// connection, reading too slowly for a small pending limit. Its client
// drops what does not fit and tells it (nats.ErrSlowConsumer); it then
// reads what it missed from the history responder.
type slowWatcher struct {
	s       *soaker
	nc      *nats.Conn
	sub     *nats.Subscription
	session string
	delay   time.Duration
	lost    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup

	mu   sync.Mutex
	next uint64 // the first seq it has not seen
}

func (s *soaker) watch(session string, rng *rand.Rand) (*slowWatcher, error) {
	w := &slowWatcher{s: s, session: session, delay: time.Duration(2+rng.IntN(10)) * time.Millisecond,
		lost: make(chan struct{}, 1), done: make(chan struct{}), next: 1}
	nc, err := nats.Connect(s.url, nats.Name("soak watcher"), nats.Token(s.op), nats.Timeout(connectTimeout),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				s.notices.Add(1)
				select {
				case w.lost <- struct{}{}:
				default:
				}
			}
		}))
	if err != nil {
		return nil, err
	}
	w.nc = nc
	if w.sub, err = nc.Subscribe(wire.EventsSubject(session), w.handle); err != nil {
		nc.Close()
		return nil, err
	}
	if err := w.sub.SetPendingLimits(8, 64<<10); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	s.count(FaultSlowConsumer)
	w.wg.Add(1)
	go w.catchUp()
	return w, nil
}

func (w *slowWatcher) handle(msg *nats.Msg) {
	var ev struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal(msg.Data, &ev) != nil {
		return
	}
	time.Sleep(w.delay)
	w.mu.Lock()
	if ev.Seq >= w.next {
		w.next = ev.Seq + 1
	}
	w.mu.Unlock()
}

// catchUp reads a page of history each time the client reports it dropped
// feed messages (while the session runs; afterwards its log is the store's).
func (w *slowWatcher) catchUp() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case <-w.lost:
		}
		w.mu.Lock()
		from := w.next
		w.mu.Unlock()
		req, _ := json.Marshal(wire.HistoryRequest{From: from, Limit: wire.MaxHistoryPage})
		msg, err := w.nc.Request(wire.HistorySubject(w.session), req, 5*time.Second)
		if err != nil {
			continue // the session ended meanwhile, or is busy
		}
		var resp wire.HistoryResponse
		if json.Unmarshal(msg.Data, &resp) != nil || resp.Error != "" {
			continue
		}
		w.s.caughtUp.Add(uint64(len(resp.Events)))
		if n := len(resp.Events); n > 0 {
			w.mu.Lock()
			w.next = max(w.next, resp.Events[n-1].Seq+1)
			w.mu.Unlock()
		}
	}
}

func (w *slowWatcher) close() {
	close(w.done)
	w.wg.Wait()
	if n, err := w.sub.Dropped(); err == nil {
		w.s.dropped.Add(int64(n))
	}
	w.nc.Close()
}

// worldSource reads a shipped world or a world file.
func worldSource(world string) (src []byte, name string, err error) {
	if b, err := os.ReadFile(world); err == nil {
		return b, world, nil
	}
	b, err := worlds.Source(world)
	if err != nil {
		return nil, "", err
	}
	return b, world, nil
}

// loopbackAddr returns a loopback address with a port that was free a moment ago.
func loopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// memNow returns the Go heap in use after a GC and the resident set size
// (0 where /proc is not there to say).
func memNow() (heap, rss uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap = ms.HeapAlloc
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				rss = pages * uint64(os.Getpagesize())
			}
		}
	}
	return heap, rss
}
