// Package memlog is an in-memory events.Log, for tests and --ephemeral runs.
//
// It stores each event in its encoded form, exactly as a durable log would,
// so every Append and Read goes through the events codec and its checksum.
// The encodings are packed into blocks of 64 KiB, and a full block is
// compressed with s2 (klauspost/compress), beside the appender when the
// Log is made with Options.Beside: a long --ephemeral run keeps about a
// third of the bytes it would as one slice per event. A Log made
// with NewWindow keeps only each session's latest events, so that a long
// run's memory does not grow with its history; a read of older ones is
// refused with events.ErrTrimmed. Nothing survives Close.
//
//	log := memlog.New()
//	defer log.Close()
//	err := log.CreateSession(ctx, events.SessionMeta{ID: "s1", Status: events.StatusRunning})
package memlog

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/internal/logcore"
)

// Log is an in-memory events.Log. It is safe for concurrent use. The zero
// value is not usable; call New.
type Log struct {
	closed atomic.Bool

	mu       sync.RWMutex
	sessions map[string]*session
	keep     int          // events kept per session (at least); 0 for all
	beside   func(func()) // runs a sealed block's compression (Options.Beside); nil: at once
}

var (
	_ events.Log             = (*Log)(nil)
	_ events.TrustedAppender = (*Log)(nil)
	_ events.Founder         = (*Log)(nil)
	_ events.Deleter         = (*Log)(nil)
)

type session struct {
	meta    []byte // events.EncodeMeta
	parent  string // immutable copy of the parsed meta's Parent
	forkSeq uint64 // immutable copy of the parsed meta's ForkSeq
	// events holds the session's own events, encoded: event i has seq
	// forkSeq+1+i. Stored bytes are never modified, so a reader may keep a
	// snapshot and read it without the lock.
	events store
	// checkpoints holds the session's own checkpoints, sorted by seq. A
	// replaced checkpoint gets a new slice; stored bytes are never modified.
	checkpoints []storedCheckpoint
}

type storedCheckpoint struct {
	seq uint64
	b   []byte // events.EncodeCheckpoint
}

func (s *session) last() uint64 { return s.forkSeq + uint64(s.events.len()) }

// New returns an empty Log that keeps every event.
func New() *Log { return NewWith(Options{}) }

// NewWindow returns an empty Log that keeps at least the latest keep
// events of each session (every event when keep <= 0): older ones are
// dropped a compressed block at a time, and reading them is refused with
// events.ErrTrimmed. It is for runs whose log dies with the process and
// whose readers (the history an agent asks for) need only its tail.
func NewWindow(keep int) *Log { return NewWith(Options{Keep: keep}) }

// Options are how NewWith makes a Log; the zero value makes New's.
type Options struct {
	// Keep is NewWindow's: the latest events each session keeps at least
	// (0: every event).
	Keep int
	// Beside, if set, runs the compression of a block just sealed (work),
	// as concurrently as it likes: a run's driver, which appends the batch
	// its turns wait for on its own goroutine, then does not wait for s2.
	// The block is read raw until work has returned. The package starts
	// no goroutine itself; nil compresses on the appender's goroutine.
	Beside func(work func())
}

// NewWith returns an empty Log made as o says.
func NewWith(o Options) *Log {
	return &Log{sessions: make(map[string]*session), keep: max(o.Keep, 0), beside: o.Beside}
}

// trimmed is the error of a read of event seq of session id, which its
// store no longer keeps.
func (l *Log) trimmed(id string, seq uint64, st *store, base uint64) error {
	return fmt.Errorf("%w: session %s seq %d: the in-memory log keeps its latest %d events, from seq %d on", events.ErrTrimmed, id, seq, l.keep, base+1+uint64(st.kept))
}

func (l *Log) check(ctx context.Context) error {
	if l.closed.Load() {
		return events.ErrClosed
	}
	return ctx.Err()
}

// CreateSession implements events.Log.
func (l *Log) CreateSession(ctx context.Context, m events.SessionMeta) error {
	return l.create(ctx, m, nil)
}

// CreateSessionWith implements events.Founder.
func (l *Log) CreateSessionWith(ctx context.Context, m events.SessionMeta, batch []events.Event) error {
	if err := events.ValidateBatch(m.ID, m.ForkSeq, batch); err != nil {
		return err
	}
	return l.create(ctx, m, batch)
}

// create stores session m with batch (validated) as its first events.
func (l *Log) create(ctx context.Context, m events.SessionMeta, batch []events.Event) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	b, err := events.EncodeMeta(&m)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.sessions[m.ID]; ok {
		return fmt.Errorf("%w: %s", events.ErrSessionExists, m.ID)
	}
	if m.Parent != "" {
		p, ok := l.sessions[m.Parent]
		if !ok {
			return fmt.Errorf("%w: parent %s of session %s", events.ErrNoSession, m.Parent, m.ID)
		}
		if err := logcore.CheckForkPoint(&m, p.last()); err != nil {
			return err
		}
	}
	s := &session{meta: b, parent: m.Parent, forkSeq: m.ForkSeq}
	l.addLocked(s, batch)
	l.sessions[m.ID] = s
	return nil
}

// addLocked stores batch (checked) at the end of s; l.mu must be held.
func (l *Log) addLocked(s *session, batch []events.Event) {
	for i := range batch {
		e := &batch[i]
		s.events.add(events.EncodedLen(e), func(dst []byte) []byte { return events.AppendEncode(dst, e) }, l.beside)
	}
	if l.keep > 0 {
		s.events.trim(l.keep)
	}
}

// UpdateSession implements events.Log.
func (l *Log) UpdateSession(ctx context.Context, m events.SessionMeta) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	b, err := events.EncodeMeta(&m)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[m.ID]
	if !ok {
		return fmt.Errorf("%w: %s", events.ErrNoSession, m.ID)
	}
	old := events.SessionMeta{ID: m.ID, Parent: s.parent, ForkSeq: s.forkSeq}
	if err := logcore.CheckUpdate(&old, &m); err != nil {
		return err
	}
	s.meta = b
	return nil
}

// Session implements events.Log.
func (l *Log) Session(ctx context.Context, id string) (events.SessionMeta, error) {
	if err := l.check(ctx); err != nil {
		return events.SessionMeta{}, err
	}
	if err := events.ValidSessionID(id); err != nil {
		return events.SessionMeta{}, err
	}
	l.mu.RLock()
	s, ok := l.sessions[id]
	var b []byte
	if ok {
		b = s.meta
	}
	l.mu.RUnlock()
	if !ok {
		return events.SessionMeta{}, fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	return decodeMeta(id, b)
}

func decodeMeta(id string, b []byte) (events.SessionMeta, error) {
	var m events.SessionMeta
	if err := events.DecodeMeta(b, &m); err != nil {
		return events.SessionMeta{}, &events.CorruptError{Session: id, Err: err}
	}
	if m.ID != id {
		return events.SessionMeta{}, &events.CorruptError{Session: id, Err: fmt.Errorf("metadata names session %q", m.ID)}
	}
	return m, nil
}

// Sessions implements events.Log.
func (l *Log) Sessions(ctx context.Context) ([]events.SessionMeta, error) {
	if err := l.check(ctx); err != nil {
		return nil, err
	}
	type raw struct {
		id   string
		meta []byte
	}
	l.mu.RLock()
	raws := make([]raw, 0, len(l.sessions))
	for id, s := range l.sessions { // order: sorted below
		raws = append(raws, raw{id, s.meta})
	}
	l.mu.RUnlock()
	sort.Slice(raws, func(i, j int) bool { return raws[i].id < raws[j].id })
	out := make([]events.SessionMeta, 0, len(raws))
	var damaged []error // each that does not decode: the others are listed
	for _, r := range raws {
		m, err := decodeMeta(r.id, r.meta)
		if err != nil {
			damaged = append(damaged, err)
			continue
		}
		out = append(out, m)
	}
	return out, events.Damaged(damaged)
}

// LastSeq implements events.Log.
func (l *Log) LastSeq(ctx context.Context, id string) (uint64, error) {
	if err := l.check(ctx); err != nil {
		return 0, err
	}
	if err := events.ValidSessionID(id); err != nil {
		return 0, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	s, ok := l.sessions[id]
	if !ok {
		return 0, fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	return s.last(), nil
}

// Append implements events.Log. The batch is encoded into one new buffer;
// the Log keeps no reference to batch.
func (l *Log) Append(ctx context.Context, id string, expectedLast uint64, batch []events.Event) error {
	return l.append(ctx, id, expectedLast, batch, events.ValidateBatch)
}

// AppendTrusted implements events.TrustedAppender: Append without the JSON
// check of the payloads.
func (l *Log) AppendTrusted(ctx context.Context, id string, expectedLast uint64, batch []events.Event) error {
	return l.append(ctx, id, expectedLast, batch, events.ValidateTrustedBatch)
}

func (l *Log) append(ctx context.Context, id string, expectedLast uint64, batch []events.Event, validate func(string, uint64, []events.Event) error) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	if err := events.ValidSessionID(id); err != nil {
		return err
	}
	if err := validate(id, expectedLast, batch); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return events.ErrClosed
	}
	s, ok := l.sessions[id]
	if !ok {
		return fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	write, err := logcore.CheckAppend(id, s.last(), expectedLast, batch, l.storedLocked(id))
	if err != nil || !write {
		return err
	}
	l.addLocked(s, batch)
	return nil
}

// storedLocked returns a logcore.StoredFunc for session id; l.mu must be
// held while it is called.
//
// A batch given again is compared event by event: the sealed block last
// decompressed is kept for the next events, so a block is decompressed
// once per comparison, not once per event in it.
func (l *Log) storedLocked(id string) logcore.StoredFunc {
	var cached struct {
		owner string
		first int
		raw   []byte
		ends  []uint32
	}
	return func(seq uint64) ([]byte, string, error) {
		owner, s := id, l.sessions[id]
		for seq <= s.forkSeq && s.parent != "" {
			owner, s = s.parent, l.sessions[s.parent]
		}
		if seq <= s.forkSeq || seq > s.last() {
			return nil, owner, nil
		}
		i := int(seq - s.forkSeq - 1)
		if i < s.events.kept {
			return nil, owner, l.trimmed(owner, seq, &s.events, s.forkSeq)
		}
		if cached.raw != nil && cached.owner == owner && i >= cached.first && i < cached.first+len(cached.ends) {
			return eventIn(cached.raw, cached.first, cached.ends, i), owner, nil
		}
		raw, first, ends, own, err := s.events.blockOf(i, nil)
		if err != nil {
			return nil, owner, &events.CorruptError{Session: owner, Seq: seq, Err: err}
		}
		if own { // a sealed block, decompressed for this call
			cached.owner, cached.first, cached.raw, cached.ends = owner, first, raw, ends
		}
		return eventIn(raw, first, ends, i), owner, nil
	}
}

// chainLocked returns the metadata chain of session id (see logcore.Plan)
// and, for each link, a snapshot of its stored events; l.mu must be held.
func (l *Log) chainLocked(id string) ([]events.SessionMeta, map[string]store, bool) {
	s, ok := l.sessions[id]
	if !ok {
		return nil, nil, false
	}
	var chain []events.SessionMeta
	stored := make(map[string]store)
	for {
		chain = append(chain, events.SessionMeta{ID: id, Parent: s.parent, ForkSeq: s.forkSeq})
		stored[id] = s.events.snapshot()
		if s.parent == "" {
			return chain, stored, true
		}
		id, s = s.parent, l.sessions[s.parent]
	}
}

// Read implements events.Log. Each yielded Event is freshly decoded and
// owned by the caller.
func (l *Log) Read(ctx context.Context, id string, from uint64) iter.Seq2[events.Event, error] {
	return logcore.ReadVia(func(fn func(*events.Event) error) error {
		return l.scan(ctx, id, from, nil, fn)
	})
}

// Scan implements events.Log. The Payload of each event aliases the bytes
// the Log stores (the open block's, which are never modified) or the
// scan's own copy of a decompressed block; the borrowed *Event is reused
// for the next event.
func (l *Log) Scan(ctx context.Context, id string, from uint64, fn func(*events.Event) error) error {
	var dec events.Decoder
	return l.scan(ctx, id, from, &dec, fn)
}

// scan calls fn with each event of session id from seq from: decoded into
// a copy with a nil dec (Read), borrowed with DecodeBorrowed otherwise.
func (l *Log) scan(ctx context.Context, id string, from uint64, dec *events.Decoder, fn func(*events.Event) error) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	if err := events.ValidSessionID(id); err != nil {
		return err
	}
	l.mu.RLock()
	chain, stored, ok := l.chainLocked(id)
	l.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	forkSeq := make(map[string]uint64, len(chain))
	for _, m := range chain {
		forkSeq[m.ID] = m.ForkSeq
	}
	var (
		e     events.Event
		buf   []byte   // the last sealed block decompressed
		raw   []byte   // the block of the current event,
		first int      // the index of its first event
		ends  []uint32 // and the ends of its events
	)
	for _, seg := range logcore.Plan(chain, from) {
		st := stored[seg.Session]
		base := forkSeq[seg.Session]
		n := uint64(st.len())
		ends = nil
		for seq := seg.From; seq <= seg.To && seq-base <= n; seq++ {
			if err := l.check(ctx); err != nil {
				return err
			}
			i := int(seq - base - 1)
			if i < st.kept {
				return l.trimmed(seg.Session, seq, &st, base)
			}
			if ends == nil || i < first || i >= first+len(ends) {
				var (
					own bool
					err error
				)
				if raw, first, ends, own, err = st.blockOf(i, buf); err != nil {
					return &events.CorruptError{Session: seg.Session, Seq: seq, Err: fmt.Errorf("block of seq %d: %w", base+1+uint64(first), err)}
				}
				if own { // a sealed block, decompressed into buf
					buf = raw
				}
			}
			start := uint32(0)
			if j := i - first; j > 0 {
				start = ends[j-1]
			}
			b := raw[start:ends[i-first]:ends[i-first]]
			var err error
			if dec == nil {
				err = events.Decode(b, &e)
			} else {
				err = dec.DecodeBorrowed(b, &e)
			}
			if err != nil {
				return &events.CorruptError{Session: seg.Session, Seq: seq, Err: err}
			}
			if e.Seq != seq {
				return &events.CorruptError{Session: seg.Session, Seq: seq,
					Err: fmt.Errorf("stored event has seq %d", e.Seq)}
			}
			e.Session = seg.Session
			if err := fn(&e); err != nil {
				return err
			}
			if seq == seg.To { // avoid overflow at math.MaxUint64
				break
			}
		}
	}
	return nil
}

// PutCheckpoint implements events.Log. cp is encoded into a new buffer; the
// Log keeps no reference to cp.Data.
func (l *Log) PutCheckpoint(ctx context.Context, id string, cp events.Checkpoint) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	if err := events.ValidSessionID(id); err != nil {
		return err
	}
	if err := cp.Validate(); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	b := events.EncodeCheckpoint(&cp)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return events.ErrClosed
	}
	s, ok := l.sessions[id]
	if !ok {
		return fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	if err := logcore.CheckCheckpoint(id, &cp, s.last()); err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(s.checkpoints, cp.Seq, func(c storedCheckpoint, seq uint64) int {
		return cmp.Compare(c.seq, seq)
	})
	if found {
		s.checkpoints[i].b = b
	} else {
		s.checkpoints = slices.Insert(s.checkpoints, i, storedCheckpoint{cp.Seq, b})
	}
	return nil
}

// LatestCheckpoint implements events.Log. It finds the checkpoint by binary
// search, so its cost grows only with the log of the number stored.
func (l *Log) LatestCheckpoint(ctx context.Context, id string, atOrBefore uint64) (events.Checkpoint, error) {
	if err := l.check(ctx); err != nil {
		return events.Checkpoint{}, err
	}
	if err := events.ValidSessionID(id); err != nil {
		return events.Checkpoint{}, err
	}
	l.mu.RLock()
	chain, ok := l.metaChainLocked(id)
	var (
		f   logcore.Found
		err error
	)
	if ok {
		f, ok, err = logcore.FindCheckpoint(chain, atOrBefore, l.seekLocked)
	}
	l.mu.RUnlock()
	switch {
	case chain == nil:
		return events.Checkpoint{}, fmt.Errorf("%w: %s", events.ErrNoSession, id)
	case err != nil:
		return events.Checkpoint{}, err
	case !ok:
		return events.Checkpoint{}, logcore.NoCheckpoint(id, atOrBefore)
	}
	// Stored bytes are never modified, so they are decoded without the lock.
	return logcore.DecodeCheckpoint(f.Session, f.Seq, "", f.Stored, true)
}

// seekLocked is the logcore.SeekFunc of the Log; l.mu must be held.
func (l *Log) seekLocked(id string, atOrBefore uint64) (uint64, []byte, bool, error) {
	cps := l.sessions[id].checkpoints
	// The first checkpoint after atOrBefore; the one before it is the answer.
	i := sort.Search(len(cps), func(i int) bool { return cps[i].seq > atOrBefore })
	if i == 0 {
		return 0, nil, false, nil
	}
	return cps[i-1].seq, cps[i-1].b, true, nil
}

// metaChainLocked returns the metadata chain of session id (see
// logcore.Plan), or nil, false if it does not exist; l.mu must be held.
func (l *Log) metaChainLocked(id string) ([]events.SessionMeta, bool) {
	s, ok := l.sessions[id]
	if !ok {
		return nil, false
	}
	var chain []events.SessionMeta
	for {
		chain = append(chain, events.SessionMeta{ID: id, Parent: s.parent, ForkSeq: s.forkSeq})
		if s.parent == "" {
			return chain, true
		}
		id, s = s.parent, l.sessions[s.parent]
	}
}

// Checkpoints implements events.Log.
func (l *Log) Checkpoints(ctx context.Context, id string) ([]events.Checkpoint, error) {
	if err := l.check(ctx); err != nil {
		return nil, err
	}
	if err := events.ValidSessionID(id); err != nil {
		return nil, err
	}
	l.mu.RLock()
	s, ok := l.sessions[id]
	var cps []storedCheckpoint
	if ok {
		cps = slices.Clone(s.checkpoints)
	}
	l.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	var out []events.Checkpoint
	var damaged []error // each that does not decode: the others are listed
	for _, c := range cps {
		cp, err := logcore.DecodeCheckpoint(id, c.seq, "", c.b, false)
		if err != nil {
			damaged = append(damaged, err)
			continue
		}
		out = append(out, cp)
	}
	return out, events.Damaged(damaged)
}

// Close implements events.Log. Later calls fail with ErrClosed and Reads in
// progress stop with it; the data is freed with the Log.
func (l *Log) Close() error {
	if l.closed.Swap(true) {
		return events.ErrClosed
	}
	return nil
}

// DeleteSession implements events.Deleter.
func (l *Log) DeleteSession(ctx context.Context, id string) (int, error) {
	if err := events.ValidSessionID(id); err != nil {
		return 0, err
	}
	if err := l.check(ctx); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[id]
	if !ok {
		return 0, fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	var forks []string
	for child, c := range l.sessions { // order: the forks are sorted below
		if c.parent == id {
			forks = append(forks, child)
		}
	}
	if len(forks) > 0 {
		slices.Sort(forks)
		return 0, logcore.HasForks(id, forks)
	}
	delete(l.sessions, id)
	return int(s.last() - s.forkSeq), nil
}
