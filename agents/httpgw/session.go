package httpgw

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
)

// Session statuses the gateway reports once a session has ended.
const (
	statusFinished = "finished" // session.ended is in the log
	statusStopped  = "stopped"  // the server stopped running it without session.ended: interrupted or failed
	// A stop control through the gateway records the server's status instead (interrupted).
	statusClosed = "closed" // the gateway closed; the session may go on on the server
)

// maxPrefixFetch bounds the events the gateway reads over NATS to learn a
// fork's prefix when it does not hold the parent's record.
const maxPrefixFetch = 20000

// session is the gateway's record of a session it created: its remote seats
// and the events of its feed. mu guards everything below it, including each
// seat's held turn. Lock order: Gateway.mu before session.mu.
type session struct {
	g        *Gateway
	id       string
	parent   string
	forkSeq  uint64
	agents   string          // the agents spec it was created with: its forks' default
	tools    json.RawMessage // its world's tools (wire.CreateReply.Tools); nil if the server sent none
	turnWait time.Duration
	log      hclog.Logger
	stepMu   sync.Mutex // one step at a time

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	seats   map[string]*seat
	feed    *nats.Subscription
	ended   bool
	status  string
	endedAt time.Time
	// last is the last seq recorded from the feed (a fork's ForkSeq before
	// its first); own holds the feed's latest events (Config.RecordEvents,
	// up to twice that between trims; trimmed says older ones were
	// dropped), gaps says one was lost.
	last    uint64
	own     []events.Event
	trimmed bool
	gaps    bool
	// A fork's events up to ForkSeq come from its parent, not from its feed.
	prefixKnown  bool
	prefix       []events.Event // nil when only prefixReward is known
	prefixReward float64
	reward       float64        // the team deltas of the feed's reward events
	marks        []rewardMark   // reward after each of the feed's reward events
	rewards      []events.Event // the feed's reward events no step has listed yet (the latest Config.RecordEvents)
	unlisted     int            // how many of those were dropped from rewards
	stepped      float64        // reward at the previous step
	shown        map[string]uint64
	// retained is the size of the record counted against
	// Config.RetainBytes once the session ended; guarded by the gateway's mu.
	retained int64
}

// seat is a remote seat the gateway plays: its own NATS connection,
// subscribed to its turn subject. held is guarded by session.mu.
type seat struct {
	session *session
	member  string
	token   string
	log     hclog.Logger
	nc      *nats.Conn
	held    *heldTurn
}

// heldTurn is a turn request waiting for an HTTP answer.
type heldTurn struct {
	turn uint64
	obs  json.RawMessage
	msg  *nats.Msg
	at   time.Time
}

func newSession(g *Gateway, reply wire.CreateReply, req wire.CreateRequest, turnWait time.Duration) *session {
	s := &session{g: g, id: reply.Session, parent: req.Parent, agents: req.Agents, tools: reply.Tools, turnWait: turnWait,
		log: g.log.With("session", reply.Session), changed: make(chan struct{}), seats: map[string]*seat{},
		shown: map[string]uint64{}, prefixKnown: req.Parent == ""}
	if req.Parent != "" {
		s.forkSeq = max(req.ForkSeq, 1)
		s.last = s.forkSeq
	}
	for _, m := range slices.Sorted(maps.Keys(reply.Seats)) {
		tok := reply.Seats[m].Token
		if tok == "" {
			// A server without per-seat auth issues no tokens: the gateway
			// makes its own, so that HTTP seats stay apart all the same.
			tok = newToken()
		}
		s.seats[m] = &seat{session: s, member: m, token: tok, log: s.log.With("member", m)}
	}
	return s
}

// credentials returns the create reply the HTTP client gets: the server's,
// with the gateway's tokens for seats the server gave none.
func (s *session) credentials(reply wire.CreateReply) wire.CreateReply {
	out := reply
	out.Seats = make(map[string]wire.Seat, len(reply.Seats))
	for m, cred := range reply.Seats {
		cred.Token = s.seats[m].token
		out.Seats[m] = cred
	}
	return out
}

func newToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("httpgw: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// broadcastLocked wakes everyone waiting for a change. s.mu is held.
func (s *session) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// follow subscribes to the session's event feed. It must run before the
// session starts, so that no event is missed.
func (s *session) follow() error {
	sub, err := s.g.op.Subscribe(wire.EventsSubject(s.id), s.onEvent)
	if err != nil {
		return fmt.Errorf("httpgw: follow %s: %w", s.id, err)
	}
	// The feed is the gateway's record of the session: never drop it for being slow.
	_ = sub.SetPendingLimits(-1, -1)
	s.mu.Lock()
	s.feed = sub
	s.mu.Unlock()
	return s.g.op.Flush()
}

// join connects every remote seat with its own credentials, a few at a time.
func (s *session) join(ctx context.Context, creds map[string]wire.Seat) error {
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(s.seats))
	var wg sync.WaitGroup
	for _, m := range slices.Sorted(maps.Keys(s.seats)) {
		st := s.seats[m]
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			}
			defer func() { <-sem }()
			if err := st.connect(s.g.cfg.NATSURL, creds[st.member]); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when the channel is empty
}

func (st *seat) connect(url string, cred wire.Seat) error {
	opts := []nats.Option{nats.Name("corpsim httpgw seat " + st.member),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			st.log.Warn("NATS error on the seat's connection", "error", err)
		})}
	if cred.Token != "" {
		opts = append(opts, nats.Token(cred.Token))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("httpgw: seat %s: %w", st.member, err)
	}
	if _, err := nc.Subscribe(cred.Subject, st.onTurn); err != nil {
		nc.Close()
		return fmt.Errorf("httpgw: seat %s: %w", st.member, err)
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return fmt.Errorf("httpgw: seat %s: %w", st.member, err)
	}
	s := st.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		nc.Close()
		return errors.New("httpgw: the session ended while its seats joined")
	}
	st.nc = nc
	return nil
}

// onTurn holds a turn request until an HTTP client answers it. A new
// request replaces one still held: the engine asks a member again only
// after the previous ask is over (answered or timed out).
func (st *seat) onTurn(msg *nats.Msg) {
	var head struct {
		Turn uint64 `json:"turn"`
	}
	if err := json.Unmarshal(msg.Data, &head); err != nil {
		st.log.Error("turn request is not an observation", "error", err)
		return
	}
	s := st.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if st.held != nil {
		st.log.Debug("turn superseded: the engine timed it out", "turn", st.held.turn, "next", head.Turn)
	}
	st.held = &heldTurn{turn: head.Turn, obs: msg.Data, msg: msg, at: time.Now()}
	st.log.Trace("turn held", "turn", head.Turn)
	s.broadcastLocked()
}

// heldLocked returns the seat's held turn, dropping it once the engine has
// given up on it. s.mu is held.
func (st *seat) heldLocked(now time.Time) *heldTurn {
	h := st.held
	if h != nil && now.Sub(h.at) > st.session.turnWait {
		st.log.Info("turn dropped: nobody answered it within the turn budget", "turn", h.turn)
		st.held = nil
		return nil
	}
	return h
}

// onEvent records an event of the session's feed.
func (s *session) onEvent(msg *nats.Msg) {
	var ev events.Event
	if err := json.Unmarshal(msg.Data, &ev); err != nil {
		s.log.Error("undecodable event on the feed", "error", err)
		return
	}
	s.mu.Lock()
	if ev.Seq <= s.last {
		s.mu.Unlock()
		return
	}
	from := s.last + 1
	s.mu.Unlock()
	batch := []events.Event{ev}
	if ev.Seq > from {
		// The feed lost events: ask the running session for them.
		missing, err := s.fetch(from, ev.Seq-1)
		if err != nil {
			s.log.Warn("events lost from the feed and not recovered", "from", from, "to", ev.Seq-1, "error", err)
		}
		batch = append(missing, ev)
	}
	s.mu.Lock()
	for _, e := range batch {
		if e.Seq <= s.last {
			continue
		}
		if e.Seq != s.last+1 {
			s.gaps = true
		}
		s.recordLocked(e)
	}
	ended := ev.Type == payload.EvSessionEnded
	s.broadcastLocked()
	s.mu.Unlock()
	if ended {
		s.finish(statusFinished)
	}
}

// rewardMark is the sum of a session's feed's rewards up to seq.
type rewardMark struct {
	seq    uint64
	reward float64
}

func (s *session) recordLocked(ev events.Event) {
	keep := s.g.cfg.RecordEvents
	s.own = append(s.own, ev)
	if len(s.own) >= 2*keep {
		s.own, s.trimmed = slices.Clone(s.own[len(s.own)-keep:]), true
	}
	s.last = ev.Seq
	if ev.Type != payload.EvReward {
		return
	}
	r, err := payload.TeamReward(&ev)
	if err != nil {
		s.log.Error("undecodable reward", "seq", ev.Seq, "error", err)
		return
	}
	s.reward += r
	s.marks = append(s.marks, rewardMark{ev.Seq, s.reward})
	s.rewards = append(s.rewards, ev)
	if len(s.rewards) >= 2*keep {
		// Step reports what was earned since the previous step from
		// reward (see stepped), not from the events it lists.
		drop := len(s.rewards) - keep
		s.unlisted += drop
		s.rewards = slices.Clone(s.rewards[drop:])
	}
}

// fetch reads events from..to (inclusive) over the session's history subject.
func (s *session) fetch(from, to uint64) ([]events.Event, error) {
	var out []events.Event
	for from <= to {
		resp, err := s.g.history(s.g.ctx, s.id, from, int(min(to-from+1, wire.MaxHistoryPage)))
		if err != nil {
			return out, err
		}
		if len(resp.Events) == 0 {
			return out, fmt.Errorf("history has no events from %d (last %d)", from, resp.Last)
		}
		for _, e := range resp.Events {
			if e.Seq > to {
				break
			}
			out = append(out, e)
			from = e.Seq + 1
		}
	}
	return out, nil
}

// finish marks the session ended, drops its held turns and closes its
// seats' connections and its feed. It is idempotent.
func (s *session) finish(status string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended, s.status, s.endedAt = true, status, time.Now()
	var conns []*nats.Conn
	for _, st := range s.seats {
		st.held = nil
		if st.nc != nil {
			conns = append(conns, st.nc)
		}
	}
	feed := s.feed
	s.broadcastLocked()
	s.mu.Unlock()
	if feed != nil {
		_ = feed.Unsubscribe()
	}
	for _, nc := range conns {
		nc.Close()
	}
	s.log.Debug("session over for the gateway", "status", status)
	s.g.keepEnded(s)
}

// eventOverhead estimates what an events.Event holds besides its payload:
// the struct and its strings.
const eventOverhead = 160

// recordSize estimates the memory the session's record holds: its events,
// a fork's prefix and the rewards no step has listed.
func (s *session) recordSize() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(1024 + 64*len(s.marks))
	for _, evs := range [][]events.Event{s.own, s.prefix, s.rewards} {
		for i := range evs {
			n += eventOverhead + int64(len(evs[i].Payload)+len(evs[i].Type)+len(evs[i].Actor))
		}
	}
	return n
}

// learnPrefix learns a fork's events up to its fork point: from the
// parent's record when the gateway holds it, else over the fork's own
// history subject while it runs (retrying briefly while it starts).
func (s *session) learnPrefix(ctx context.Context) {
	s.mu.Lock()
	known := s.prefixKnown
	s.mu.Unlock()
	if known {
		return
	}
	if p := s.g.session(s.parent); p != nil {
		if evs, reward, ok := p.upTo(s.forkSeq); ok && (evs != nil || s.forkSeq > maxPrefixFetch) {
			s.setPrefix(evs, reward)
			return
		} else if ok {
			// Only the sum is held: fetch the events below, keeping it
			// if that fails.
			defer func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				if !s.prefixKnown {
					s.prefixReward, s.prefixKnown = reward, true
				}
			}()
		}
	}
	if s.forkSeq > maxPrefixFetch {
		s.log.Info("fork prefix too long to fetch; score and events will not include it", "fork_seq", s.forkSeq)
		return
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		evs, err := s.fetch(1, s.forkSeq)
		if err == nil {
			reward := 0.0
			for _, e := range evs {
				reward += teamReward(e)
			}
			s.setPrefix(evs, reward)
			return
		}
		if !errors.Is(err, nats.ErrNoResponders) || time.Now().After(deadline) {
			s.log.Info("fork prefix unknown; score and events will not include it", "error", err)
			return
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// hasPrefix reports whether the session's record starts after events it
// has not learnt: a fork's prefix, or what happened before adoption.
func (s *session) hasPrefix() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.prefixKnown && s.forkSeq > 0
}

func (s *session) setPrefix(evs []events.Event, reward float64) {
	s.mu.Lock()
	s.prefix, s.prefixReward, s.prefixKnown = evs, reward, true
	s.mu.Unlock()
	s.g.recount(s) // learnt after the session ended: its record grew
}

// upTo returns the session's events with seq <= seq and their rewards'
// team sum, if the record holds all of them; when it holds only the sum
// (older events were trimmed, or a fork's prefix events were not
// learnt), the events are nil.
func (s *session) upTo(seq uint64) ([]events.Event, float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.prefixKnown || s.gaps || s.last < seq {
		return nil, 0, false
	}
	if seq <= s.forkSeq {
		if s.prefix == nil {
			return nil, 0, false
		}
	} else if s.trimmed || (s.prefix == nil && s.forkSeq > 0) {
		// The sum of the rewards up to seq: the prefix's and the feed's.
		i, _ := slices.BinarySearchFunc(s.marks, seq+1, func(m rewardMark, t uint64) int { return cmp.Compare(m.seq, t) })
		reward := s.prefixReward
		if i > 0 {
			reward += s.marks[i-1].reward
		}
		return nil, reward, true
	}
	var out []events.Event
	reward := 0.0
	for _, list := range [][]events.Event{s.prefix, s.own} {
		for _, e := range list {
			if e.Seq > seq {
				break
			}
			out = append(out, e)
			reward += teamReward(e)
		}
	}
	return out, reward, uint64(len(out)) == seq
}

func teamReward(e events.Event) float64 {
	r, _ := payload.TeamReward(&e) // one that does not decode counts for nothing
	return r
}

// probeQuiet is how long the feed of a session that no longer answers
// must bring nothing, with nothing of it left to handle, before the
// gateway asks again and takes it for stopped without session.ended;
// probeMax is the longest it waits for a feed that keeps busy.
const (
	probeQuiet = 500 * time.Millisecond
	probeMax   = 30 * time.Second
)

// probe asks the server whether the session still runs. When nobody
// answers its control subject any more it has ended: if the feed does not
// bring session.ended once what it holds is handled, it stopped without
// it.
func (s *session) probe(ctx context.Context) {
	if s.hasEnded() {
		return
	}
	_, err := s.g.control(ctx, s.id, wire.OpStatus)
	if !errors.Is(err, nats.ErrNoResponders) {
		return
	}
	// Events published before the session stopped reach us before the
	// flush's PONG; their handler may still be far behind (a session of
	// NPCs publishes faster than one handler decodes), so the gateway
	// waits while it records more or has more queued, and gives up only
	// once the feed is quiet.
	_ = s.g.op.FlushTimeout(time.Second)
	quiet := time.NewTimer(probeQuiet)
	defer quiet.Stop()
	limit := time.NewTimer(probeMax)
	defer limit.Stop()
	for {
		s.mu.Lock()
		ended, ch, feed := s.ended, s.changed, s.feed
		s.mu.Unlock()
		if ended {
			return
		}
		select {
		case <-ch:
			quiet.Reset(probeQuiet)
			continue
		case <-quiet.C:
			if feed != nil {
				if n, _, err := feed.Pending(); err == nil && n > 0 {
					quiet.Reset(probeQuiet)
					continue
				}
			}
		case <-limit.C:
		case <-ctx.Done():
			return
		}
		// Quiet, or busy for too long: a session that answers again (its
		// lease taken over, resumed) runs; one that does not stopped.
		if _, err := s.g.control(ctx, s.id, wire.OpStatus); !errors.Is(err, nats.ErrNoResponders) {
			return
		}
		if !s.hasEnded() {
			s.finish(statusStopped)
		}
		return
	}
}

// score is the team score by the rewards recorded so far (the final team
// score once the session has finished) and whether nothing is missing from it.
func (s *session) scoreLocked() (float64, bool) {
	return s.prefixReward + s.reward, s.prefixKnown && !s.gaps
}
