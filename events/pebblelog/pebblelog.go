// Package pebblelog is the durable events.Log, stored in a Pebble database.
//
// Keys:
//
//	c/<session>/<seq, 8 bytes big endian>  ->  events.EncodeCheckpoint(cp)  (CRC-32C)
//	e/<session>/<seq, 8 bytes big endian>  ->  events.Encode(event)         (CRC-32C)
//	m/<session>                            ->  events.EncodeMeta(meta)      (JSON + CRC-32C)
//
// Each kind of key has its own one-letter prefix, so the key spaces iterated
// (c/<session>/ … c/<session>0, e/<session>/ … e/<session>0, m/ … m0) never
// overlap. Session IDs are limited to [A-Za-z0-9_-], so no key of one
// session is a prefix of another's. Each Append and PutCheckpoint is one
// Pebble batch committed with pebble.Sync: when it returns nil, the data
// survives a crash. LatestCheckpoint is one reverse seek per level of the
// fork chain, whatever the number of checkpoints.
//
//	log, err := pebblelog.Open(dir, pebblelog.Options{})
//	if err != nil { ... }
//	defer log.Close()
package pebblelog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/internal/logcore"
)

// Options configures Open. The zero value means defaults: the OS file
// system, a sync on every write and a block cache of DefaultCacheSize.
type Options struct {
	// FS is the file system the database lives on; nil means vfs.Default.
	// Tests use vfs.NewMem or vfs.NewCrashableMem.
	FS vfs.FS
	// NoSync makes writes skip the fsync. Appends are then atomic but not
	// durable: a machine crash may lose the most recently acknowledged
	// batches. Only for throwaway logs and benchmarks.
	NoSync bool
	// CacheSize is the size in bytes of Pebble's block cache; 0 means
	// DefaultCacheSize. Pebble charges its memtables (up to two of 4 MiB
	// each while one flushes) to the same budget, so Pebble's own default
	// of 8 MiB can leave no room for blocks at all.
	CacheSize int64
}

// DefaultCacheSize is the block cache size used when Options.CacheSize is 0.
const DefaultCacheSize = 64 << 20

// Log is a durable events.Log on Pebble. It is safe for concurrent use.
type Log struct {
	db    *pebble.DB
	wopts *pebble.WriteOptions

	// mu is held shared by every operation that touches db (a Read holds it
	// only while it steps its iterator, not while it yields) and exclusively
	// by Close, so db is never used after it is closed. A Scan is the
	// exception: it steps an iterator of its own without mu (see Close).
	mu     sync.RWMutex
	closed atomic.Bool // set by Close, with mu held exclusively

	// metaMu serializes writes of session metadata.
	metaMu sync.Mutex

	statesMu sync.Mutex
	states   map[string]*state // sessions known to exist

	itersMu sync.Mutex
	iters   map[*scanIter]struct{} // iterators of Reads and Scans in progress
}

var _ events.Log = (*Log)(nil)

// state is the cached state of a session known to exist.
type state struct {
	parent  string // immutable
	forkSeq uint64 // immutable

	mu     sync.Mutex // serializes Appends to the session
	loaded bool       // last is valid
	last   uint64
}

// Open opens (creating if needed) the log stored in directory dir.
func Open(dir string, opts Options) (*Log, error) {
	if dir == "" {
		return nil, errors.New("pebblelog: empty directory name")
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	cacheSize := opts.CacheSize
	if cacheSize < 0 {
		return nil, fmt.Errorf("pebblelog: negative cache size %d", cacheSize)
	}
	if cacheSize == 0 {
		cacheSize = DefaultCacheSize
	}
	db, err := pebble.Open(dir, &pebble.Options{
		FS:                 fs,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
		CacheSize:          cacheSize,
	})
	if err != nil {
		return nil, fmt.Errorf("pebblelog: open %s: %w", dir, err)
	}
	l := &Log{
		db:     db,
		wopts:  pebble.Sync,
		states: make(map[string]*state),
		iters:  make(map[*scanIter]struct{}),
	}
	if opts.NoSync {
		l.wopts = pebble.NoSync
	}
	return l, nil
}

// quietLogger discards Pebble's informational and error messages. Fatalf
// panics, since Pebble does not expect it to return.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(string, ...any)          {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf("pebble: "+format, a...)) }

// storageErr wraps an error from Pebble reading event seq of session id (seq
// 0: its metadata). Pebble's own corruption errors (failed block checksums)
// become a *events.CorruptError, like corruption found by the codec.
func storageErr(id string, seq uint64, err error) error {
	if pebble.IsCorruptionError(err) {
		return &events.CorruptError{Session: id, Seq: seq, Err: err}
	}
	if seq == 0 {
		return fmt.Errorf("pebblelog: session %s: %w", id, err)
	}
	return fmt.Errorf("pebblelog: session %s seq %d: %w", id, seq, err)
}

// checkpointErr wraps an error from Pebble reading checkpoint seq of session
// id, as storageErr does for events.
func checkpointErr(id string, seq uint64, err error) error {
	if pebble.IsCorruptionError(err) {
		return logcore.CorruptCheckpoint(id, seq, "", err)
	}
	return fmt.Errorf("pebblelog: session %s checkpoint %d: %w", id, seq, err)
}

// Keys.

func metaKey(id string) []byte { return append([]byte("m/"), id...) }

// eventPrefix returns "e/<id>/".
func eventPrefix(id string) []byte {
	return append(append(make([]byte, 0, len(id)+3+8), "e/"...), id+"/"...)
}

// eventKey appends the key of event seq of session id to dst.
func eventKey(dst []byte, id string, seq uint64) []byte {
	dst = append(dst, "e/"...)
	dst = append(dst, id...)
	dst = append(dst, '/')
	return binary.BigEndian.AppendUint64(dst, seq)
}

// checkpointPrefix returns "c/<id>/".
func checkpointPrefix(id string) []byte {
	return append(append(make([]byte, 0, len(id)+3+8), "c/"...), id+"/"...)
}

// checkpointKey appends the key of session id's checkpoint at seq to dst.
func checkpointKey(dst []byte, id string, seq uint64) []byte {
	dst = append(dst, "c/"...)
	dst = append(dst, id...)
	dst = append(dst, '/')
	return binary.BigEndian.AppendUint64(dst, seq)
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// which ends in '/'.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	end[len(end)-1]++ // '/' -> '0'
	return end
}

// begin takes the shared lock and checks ctx and the closed flag; on success
// the caller must call l.mu.RUnlock.
func (l *Log) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.RLock()
	if l.closed.Load() {
		l.mu.RUnlock()
		return events.ErrClosed
	}
	return nil
}

// getMeta reads and decodes the metadata of session id; l.mu must be held.
func (l *Log) getMeta(id string) (events.SessionMeta, error) {
	v, closer, err := l.db.Get(metaKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return events.SessionMeta{}, fmt.Errorf("%w: %s", events.ErrNoSession, id)
	}
	if err != nil {
		return events.SessionMeta{}, storageErr(id, 0, err)
	}
	defer closer.Close()
	return decodeMeta(id, v)
}

func decodeMeta(id string, v []byte) (events.SessionMeta, error) {
	var m events.SessionMeta
	if err := events.DecodeMeta(v, &m); err != nil {
		return events.SessionMeta{}, &events.CorruptError{Session: id, Key: string(metaKey(id)), Err: err}
	}
	if m.ID != id {
		return events.SessionMeta{}, &events.CorruptError{Session: id, Key: string(metaKey(id)),
			Err: fmt.Errorf("metadata names session %q", m.ID)}
	}
	return m, nil
}

// state returns the cached state of session id, loading its metadata if
// needed; l.mu must be held. Unknown sessions are not cached.
func (l *Log) state(id string) (*state, error) {
	l.statesMu.Lock()
	st, ok := l.states[id]
	l.statesMu.Unlock()
	if ok {
		return st, nil
	}
	m, err := l.getMeta(id)
	if err != nil {
		return nil, err
	}
	l.statesMu.Lock()
	defer l.statesMu.Unlock()
	if st, ok := l.states[id]; ok {
		return st, nil
	}
	st = &state{parent: m.Parent, forkSeq: m.ForkSeq}
	l.states[id] = st
	return st, nil
}

// lastLocked returns the last seq of session id; l.mu and st.mu must be
// held. It loads it with a reverse seek the first time.
func (l *Log) lastLocked(id string, st *state) (uint64, error) {
	if st.loaded {
		return st.last, nil
	}
	prefix := eventPrefix(id)
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, fmt.Errorf("pebblelog: session %s: %w", id, err)
	}
	defer it.Close()
	last := st.forkSeq
	if it.Last() {
		k := it.Key()
		seq, ok := parseSeq(k, prefix)
		if !ok || seq <= st.forkSeq {
			return 0, &events.CorruptError{Session: id, Seq: st.forkSeq + 1, Key: string(k),
				Err: fmt.Errorf("malformed last key %q", k)}
		}
		last = seq
	}
	if err := it.Error(); err != nil {
		return 0, storageErr(id, st.forkSeq+1, err)
	}
	st.last, st.loaded = last, true
	return last, nil
}

func parseSeq(key, prefix []byte) (uint64, bool) {
	if len(key) != len(prefix)+8 || !bytes.HasPrefix(key, prefix) {
		return 0, false
	}
	seq := binary.BigEndian.Uint64(key[len(prefix):])
	return seq, seq != 0
}

// CreateSession implements events.Log.
func (l *Log) CreateSession(ctx context.Context, m events.SessionMeta) error {
	if err := m.Validate(); err != nil {
		return err
	}
	b, err := events.EncodeMeta(&m)
	if err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.RUnlock()
	l.metaMu.Lock()
	defer l.metaMu.Unlock()
	switch _, err := l.getMeta(m.ID); {
	case err == nil:
		return fmt.Errorf("%w: %s", events.ErrSessionExists, m.ID)
	case !errors.Is(err, events.ErrNoSession):
		return err // even corrupt metadata means the ID is taken
	}
	if m.Parent != "" {
		p, err := l.state(m.Parent)
		if err != nil {
			return fmt.Errorf("parent of session %s: %w", m.ID, err)
		}
		p.mu.Lock()
		last, err := l.lastLocked(m.Parent, p)
		p.mu.Unlock()
		if err != nil {
			return err
		}
		if err := logcore.CheckForkPoint(&m, last); err != nil {
			return err
		}
	}
	if err := l.db.Set(metaKey(m.ID), b, l.wopts); err != nil {
		return fmt.Errorf("pebblelog: create session %s: %w", m.ID, err)
	}
	return nil
}

// UpdateSession implements events.Log. If the stored metadata is corrupt it
// returns the *events.CorruptError and leaves it as it is.
func (l *Log) UpdateSession(ctx context.Context, m events.SessionMeta) error {
	if err := m.Validate(); err != nil {
		return err
	}
	b, err := events.EncodeMeta(&m)
	if err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.RUnlock()
	l.metaMu.Lock()
	defer l.metaMu.Unlock()
	old, err := l.getMeta(m.ID)
	if err != nil {
		return err
	}
	if err := logcore.CheckUpdate(&old, &m); err != nil {
		return err
	}
	if err := l.db.Set(metaKey(m.ID), b, l.wopts); err != nil {
		return fmt.Errorf("pebblelog: update session %s: %w", m.ID, err)
	}
	return nil
}

// Session implements events.Log.
func (l *Log) Session(ctx context.Context, id string) (events.SessionMeta, error) {
	if err := events.ValidSessionID(id); err != nil {
		return events.SessionMeta{}, err
	}
	if err := l.begin(ctx); err != nil {
		return events.SessionMeta{}, err
	}
	defer l.mu.RUnlock()
	return l.getMeta(id)
}

// Sessions implements events.Log.
func (l *Log) Sessions(ctx context.Context) ([]events.SessionMeta, error) {
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
	defer l.mu.RUnlock()
	prefix := []byte("m/")
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("pebblelog: list sessions: %w", err)
	}
	defer it.Close()
	var out []events.SessionMeta
	for ok := it.First(); ok; ok = it.Next() {
		id := string(it.Key()[len(prefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, storageErr(id, 0, err)
		}
		m, err := decodeMeta(id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("pebblelog: list sessions: %w", err)
	}
	return out, nil
}

// LastSeq implements events.Log.
func (l *Log) LastSeq(ctx context.Context, id string) (uint64, error) {
	if err := events.ValidSessionID(id); err != nil {
		return 0, err
	}
	if err := l.begin(ctx); err != nil {
		return 0, err
	}
	defer l.mu.RUnlock()
	st, err := l.state(id)
	if err != nil {
		return 0, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return l.lastLocked(id, st)
}

// Append implements events.Log. Appends to one session are serialized;
// appends to different sessions proceed in parallel and share fsyncs through
// Pebble's commit pipeline.
func (l *Log) Append(ctx context.Context, id string, expectedLast uint64, batch []events.Event) error {
	return l.append(ctx, id, expectedLast, batch, events.ValidateBatch)
}

// AppendTrusted implements events.TrustedAppender: Append without the JSON
// check of the payloads.
func (l *Log) AppendTrusted(ctx context.Context, id string, expectedLast uint64, batch []events.Event) error {
	return l.append(ctx, id, expectedLast, batch, events.ValidateTrustedBatch)
}

func (l *Log) append(ctx context.Context, id string, expectedLast uint64, batch []events.Event, validate func(string, uint64, []events.Event) error) error {
	if err := events.ValidSessionID(id); err != nil {
		return err
	}
	if err := validate(id, expectedLast, batch); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.RUnlock()
	st, err := l.state(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	last, err := l.lastLocked(id, st)
	if err != nil {
		return err
	}
	write, err := logcore.CheckAppend(id, last, expectedLast, batch, l.storedFunc(id, st))
	if err != nil || !write {
		return err
	}

	keyLen := len(id) + 3 + 8
	size := 16 // batch header
	for i := range batch {
		size += keyLen + events.EncodedLen(&batch[i]) + 2*binary.MaxVarintLen32 + 1
	}
	b := l.db.NewBatchWithSize(size)
	defer b.Close()
	for i := range batch {
		e := &batch[i]
		op := b.SetDeferred(keyLen, events.EncodedLen(e))
		eventKey(op.Key[:0], id, e.Seq)
		if v := events.AppendEncode(op.Value[:0], e); len(v) != len(op.Value) {
			panic(fmt.Sprintf("pebblelog: EncodedLen %d != encoded length %d", len(op.Value), len(v)))
		}
		if err := op.Finish(); err != nil {
			return fmt.Errorf("pebblelog: append to session %s: %w", id, err)
		}
	}
	if err := b.Commit(l.wopts); err != nil {
		st.loaded = false // the batch may or may not have landed: reload
		return fmt.Errorf("pebblelog: append to session %s: %w", id, err)
	}
	st.last = expectedLast + uint64(len(batch))
	return nil
}

// storedFunc returns a logcore.StoredFunc reading the history of session
// id; l.mu must be held while it is called.
func (l *Log) storedFunc(id string, st *state) logcore.StoredFunc {
	return func(seq uint64) ([]byte, string, error) {
		owner, s := id, st
		for seq <= s.forkSeq && s.parent != "" {
			p, err := l.state(s.parent)
			if err != nil {
				return nil, s.parent, err
			}
			owner, s = s.parent, p
		}
		v, closer, err := l.db.Get(eventKey(nil, owner, seq))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, owner, nil
		}
		if err != nil {
			return nil, owner, storageErr(owner, seq, err)
		}
		defer closer.Close()
		return bytes.Clone(v), owner, nil
	}
}

// chain returns the metadata chain of session id (see logcore.Plan); l.mu
// must be held.
func (l *Log) chain(id string) ([]events.SessionMeta, error) {
	var chain []events.SessionMeta
	for {
		st, err := l.state(id)
		if err != nil {
			return nil, err
		}
		chain = append(chain, events.SessionMeta{ID: id, Parent: st.parent, ForkSeq: st.forkSeq})
		if st.parent == "" {
			return chain, nil
		}
		id = st.parent
	}
}

// Read implements events.Log. Each yielded Event is freshly decoded and
// owned by the caller. Besides checksums, Read checks that the stored seqs
// have no gaps and match the keys they are stored under.
func (l *Log) Read(ctx context.Context, id string, from uint64) iter.Seq2[events.Event, error] {
	return logcore.ReadVia(func(fn func(*events.Event) error) error {
		var dec events.Decoder
		return l.scan(ctx, id, from, &dec, false, fn)
	})
}

// Scan implements events.Log, with the checks Read makes. Each event is
// decoded in place from the value of Pebble's iterator (the memtable or
// the cached block that holds it), so fn's Payload aliases Pebble's memory.
// While fn runs, that iterator stays open even if Close is called: Close
// then leaves the iterator and the database for the Scan to close when fn
// returns (see Close).
func (l *Log) Scan(ctx context.Context, id string, from uint64, fn func(*events.Event) error) error {
	var dec events.Decoder
	return l.scan(ctx, id, from, &dec, true, fn)
}

func (l *Log) scan(ctx context.Context, id string, from uint64, dec *events.Decoder, borrow bool, fn func(*events.Event) error) error {
	if err := events.ValidSessionID(id); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	chain, err := l.chain(id)
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	var e events.Event
	for _, seg := range logcore.Plan(chain, from) {
		if err := l.scanSegment(ctx, seg, dec, borrow, &e, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanIter is the iterator of a Read or Scan in progress.
type scanIter struct {
	it *pebble.Iterator
	// owned is set for a Scan's iterator: Close does not close it, the
	// Scan does (closeIter), since fn may hold an event borrowed from it
	// when Close is called. A Read's iterator is closed by Close.
	owned bool
}

// scanSegment calls fn with each event of seg, decoded into *e: in place
// (borrow, for Scan) or into copies (for Read).
//
// Read steps its iterator with l.mu held shared, so Close cannot close it
// meanwhile, and calls fn without it. Scan takes no lock per event: its
// iterator is its own (Close leaves it open, and the database too, until
// the Scan closes it), and it checks the closed flag before each step.
func (l *Log) scanSegment(ctx context.Context, seg logcore.Segment, dec *events.Decoder, borrow bool, e *events.Event, fn func(*events.Event) error) error {
	prefix := eventPrefix(seg.Session)
	upper := prefixEnd(prefix)
	if seg.To != math.MaxUint64 {
		upper = eventKey(nil, seg.Session, seg.To+1)
	}
	lower := eventKey(nil, seg.Session, seg.From)
	if seg.From == 1 {
		lower = prefix // so that stray keys sorting before seq 1 are reported
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		l.mu.RUnlock()
		return fmt.Errorf("pebblelog: read session %s: %w", seg.Session, err)
	}
	si := &scanIter{it: it, owned: borrow}
	l.itersMu.Lock()
	l.iters[si] = struct{}{}
	l.itersMu.Unlock()
	defer l.closeIter(si)
	locked := true // l.mu is held shared

	valid := it.First()
	for want := seg.From; ; want++ {
		var err error
		switch {
		case valid:
			err = decodeAt(dec, borrow, seg.Session, prefix, want, it, e)
		case it.Error() != nil:
			err = storageErr(seg.Session, want, it.Error())
		case seg.To != math.MaxUint64 && want <= seg.To:
			err = &events.CorruptError{Session: seg.Session, Seq: want, Err: logcore.ErrMissing}
		}
		if locked {
			l.mu.RUnlock()
			locked = false
		}
		if err != nil {
			return err
		}
		if !valid {
			return nil
		}
		if err := fn(e); err != nil {
			return err
		}
		if borrow {
			if err := ctx.Err(); err != nil {
				return err
			}
			if l.closed.Load() {
				return events.ErrClosed
			}
		} else {
			if err := l.begin(ctx); err != nil {
				return err
			}
			locked = true
		}
		valid = it.Next()
	}
}

// decodeAt decodes the iterator's current entry, which should be event want
// of session id, into *e: with DecodeBorrowed if borrow.
func decodeAt(dec *events.Decoder, borrow bool, id string, prefix []byte, want uint64, it *pebble.Iterator, e *events.Event) error {
	k := it.Key()
	seq, ok := parseSeq(k, prefix)
	switch {
	case !ok:
		return &events.CorruptError{Session: id, Seq: want, Key: string(k),
			Err: fmt.Errorf("malformed key %q", k)}
	case seq != want:
		return &events.CorruptError{Session: id, Seq: want, Key: string(eventKey(nil, id, want)),
			Err: fmt.Errorf("%w (next stored is seq %d)", logcore.ErrMissing, seq)}
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return storageErr(id, seq, err)
	}
	if borrow {
		err = dec.DecodeBorrowed(v, e)
	} else {
		err = dec.Decode(v, e)
	}
	if err != nil {
		return &events.CorruptError{Session: id, Seq: seq, Key: string(k), Err: err}
	}
	if e.Seq != seq {
		return &events.CorruptError{Session: id, Seq: seq, Key: string(k),
			Err: fmt.Errorf("stored event has seq %d", e.Seq)}
	}
	e.Session = id
	return nil
}

// closeIter closes si's iterator unless Close already has. After Close,
// the last Scan to close its iterator closes the database.
func (l *Log) closeIter(si *scanIter) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.itersMu.Lock()
	defer l.itersMu.Unlock()
	_, open := l.iters[si]
	delete(l.iters, si)
	if open {
		_ = si.it.Close()
	}
	// Only Scans' iterators are left once closed is set, and only the last
	// of them sees none left.
	if open && si.owned && l.closed.Load() && len(l.iters) == 0 {
		_ = l.db.Close()
	}
}

// PutCheckpoint implements events.Log. The checkpoint is one Pebble batch,
// committed with pebble.Sync unless Options.NoSync.
func (l *Log) PutCheckpoint(ctx context.Context, id string, cp events.Checkpoint) error {
	if err := events.ValidSessionID(id); err != nil {
		return err
	}
	if err := cp.Validate(); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.RUnlock()
	st, err := l.state(id)
	if err != nil {
		return err
	}
	// The last seq only grows, so the check stays true after the unlock:
	// the write need not hold up the session's Appends.
	st.mu.Lock()
	last, err := l.lastLocked(id, st)
	st.mu.Unlock()
	if err != nil {
		return err
	}
	if err := logcore.CheckCheckpoint(id, &cp, last); err != nil {
		return err
	}
	keyLen, valLen := len(id)+3+8, events.EncodedCheckpointLen(&cp)
	b := l.db.NewBatchWithSize(16 + keyLen + valLen + 2*binary.MaxVarintLen32 + 1)
	defer b.Close()
	op := b.SetDeferred(keyLen, valLen)
	checkpointKey(op.Key[:0], id, cp.Seq)
	if v := events.AppendEncodeCheckpoint(op.Value[:0], &cp); len(v) != valLen {
		panic(fmt.Sprintf("pebblelog: EncodedCheckpointLen %d != encoded length %d", valLen, len(v)))
	}
	if err := op.Finish(); err != nil {
		return fmt.Errorf("pebblelog: checkpoint of session %s at seq %d: %w", id, cp.Seq, err)
	}
	if err := b.Commit(l.wopts); err != nil {
		return fmt.Errorf("pebblelog: checkpoint of session %s at seq %d: %w", id, cp.Seq, err)
	}
	return nil
}

// LatestCheckpoint implements events.Log.
func (l *Log) LatestCheckpoint(ctx context.Context, id string, atOrBefore uint64) (events.Checkpoint, error) {
	if err := events.ValidSessionID(id); err != nil {
		return events.Checkpoint{}, err
	}
	if err := l.begin(ctx); err != nil {
		return events.Checkpoint{}, err
	}
	defer l.mu.RUnlock()
	chain, err := l.chain(id)
	if err != nil {
		return events.Checkpoint{}, err
	}
	f, ok, err := logcore.FindCheckpoint(chain, atOrBefore, l.seekCheckpoint)
	if err != nil {
		return events.Checkpoint{}, err
	}
	if !ok {
		return events.Checkpoint{}, logcore.NoCheckpoint(id, atOrBefore)
	}
	return logcore.DecodeCheckpoint(f.Session, f.Seq, string(checkpointKey(nil, f.Session, f.Seq)), f.Stored, true)
}

// seekCheckpoint is the Log's logcore.SeekFunc: one reverse seek (Last
// within bounds ending after atOrBefore); l.mu must be held.
func (l *Log) seekCheckpoint(id string, atOrBefore uint64) (uint64, []byte, bool, error) {
	prefix := checkpointPrefix(id)
	upper := prefixEnd(prefix)
	if atOrBefore != math.MaxUint64 {
		upper = checkpointKey(nil, id, atOrBefore+1)
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return 0, nil, false, fmt.Errorf("pebblelog: session %s: %w", id, err)
	}
	defer it.Close()
	if !it.Last() {
		if err := it.Error(); err != nil {
			return 0, nil, false, checkpointErr(id, atOrBefore, err)
		}
		return 0, nil, false, nil
	}
	k := it.Key()
	seq, ok := parseSeq(k, prefix)
	if !ok {
		return 0, nil, false, logcore.CorruptCheckpoint(id, 0, string(k), fmt.Errorf("malformed key %q", k))
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return 0, nil, false, checkpointErr(id, seq, err)
	}
	return seq, bytes.Clone(v), true, nil
}

// Checkpoints implements events.Log.
func (l *Log) Checkpoints(ctx context.Context, id string) ([]events.Checkpoint, error) {
	if err := events.ValidSessionID(id); err != nil {
		return nil, err
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
	defer l.mu.RUnlock()
	if _, err := l.state(id); err != nil {
		return nil, err
	}
	prefix := checkpointPrefix(id)
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("pebblelog: session %s: %w", id, err)
	}
	defer it.Close()
	var out []events.Checkpoint
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		seq, ok := parseSeq(k, prefix)
		if !ok {
			return nil, logcore.CorruptCheckpoint(id, 0, string(k), fmt.Errorf("malformed key %q", k))
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, checkpointErr(id, seq, err)
		}
		cp, err := logcore.DecodeCheckpoint(id, seq, string(k), v, false)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("pebblelog: checkpoints of session %s: %w", id, err)
	}
	return out, nil
}

// Close implements events.Log. It waits for Appends and metadata writes in
// progress, stops Reads and Scans in progress (they return ErrClosed) and
// closes the database. A Scan in progress is the exception: its fn may
// hold an event borrowed from Pebble's memory (fn may even be what called
// Close), so Close leaves its iterator, and so the database, open; the
// Scan stops before its next event, and the last one closes the database
// (any error from that late close is dropped). Close does not wait for it.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return events.ErrClosed
	}
	l.closed.Store(true)
	var errs []error
	l.itersMu.Lock()
	for si := range l.iters {
		if !si.owned {
			errs = append(errs, si.it.Close())
			delete(l.iters, si)
		}
	}
	scans := len(l.iters)
	l.itersMu.Unlock()
	if scans == 0 {
		errs = append(errs, l.db.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pebblelog: close: %w", err)
	}
	return nil
}
