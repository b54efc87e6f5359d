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
// What was written does not live in the WAL alone for long: an
// UpdateSession that ends a session (any status but running) and a clean
// Close flush the memtable to a table, so a damaged WAL cannot take a
// session that ended, nor the last seq its metadata records
// (events.CheckEnd compares it with the log). A WAL damaged after a crash
// can still take the last events of a session that was running: Pebble
// reads a WAL up to its first bad record and takes that for a torn end.
//
// Storage faults are errors, never panics: a corrupt block read is a
// *events.CorruptError naming the session, the seq and the table
// ("file 000012"); a damaged store found at Open (a MANIFEST, a WAL) is a
// *CorruptFileError; both wrap events.ErrCorrupt. A write Pebble cannot
// recover from (the WAL on a failing disk, or on a full one for longer
// than Options.FullDiskWait) stops the Log with ErrFailed instead of
// exiting the process, and the Log keeps
// Options.MinFreeSpace free so that a full disk is usually met as a
// refused Append (syscall.ENOSPC) while the Log goes on; a ballast file
// (BallastName) holds back room to record sessions' ends when another
// writer fills the disk. Options.ReadOnly
// opens a store without changing a byte of it, on a read-only folder too.
//
//	log, err := pebblelog.Open(dir, pebblelog.Options{Logger: logger})
//	if err != nil { ... }
//	defer log.Close()
//
//	ro, err := pebblelog.Open(dir, pebblelog.Options{ReadOnly: true}) // verify, report, export
package pebblelog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/internal/logcore"
	"github.com/corpsim/corpsim/sim/workers"
)

// Options configures Open. The zero value means defaults: the OS file
// system, a sync on every write, a block cache of DefaultCacheSize, read
// and write, and Pebble's messages dropped.
type Options struct {
	// FS is the file system the database lives on; nil means vfs.Default.
	// Tests use vfs.NewMem or vfs.NewCrashableMem.
	FS vfs.FS
	// NoSync makes writes skip the fsync. Appends are then atomic but not
	// durable: a machine crash may lose the most recently acknowledged
	// batches. Only for throwaway logs and benchmarks.
	NoSync bool
	// CacheSize is the size in bytes of Pebble's block cache; 0 means
	// DefaultCacheSize. Pebble charges its memtables (up to two of
	// MemTableSize each while one flushes) to the same budget, so Pebble's
	// own default of 8 MiB can leave no room for blocks at all.
	CacheSize int64
	// ReadOnly opens an existing log for reading only: it never writes,
	// renames or deletes a file of the store, works on a read-only folder,
	// and a WAL left by a crash is replayed into memory only (the next
	// read-write Open replays it for good). Writes return an error
	// wrapping ErrReadOnly. On Linux any number of read-only Logs may share
	// a folder, but not with a writer: Open fails while one holds it, and a
	// writer cannot open it while they do.
	ReadOnly bool
	// MinFreeSpace is the free space in bytes the Log keeps on its disk: an
	// Append, a checkpoint or a new session that would leave less is
	// refused with an error wrapping syscall.ENOSPC, before Pebble meets a
	// full disk; the last quarter of it is kept for metadata updates, so
	// that a session refused can still be recorded interrupted, and is
	// also held in a ballast file (BallastName) for a disk that another
	// writer fills. 0 means
	// DefaultMinFreeSpace; a negative value turns the check off.
	MinFreeSpace int64
	// FullDiskWait is how long a write of the WAL (or of the MANIFEST)
	// that meets a full disk waits for room, trying again every
	// FullDiskPoll, before the Log stops (ErrFailed). Pebble stops its
	// database at such a write (and can end the process, when it met the
	// full disk switching to a new WAL file); waiting keeps the Log going
	// when another writer fills the disk, once there is room again.
	// Meanwhile the writes that Pebble took wait with it, the Log refuses
	// new ones for room (syscall.ENOSPC, as on a disk that filled slowly,
	// unless MinFreeSpace turned its check off) and reads go on. 0 means
	// until the Log closes (Close ends the wait); a negative value: no
	// wait.
	FullDiskWait time.Duration
	// Logger receives Pebble's messages (Info, Error, and the fatal ones
	// that stop the Log; see ErrFailed); nil means hclog.NewNullLogger().
	Logger hclog.Logger
}

// FullDiskPoll is how often a write of the WAL waiting for room on a full
// disk tries again (Options.FullDiskWait).
const FullDiskPoll = 100 * time.Millisecond

// MemTableSize is the size of Pebble's memtables. At Pebble's default of
// 4 MiB, flushes and compactions took 2.3 s of CPU in a 3.3 s durable
// support-desk-bench run on 2 cores, more than the engine; at 16 MiB, with
// compactions started at 8 L0 files instead of 4, the run took 2.1 s
// (BENCHMARKS.md, 2026-12-02).
const MemTableSize = 16 << 20

// BlockSize is the target size of a table's data block before compression,
// at every level. Sessions are read by scanning their keys in order
// (replay, verify, the analyses), and each block read from a table is a new
// allocation in the block cache: at Pebble's default of 4 KiB, a replay of
// a 488,308-event session spent 170 ms of its 1.1 s of CPU allocating
// blocks (C calloc), and took 0.65 s; at 16, 32 and 64 KiB it took 0.52,
// 0.49 and 0.48 s (BENCHMARKS.md, 2026-12-03). A point read, rare here,
// reads one larger block. Tables written before keep their blocks until a
// compaction rewrites them.
const BlockSize = 32 << 10

// DefaultCacheSize is the block cache size used when Options.CacheSize is
// 0: 64 MiB for blocks beside the two memtables Pebble charges to it.
const DefaultCacheSize = 64<<20 + 2*MemTableSize

// Log is a durable events.Log on Pebble. It is safe for concurrent use.
type Log struct {
	db       *pebble.DB
	wopts    *pebble.WriteOptions
	readOnly bool
	fs       vfs.FS
	dir      string
	lock     *pebble.Lock // the folder's, held from Open to the database's close
	sink     *sink        // Pebble's messages; the first fatal failure
	space    *space       // keeps writes away from a full disk
	// wedged is set when Pebble panicked in a write (see write): its
	// commit pipeline may hold a lock for good, so Close leaves the
	// database open rather than wait for it.
	wedged atomic.Bool

	// mu is held shared by every operation that touches db (a Read holds it
	// only while it steps its iterator, not while it yields) and exclusively
	// by Close, so db is never used after it is closed. A Scan is the
	// exception: it steps an iterator of its own without mu (see Close).
	mu     sync.RWMutex
	closed atomic.Bool // set by Close, with mu held exclusively

	// metaMu serializes writes of session metadata.
	metaMu sync.Mutex
	// ends shares the flushes of sessions that end at once.
	ends workers.Group

	statesMu sync.Mutex
	states   map[string]*state // sessions known to exist

	itersMu sync.Mutex
	iters   map[*scanIter]struct{} // iterators of Reads and Scans in progress
}

var (
	_ events.Log             = (*Log)(nil)
	_ events.TrustedAppender = (*Log)(nil)
	_ events.Founder         = (*Log)(nil)
	_ events.Pipeliner       = (*Log)(nil)
	_ events.Deleter         = (*Log)(nil)
)

// state is the cached state of a session known to exist.
type state struct {
	parent  string // immutable
	forkSeq uint64 // immutable

	mu      sync.Mutex // serializes Appends to the session
	loaded  bool       // last is valid
	last    uint64
	deleted bool // DeleteSession removed the session: nothing more is written to it
	// writing is held shared by a checkpoint's write, from its check to
	// its commit, and exclusively by DeleteSession: no checkpoint lands
	// after the session is gone.
	writing sync.RWMutex
}

// Open opens (creating if needed, unless opts.ReadOnly) the log stored in
// directory dir. A read-write Open of a folder whose disk has less free
// space than replaying its WAL needs fails at once with an error wrapping
// syscall.ENOSPC (Pebble would retry the flush without end); a read-only
// Open needs none.
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
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := newSink(logger)
	reserve := uint64(DefaultMinFreeSpace)
	switch {
	case opts.MinFreeSpace < 0 || opts.ReadOnly:
		reserve = 0
	case opts.MinFreeSpace > 0:
		reserve = uint64(opts.MinFreeSpace)
	}
	l := &Log{
		wopts:    pebble.Sync,
		readOnly: opts.ReadOnly,
		fs:       fs,
		dir:      dir,
		sink:     s,
		space: &space{fs: fs, dir: dir, reserve: reserve, log: logger, walWait: opts.FullDiskWait, walStop: make(chan struct{}),
			waits: make(chan struct{}), found: make(chan struct{}), nudge: make(chan struct{}, 1), stop: make(chan struct{})},
		states: make(map[string]*state),
		iters:  make(map[*scanIter]struct{}),
	}
	s.space = l.space
	if !opts.ReadOnly {
		s.record = func() error { return writeCloseRecord(fs, dir) }
	}
	if opts.NoSync {
		l.wopts = pebble.NoSync
	}
	if err := l.open(cacheSize); err != nil {
		return nil, fmt.Errorf("pebblelog: open %s: %w", dir, err)
	}
	return l, nil
}

// open takes the folder's lock, checks the store, and opens the database.
func (l *Log) open(cacheSize int64) (err error) {
	po := &pebble.Options{
		FS:                 l.fs,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             l.sink,
		EventListener:      l.sink.listener(),
		CacheSize:          cacheSize,
		ReadOnly:           l.readOnly,
		// An append-only log of sequential keys: with Pebble's 4 MiB
		// memtables and 4-file L0 trigger, a 200,000-ticket durable run
		// spent more CPU flushing and recompacting (each L0 file spans
		// the metadata, events and checkpoint keys, so none moves down
		// whole) than the engine did. See MemTableSize.
		MemTableSize:          MemTableSize,
		L0CompactionThreshold: 8,
		L0StopWritesThreshold: 24,
		// Pebble's default of 2 memtables' worth stalls a flush asked
		// (AsyncFlush, a session's end) while another flush runs, holding
		// the commit pipeline; behind a flush that waits for room on a
		// full disk (roomFS), that stall held every write and Close.
		MemTableStopWritesThreshold: 4,
	}
	for i := range po.Levels {
		po.Levels[i].BlockSize = BlockSize
	}
	if l.readOnly {
		po.FS = readLockFS(l.fs)
	} else {
		if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
			return err
		}
		po.FS = roomFS{FS: l.fs, space: l.space}
	}
	// The Log holds the lock itself, so that the record of a clean close
	// is checked, and written, with no other writer in the folder.
	l.lock, err = pebble.LockDirectory(l.dir, po.FS)
	if err != nil {
		return err
	}
	po.Lock = l.lock
	defer func() {
		if err != nil {
			_ = l.lock.Close()
		}
	}()
	if err := checkManifestMarker(l.fs, l.dir); err != nil {
		return err
	}
	recorded, err := checkCloseRecord(l.fs, l.dir, l.sink.log)
	if err != nil {
		return err
	}
	var putBack func()
	if !l.readOnly {
		// Checked first: a refusal for room leaves the record in place.
		if err := checkOpenSpace(l.fs, l.dir); err != nil {
			return err
		}
		if recorded {
			if putBack, err = removeCloseRecord(l.fs, l.dir); err != nil {
				return err
			}
		}
	}
	l.db, err = pebble.Open(l.dir, po)
	if err != nil {
		if putBack != nil {
			putBack()
		}
		if pebble.IsCorruptionError(err) {
			return corruptOpen(l.fs, l.dir, err)
		}
		if errors.Is(err, pebble.ErrDBNotPristine) {
			// Only a store without its format-version marker is opened as
			// one being made; with data in it (a WAL's), the marker was
			// lost (marker.go).
			return &CorruptFileError{Err: fmt.Errorf("the store's format-version marker (a file named marker.format-version.NNNNNN.NNN) is missing while it holds data (%w); nothing was changed: restore it from a copy of the folder", err)}
		}
		if tableGone(err) {
			return &CorruptFileError{Err: fmt.Errorf("a table the store's MANIFEST lists is missing or not the size it was written with (%w); nothing was changed: restore the folder from a copy", err)}
		}
		return err
	}
	if err := l.sink.failure(); err != nil {
		l.space.halt()
		_ = l.db.Close()
		return err
	}
	if !l.readOnly {
		l.space.openBallast()
	}
	return nil
}

// storageErr wraps an error from Pebble reading event seq of session id (seq
// 0: its metadata). Pebble's own corruption errors (failed block checksums)
// become a *events.CorruptError, like corruption found by the codec, that
// names the damaged file.
func storageErr(id string, seq uint64, err error) error {
	if pebble.IsCorruptionError(err) {
		return &events.CorruptError{Session: id, Seq: seq, Err: namedCorruption(err)}
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
		return logcore.CorruptCheckpoint(id, seq, "", namedCorruption(err))
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
	if err := l.sink.failure(); err != nil {
		l.mu.RUnlock()
		return err
	}
	return nil
}

// beginWrite is begin for a write: it refuses one on a read-only Log.
func (l *Log) beginWrite(ctx context.Context) error {
	if l.readOnly {
		if err := ctx.Err(); err != nil {
			return err
		}
		return ErrReadOnly
	}
	return l.begin(ctx)
}

// write runs f, a write to Pebble, and returns its error, or the failure
// Pebble reported through Fatalf while it ran (Pebble's Commit reports a
// failed WAL write or sync to the logger and returns nil), or the panic
// Pebble raised with an error (a WAL write after a failed one, a failed
// WAL rotation), which becomes the Log's failure. Other panics, Pebble's
// broken invariants, go on.
func (l *Log) write(f func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		perr, ok := r.(error)
		if !ok {
			panic(r)
		}
		l.wedged.Store(true)
		l.sink.fail("panic in a write: "+perr.Error(), perr)
		err = l.sink.failure()
	}()
	if err := f(); err != nil {
		return err
	}
	return l.sink.failure()
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
	// The metadata is read and the entry made under statesMu; a session
	// being deleted stays cached from before DeleteSession's write to
	// after it, so a state cached is never of a session deleted
	// meanwhile.
	l.statesMu.Lock()
	defer l.statesMu.Unlock()
	if st, ok := l.states[id]; ok {
		return st, nil
	}
	m, err := l.getMeta(id)
	if err != nil {
		return nil, err
	}
	st := &state{parent: m.Parent, forkSeq: m.ForkSeq}
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
		return 0, l.locateDamage(id, st, err)
	}
	st.last, st.loaded = last, true
	return last, nil
}

// locateDamage returns the error of a read of session id's last event that
// failed with err (a damaged block), naming the first of its events that
// cannot be read, as a read from its first event would: the reverse seek
// knows only that some block near the end is damaged. It reads the session
// forward, so only on this error path.
func (l *Log) locateDamage(id string, st *state, err error) error {
	prefix := eventPrefix(id)
	it, ierr := l.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if ierr != nil {
		return storageErr(id, st.forkSeq+1, err)
	}
	defer it.Close()
	good := st.forkSeq
	for valid := it.First(); valid; valid = it.Next() {
		seq, ok := parseSeq(it.Key(), prefix)
		if !ok || seq != good+1 {
			break
		}
		if _, verr := it.ValueAndErr(); verr != nil {
			return storageErr(id, seq, verr)
		}
		good = seq
	}
	if ferr := it.Error(); ferr != nil {
		err = ferr
	}
	return storageErr(id, good+1, err)
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
	return l.create(ctx, m, nil)
}

// CreateSessionWith implements events.Founder: the metadata and the first
// batch go into one Pebble batch, committed with one sync.
func (l *Log) CreateSessionWith(ctx context.Context, m events.SessionMeta, batch []events.Event) error {
	if err := events.ValidateBatch(m.ID, m.ForkSeq, batch); err != nil {
		return err
	}
	return l.create(ctx, m, batch)
}

// create stores session m and, if batch is not empty, batch as its first
// events (already validated), in one synced write.
func (l *Log) create(ctx context.Context, m events.SessionMeta, batch []events.Event) error {
	if err := m.Validate(); err != nil {
		return err
	}
	b, err := events.EncodeMeta(&m)
	if err != nil {
		return err
	}
	if err := l.beginWrite(ctx); err != nil {
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
		if ce := (*events.CorruptError)(nil); errors.As(err, &ce) && ce.Session == m.Parent && m.ForkSeq < ce.Seq {
			// The parent is damaged after the fork point (the error names
			// the first event a read cannot read, see locateDamage): the
			// fork shares only what is whole.
			last, err = m.ForkSeq, nil
		}
		if err != nil {
			return err
		}
		if err := logcore.CheckForkPoint(&m, last); err != nil {
			return err
		}
	}
	size := 16 + len(metaKey(m.ID)) + len(b) + 2*binary.MaxVarintLen32 + 1 + eventsSize(m.ID, batch)
	if err := l.space.need(uint64(size), 4, "new session", true); err != nil {
		return fmt.Errorf("pebblelog: create session %s: %w", m.ID, err)
	}
	wb := l.db.NewBatchWithSize(size)
	defer wb.Close()
	if err := wb.Set(metaKey(m.ID), b, nil); err != nil {
		return fmt.Errorf("pebblelog: create session %s: %w", m.ID, err)
	}
	if err := putEvents(wb, m.ID, batch); err != nil {
		return fmt.Errorf("pebblelog: create session %s: %w", m.ID, err)
	}
	if err := l.write(func() error { return wb.Commit(l.wopts) }); err != nil {
		return fmt.Errorf("pebblelog: create session %s: %w", m.ID, err)
	}
	return nil
}

// eventsSize is the size of a Pebble batch holding batch's events of session id.
func eventsSize(id string, batch []events.Event) int {
	keyLen := len(id) + 3 + 8
	size := 0
	for i := range batch {
		size += keyLen + events.EncodedLen(&batch[i]) + 2*binary.MaxVarintLen32 + 1
	}
	return size
}

// putEvents adds batch's events of session id to b, each encoded in place.
func putEvents(b *pebble.Batch, id string, batch []events.Event) error {
	keyLen := len(id) + 3 + 8
	for i := range batch {
		e := &batch[i]
		op := b.SetDeferred(keyLen, events.EncodedLen(e))
		eventKey(op.Key[:0], id, e.Seq)
		if v := events.AppendEncode(op.Value[:0], e); len(v) != len(op.Value) {
			panic(fmt.Sprintf("pebblelog: EncodedLen %d != encoded length %d", len(op.Value), len(v)))
		}
		if err := op.Finish(); err != nil {
			return err
		}
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
	if err := l.beginWrite(ctx); err != nil {
		return err
	}
	defer l.mu.RUnlock()
	if err := l.setMeta(&m, b); err != nil {
		return err
	}
	if m.Status != events.StatusRunning && !l.noSync() {
		// The session's end, and the last seq its metadata records, go to
		// a table: a WAL damaged later cannot take them. Sessions that
		// end at once share a flush.
		if err := l.ends.Do(l.flush); err != nil {
			if ferr := l.sink.failure(); ferr != nil {
				return fmt.Errorf("pebblelog: update session %s: %w", m.ID, ferr)
			}
			l.sink.log.Warn("session end left in the WAL only: the flush failed", "session", m.ID, "error", err)
		}
	}
	return nil
}

// setMeta stores m, encoded as b, over the session's metadata, if
// logcore.CheckUpdate allows it; l.mu must be held.
func (l *Log) setMeta(m *events.SessionMeta, b []byte) error {
	l.metaMu.Lock()
	defer l.metaMu.Unlock()
	old, err := l.getMeta(m.ID)
	if err != nil {
		return err
	}
	if err := logcore.CheckUpdate(&old, m); err != nil {
		return err
	}
	if err := l.space.need(uint64(len(b)), 1, "metadata update", true); err != nil {
		return fmt.Errorf("pebblelog: update session %s: %w", m.ID, err)
	}
	if err := l.write(func() error { return l.db.Set(metaKey(m.ID), b, l.wopts) }); err != nil {
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
	var out []events.SessionMeta
	var damaged []error
	err := l.eachMeta(func(_ string, m events.SessionMeta, err error) error {
		var ce *events.CorruptError
		switch {
		case errors.As(err, &ce):
			damaged = append(damaged, err) // the others are still listed
			return nil
		case err != nil:
			return err // not this session's: the store's
		}
		out = append(out, m)
		return nil
	})
	switch {
	case errors.Is(err, events.ErrCorrupt):
		// A damaged block of a table stopped the listing: the sessions
		// before it are whole (those after it cannot be reached).
		damaged = append(damaged, err)
	case err != nil:
		return nil, err
	}
	return out, events.Damaged(damaged)
}

// eachMeta calls fn with every session's ID and metadata, by ID, or the
// error of metadata it cannot read, and stops at the first error fn
// returns; l.mu must be held.
func (l *Log) eachMeta(fn func(id string, m events.SessionMeta, err error) error) error {
	return l.eachMetaRaw(func(id string, v []byte, err error) error {
		var m events.SessionMeta
		if err == nil {
			m, err = decodeMeta(id, v)
		}
		return fn(id, m, err)
	})
}

// eachMetaRaw is eachMeta with every session's stored metadata, not
// decoded (valid until fn returns), or the error of reading it.
func (l *Log) eachMetaRaw(fn func(id string, v []byte, err error) error) error {
	prefix := []byte("m/")
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("pebblelog: list sessions: %w", err)
	}
	defer it.Close()
	id := ""
	for ok := it.First(); ok; ok = it.Next() {
		id = string(it.Key()[len(prefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			err = storageErr(id, 0, err)
		}
		if err := fn(id, v, err); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		if pebble.IsCorruptionError(err) {
			// Said so that a list that stops here does not pass for whole.
			after := "no session is listed"
			if id != "" {
				after = "the sessions after " + id + " are not listed"
			}
			return fmt.Errorf("%s: %w", after, corruptFile(err))
		}
		return fmt.Errorf("pebblelog: list sessions (after %q): %w", id, err)
	}
	return nil
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
	durable, err := l.appendOrdered(ctx, id, expectedLast, batch, validate, false)
	if err != nil {
		return err
	}
	return durable()
}

// AppendPipelined implements events.Pipeliner. The batch is applied to
// Pebble without waiting for its WAL sync (a batch is visible before its
// sync in any case); durable waits for the sync. Pebble writes the WAL in
// the order batches are applied, and a synced write returns once the WAL
// is synced up to it, so a write that reached the disk has every batch
// ordered before it there too.
func (l *Log) AppendPipelined(ctx context.Context, id string, expectedLast uint64, batch []events.Event) (func() error, error) {
	return l.appendOrdered(ctx, id, expectedLast, batch, events.ValidateTrustedBatch, !l.noSync())
}

// appendOrdered checks and applies batch after expectedLast, holding the
// session's lock, and returns the wait for its sync: done before it
// returns unless pipelined. The shared lock of the Log is held until that
// wait returns, so Close waits for it.
func (l *Log) appendOrdered(ctx context.Context, id string, expectedLast uint64, batch []events.Event, validate func(string, uint64, []events.Event) error, pipelined bool) (durable func() error, err error) {
	if err := events.ValidSessionID(id); err != nil {
		return nil, err
	}
	if err := validate(id, expectedLast, batch); err != nil {
		return nil, err
	}
	if err := l.beginWrite(ctx); err != nil {
		return nil, err
	}
	handed := false // the shared lock, to the wait returned
	defer func() {
		if !handed { // a panic included
			l.mu.RUnlock()
		}
	}()
	st, b, err := l.applyBatch(id, expectedLast, batch, pipelined)
	if err != nil {
		return nil, err
	}
	if b == nil { // durable already, or nothing to write
		return func() error { return nil }, nil
	}
	handed = true
	return func() error {
		defer l.mu.RUnlock()
		defer b.Close()
		if err := l.write(b.SyncWait); err != nil {
			// A failed WAL write or sync, which Commit would have
			// reported to Fatalf (see write): the Log's failure, so that
			// nothing is written after it.
			l.sink.fail("pebble: fatal commit error: "+err.Error(), err)
			err = l.sink.failure()
			st.mu.Lock()
			st.loaded = false // the batch may or may not have landed: reload
			st.mu.Unlock()
			return fmt.Errorf("pebblelog: append to session %s: %w", id, err)
		}
		return nil
	}, nil
}

// applyBatch appends batch after expectedLast under the session's lock,
// with l.mu held shared: committed with the Log's write options, or, if
// pipelined, applied without waiting for its sync and returned for the
// caller to wait for and close. It returns a nil batch when there was
// nothing to write (the events are stored already).
func (l *Log) applyBatch(id string, expectedLast uint64, batch []events.Event, pipelined bool) (*state, *pebble.Batch, error) {
	st, err := l.state(id)
	if err != nil {
		return nil, nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.deleted {
		return nil, nil, fmt.Errorf("%w: %s (deleted)", events.ErrNoSession, id)
	}
	last, err := l.lastLocked(id, st)
	if err != nil {
		return nil, nil, err
	}
	write, err := logcore.CheckAppend(id, last, expectedLast, batch, l.storedFunc(id, st))
	if err != nil || !write {
		return nil, nil, err
	}

	size := 16 + eventsSize(id, batch) // and the batch header
	if err := l.space.need(uint64(size), 4, "append", false); err != nil {
		return nil, nil, fmt.Errorf("pebblelog: append to session %s: %w", id, err)
	}
	b := l.db.NewBatchWithSize(size)
	commit := func() error { return b.Commit(l.wopts) }
	tried, applied := false, false // pipelined: handed to Pebble; in its commit pipeline
	if pipelined {
		commit = func() error {
			tried = true
			err := l.db.ApplyNoSyncWait(b, l.wopts)
			applied = err == nil
			return err
		}
	}
	err = putEvents(b, id, batch)
	if err == nil {
		err = l.write(commit)
	}
	if err != nil {
		switch {
		case applied:
			// Applied, and then Pebble reported a failure: its sync
			// must be waited for before the batch is closed.
			_ = b.SyncWait()
			b.Close()
		case !tried:
			b.Close()
		}
		// Else a pipelined batch Pebble refused, or panicked on, is left
		// to the collector: it may still be in the commit pipeline.
		st.loaded = false // the batch may or may not have landed: reload
		return nil, nil, fmt.Errorf("pebblelog: append to session %s: %w", id, err)
	}
	st.last = expectedLast + uint64(len(batch))
	if !pipelined {
		b.Close()
		return st, nil, nil
	}
	return st, b, nil
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
		_ = l.closeDB()
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
	if err := l.beginWrite(ctx); err != nil {
		return err
	}
	defer l.mu.RUnlock()
	st, err := l.state(id)
	if err != nil {
		return err
	}
	// The last seq only grows, so the check stays true after the unlock:
	// the write need not hold up the session's Appends.
	st.writing.RLock()
	defer st.writing.RUnlock()
	st.mu.Lock()
	last, err := l.lastLocked(id, st)
	if st.deleted {
		err = fmt.Errorf("%w: %s (deleted)", events.ErrNoSession, id)
	}
	st.mu.Unlock()
	if err != nil {
		return err
	}
	if err := logcore.CheckCheckpoint(id, &cp, last); err != nil {
		return err
	}
	keyLen, valLen := len(id)+3+8, events.EncodedCheckpointLen(&cp)
	if err := l.space.need(uint64(keyLen+valLen), 4, "checkpoint", false); err != nil {
		return fmt.Errorf("pebblelog: checkpoint of session %s at seq %d: %w", id, cp.Seq, err)
	}
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
	if err := l.write(func() error { return b.Commit(l.wopts) }); err != nil {
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
	var damaged []error // each checkpoint that does not read: the others are listed
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		seq, ok := parseSeq(k, prefix)
		if !ok {
			damaged = append(damaged, logcore.CorruptCheckpoint(id, 0, string(k), fmt.Errorf("malformed key %q", k)))
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			if err = checkpointErr(id, seq, err); !errors.As(err, new(*events.CorruptError)) {
				return nil, err // not the checkpoint's: the store's
			}
			damaged = append(damaged, err)
			continue
		}
		cp, err := logcore.DecodeCheckpoint(id, seq, string(k), v, false)
		if err != nil {
			damaged = append(damaged, err)
			continue
		}
		out = append(out, cp)
	}
	if err := it.Error(); err != nil {
		// A damaged block of a table stops the iterator: the checkpoints
		// before it are whole (those after it cannot be reached).
		if err = checkpointErr(id, 0, err); !errors.As(err, new(*events.CorruptError)) {
			return nil, err
		}
		damaged = append(damaged, err)
	}
	return out, events.Damaged(damaged)
}

// closeDB closes the database, records a clean close of a read-write Log
// that did not fail (see CloseRecordName), and releases the folder's lock.
func (l *Log) closeDB() error {
	l.space.halt() // Pebble's Close waits for a flush that waits for room
	err := l.db.Close()
	if err == nil && !l.readOnly && l.sink.failure() == nil {
		l.sink.recordMu.Lock()
		werr := writeCloseRecord(l.fs, l.dir)
		l.sink.recordMu.Unlock()
		if werr != nil {
			err = fmt.Errorf("record of the clean close: %w", werr)
		}
	}
	return errors.Join(err, l.lock.Close())
}

// StopWaiting ends, now and for good, the waits for room of the writes
// that met a full disk (Options.FullDiskWait): a waiting write fails, and
// with it the Log (ErrFailed), so that the operations waiting on it
// return. A process that stops (a signal) calls it, so as not to wait for
// a disk another program filled; Close calls it too.
func (l *Log) StopWaiting() { l.space.endWALWait() }

// noSync reports whether writes skip the fsync (Options.NoSync).
func (l *Log) noSync() bool { return l.wopts == pebble.NoSync }

// errTablesWait is what a flush returns while Pebble's tables wait for
// room (space.pace).
var errTablesWait = fmt.Errorf("flush: %w: Pebble's tables wait for room on the log's disk", syscall.ENOSPC)

// flush writes the memtable to a table and waits until it is there, or
// until Pebble fails to write it (then the data stays in the WAL, synced,
// and flush returns the error) or fails for good, or a table of Pebble's
// waits for room (space.pace; an error wrapping syscall.ENOSPC).
func (l *Log) flush() error {
	if err := l.space.need(0, 2, "flush", true); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	// While a flush of Pebble's waits for room (roomFS), Pebble would
	// hold this one behind it, and every write with it (a write stall,
	// holding the commit pipeline that Close needs), for as long as the
	// disk stays full. So the waiting flush is asked to look for room now
	// (need saw some), and this one goes on once that one found room or
	// went through; otherwise it returns, its data in the synced WAL.
	// (MemTableStopWritesThreshold keeps a flush asked while another
	// runs from stalling: one of Pebble's own may begin and fail between
	// this check and AsyncFlush.)
	flushed, failedFlush := l.sink.flushSucceeded(), l.sink.flushFailed()
	if g := l.space.gate(true); g.pacing {
		l.space.nudgeRoom()
		t := time.NewTimer(2 * tablePoll)
		defer t.Stop()
		select {
		case <-flushed:
		case <-g.found:
		case <-failedFlush:
			return fmt.Errorf("flush: %w", l.sink.lastFlushErr())
		case <-g.waits:
			return errTablesWait
		case <-l.sink.failed:
			return l.sink.failure()
		case <-t.C:
			if l.space.gate(false).pacing {
				return errTablesWait
			}
		}
		failedFlush = l.sink.flushFailed()
	}
	waiting := l.space.gate(false).waits
	var done <-chan struct{}
	if err := l.write(func() (err error) {
		done, err = l.db.AsyncFlush()
		return err
	}); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-failedFlush:
		return fmt.Errorf("flush: %w", l.sink.lastFlushErr())
	case <-l.sink.failed:
		return l.sink.failure()
	case <-waiting:
		return errTablesWait
	}
}

// Close implements events.Log. It waits for Appends and metadata writes in
// progress, stops Reads and Scans in progress (they return ErrClosed),
// flushes the memtable to a table (unless the Log is read-only, NoSync or
// failed), so that what was written lives in tables and not only in the
// WAL, and closes the database. A Scan in progress is the exception: its
// fn may hold an event borrowed from Pebble's memory (fn may even be what
// called Close), so Close leaves its iterator, and so the database, open;
// the Scan stops before its next event, and the last one closes the
// database (any error from that late close is dropped). Close does not
// wait for it.
//
// After a failure (ErrFailed) Close still closes the database, and
// returns the failure.
func (l *Log) Close() error {
	// A write of the WAL waiting for room (Options.FullDiskWait) holds the
	// writes Pebble took, and so mu: it fails now, and them with it.
	l.space.endWALWait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return events.ErrClosed
	}
	l.closed.Store(true)
	var errs []error
	if !l.readOnly && !l.noSync() && l.sink.failure() == nil {
		errs = append(errs, l.flush())
	}
	l.itersMu.Lock()
	for si := range l.iters {
		if !si.owned {
			errs = append(errs, si.it.Close())
			delete(l.iters, si)
		}
	}
	scans := len(l.iters)
	l.itersMu.Unlock()
	switch {
	case l.wedged.Load():
		errs = append(errs, errors.New("database left open: Pebble panicked in a write"))
	case scans == 0:
		errs = append(errs, l.closeDB())
	}
	errs = append(errs, l.sink.failure())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pebblelog: close: %w", err)
	}
	return nil
}

// DeleteSession implements events.Deleter: the session's event and
// checkpoint keys are deleted as two ranges and its metadata as one key, in
// one synced batch; the space returns as Pebble compacts the ranges (see
// Compact).
func (l *Log) DeleteSession(ctx context.Context, id string) (int, error) {
	if err := events.ValidSessionID(id); err != nil {
		return 0, err
	}
	if err := l.beginWrite(ctx); err != nil {
		return 0, err
	}
	defer l.mu.RUnlock()
	l.metaMu.Lock() // no fork of it is created meanwhile
	defer l.metaMu.Unlock()
	m, err := l.getMeta(id)
	var ce *events.CorruptError
	damaged := errors.As(err, &ce) // its own metadata unreadable: deleted all the same, its count unknown
	if err != nil && !damaged {
		return 0, err
	}
	forks, unknown, err := l.forksOf(id)
	if err != nil {
		return 0, err
	}
	if len(forks) > 0 {
		return 0, logcore.HasForks(id, forks)
	}
	if len(unknown) > 0 {
		return 0, fmt.Errorf("%w: the metadata of %s is damaged, so whether it forks from %s is unknown: delete it first",
			events.ErrBadSession, strings.Join(unknown, ", "), id)
	}
	n := 0
	var st *state
	if !damaged {
		if st, err = l.state(id); err != nil {
			return 0, err
		}
		st.writing.Lock() // no checkpoint in flight
		defer st.writing.Unlock()
		st.mu.Lock() // no append in flight
		defer st.mu.Unlock()
		if last, err := l.lastLocked(id, st); err == nil {
			n = int(last - m.ForkSeq)
		} else if !errors.As(err, &ce) {
			return 0, err
		} // damaged events: deleted all the same, their count unknown
	}
	b := l.db.NewBatch()
	defer b.Close()
	ep, cp := eventPrefix(id), checkpointPrefix(id)
	for _, err := range []error{b.DeleteRange(ep, prefixEnd(ep), nil), b.DeleteRange(cp, prefixEnd(cp), nil), b.Delete(metaKey(id), nil)} {
		if err != nil {
			return 0, fmt.Errorf("pebblelog: delete session %s: %w", id, err)
		}
	}
	// The session's entry stays cached (st, cached by l.state above) from
	// before the write until after it: a state() meanwhile finds it rather
	// than reading the metadata, so none caches the session anew from
	// metadata about to go (see state). Other sessions' appends go on
	// during the write. A session whose metadata is damaged has no entry,
	// and a state() of it reads the damage, which is not cached.
	if err := l.write(func() error { return b.Commit(l.wopts) }); err != nil {
		return 0, fmt.Errorf("pebblelog: delete session %s: %w", id, err)
	}
	if st != nil {
		st.deleted = true // st.mu is held: an append waiting for it finds the session gone
	}
	l.statesMu.Lock()
	delete(l.states, id) // st, or an entry of damaged metadata cached before the damage
	l.statesMu.Unlock()
	return n, nil
}

// forksOf returns the sessions whose parent is id, and those whose
// metadata cannot be read (their parent is unknown); l.metaMu must be
// held, so that no fork is created meanwhile.
//
// Metadata that is whole — its checksum holds, and it is a JSON object
// that begins with its own session's ID, as events.EncodeMeta writes it
// (nothing writes metadata otherwise) — and does not hold id as a string
// cannot name id as its parent, and is not decoded: with 10,000 sessions,
// decoding every one made each delete about 60 ms (and json.Valid of each,
// about 15). Any other is decoded, so that damage is found as before.
func (l *Log) forksOf(id string) (forks, unknown []string, err error) {
	quoted := []byte(`"` + id + `"`) // a session ID needs no escaping in JSON (events.ValidSessionID)
	err = l.eachMetaRaw(func(child string, v []byte, err error) error {
		var m events.SessionMeta
		if err == nil {
			var body []byte
			if body, err = events.MetaBody(v); err == nil && !bytes.Contains(body, quoted) &&
				bytes.HasPrefix(body, []byte(`{"id":"`+child+`",`)) && bytes.HasSuffix(body, []byte("}")) {
				return nil
			}
			if err == nil {
				m, err = decodeMeta(child, v)
			} else {
				err = &events.CorruptError{Session: child, Key: string(metaKey(child)), Err: err}
			}
		}
		var ce *events.CorruptError
		switch {
		case errors.As(err, &ce):
			if child != id {
				unknown = append(unknown, child)
			}
		case err != nil:
			return err
		case m.Parent == id:
			forks = append(forks, child)
		}
		return nil
	})
	return forks, unknown, err
}

// Compact compacts the key ranges of sessions deleted, so that their space
// returns now rather than when Pebble would have compacted them.
func (l *Log) Compact(ctx context.Context, ids ...string) error {
	if err := l.beginWrite(ctx); err != nil {
		return err
	}
	defer l.mu.RUnlock()
	for _, id := range ids {
		for _, p := range [][]byte{eventPrefix(id), checkpointPrefix(id)} {
			if err := l.db.Compact(ctx, p, prefixEnd(p), true); err != nil {
				if pebble.IsCorruptionError(err) {
					// A damaged table the compaction had to read: its
					// file named, errors.Is(err, events.ErrCorrupt).
					return fmt.Errorf("pebblelog: compact session %s: %w", id, corruptFile(err))
				}
				return fmt.Errorf("pebblelog: compact session %s: %w", id, err)
			}
		}
	}
	return nil
}
