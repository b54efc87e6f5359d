package pebblelog

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/go-hclog"
)

// Errors of this package; both are also reported wrapped, with details.
var (
	// ErrFailed reports that Pebble met an error it cannot go on from:
	// a failed write or sync of the WAL (a full disk, an I/O error), a
	// failed write of the MANIFEST, a file that should exist and does not.
	// (A write of the WAL or the MANIFEST that meets a full disk waits for
	// room first: Options.FullDiskWait.) Pebble reports these through its logger's Fatalf and does not expect
	// it to return; the Log records the first one instead, and from then on
	// every operation returns it (an Append in progress too, even one whose
	// own batch Pebble took). Nothing acknowledged before is lost: the Log
	// must be closed and opened again. errors.Is(err, syscall.ENOSPC)
	// tells a full disk.
	ErrFailed = errors.New("pebblelog: storage failed")
	// ErrReadOnly reports a write to a Log opened with Options.ReadOnly.
	ErrReadOnly = errors.New("pebblelog: log opened read-only")
)

// fatalError is the first fatal failure Pebble reported.
type fatalError struct {
	msg   string
	cause error // the error among Pebble's arguments, if any
}

func (e *fatalError) Error() string { return ErrFailed.Error() + ": " + e.msg }

func (e *fatalError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrFailed}
	}
	return []error{ErrFailed, e.cause}
}

// sink receives Pebble's messages for one Log: it passes them to the Log's
// hclog.Logger and records the first fatal failure. It implements
// pebble.Logger and the handlers of the pebble.EventListener it installs.
type sink struct {
	log   hclog.Logger
	space *space // its ballast makes room for a flush that met a full disk; nil: none
	// record, when set (a read-write Log), writes CloseRecordName after
	// each change of the MANIFEST (a flush, a compaction, a new MANIFEST),
	// so that a MANIFEST damaged after a crash is told from a torn one;
	// recordMu serializes the writes.
	record   func() error
	recordMu sync.Mutex
	fatal    atomic.Pointer[fatalError]
	failed   chan struct{} // closed when fatal is set

	// flushMu guards flushErr, closed (and replaced) at each failed flush,
	// so that a flush waiting for its memtable to reach a table can stop
	// when Pebble fails to write it (Pebble would retry it without end).
	flushMu  sync.Mutex
	flushErr chan struct{}
	flushOK  chan struct{} // closed (and replaced) at each flush that went through
	lastErr  error         // of the last failed flush

	// mu guards the repeat counter of background errors: Pebble retries a
	// failed flush or compaction at once and again, so the same error can
	// come thousands of times a second.
	mu      sync.Mutex
	lastBg  string
	repeats int
}

var _ pebble.Logger = (*sink)(nil)

// Infof implements pebble.Logger.
func (s *sink) Infof(format string, args ...any) {
	s.log.Info("pebble: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// Errorf implements pebble.Logger.
func (s *sink) Errorf(format string, args ...any) {
	s.log.Error("pebble: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// Fatalf implements pebble.Logger. It logs the message, records it as the
// Log's failure if it is the first, and returns: it never exits or panics.
func (s *sink) Fatalf(format string, args ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	var cause error
	for _, a := range args {
		if err, ok := a.(error); ok {
			cause = err
			break
		}
	}
	s.fail(msg, cause)
}

func (s *sink) fail(msg string, cause error) {
	if s.fatal.CompareAndSwap(nil, &fatalError{msg: msg, cause: cause}) {
		s.log.Error("pebble: fatal: the log stops; close and reopen it", "error", msg)
		close(s.failed)
	}
}

func newSink(log hclog.Logger) *sink {
	return &sink{log: log, failed: make(chan struct{}), flushErr: make(chan struct{}), flushOK: make(chan struct{})}
}

// flushFailed returns a channel closed at the next failed flush.
func (s *sink) flushFailed() <-chan struct{} {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.flushErr
}

// flushSucceeded returns a channel closed at the next flush that goes
// through.
func (s *sink) flushSucceeded() <-chan struct{} {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.flushOK
}

// lastFlushErr returns the error of the last failed flush.
func (s *sink) lastFlushErr() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.lastErr
}

func (s *sink) flushEnd(info pebble.FlushInfo) {
	if info.Err == nil || info.Err.Error() == "pebble: empty table" {
		s.flushMu.Lock()
		defer s.flushMu.Unlock()
		close(s.flushOK)
		s.flushOK = make(chan struct{})
		return
	}
	if errors.Is(info.Err, syscall.ENOSPC) && (s.space == nil || (!s.space.release("for a flush") && !s.space.pace("a flush"))) {
		// Pebble would retry it at once and without end, and block
		// writes once the memtables pile up. With the ballast's room,
		// its next try may go through; without, it waits for room
		// (roomFS). A Log that cannot tell its free space cannot wait.
		s.fail("flush: "+info.Err.Error(), info.Err)
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.lastErr = info.Err
	close(s.flushErr)
	s.flushErr = make(chan struct{})
}

// failure returns the recorded failure, or nil.
func (s *sink) failure() error {
	if e := s.fatal.Load(); e != nil {
		return e
	}
	return nil
}

// listener returns the pebble.EventListener of the Log: corruption found
// while reading is logged (the read itself returns the error, which the
// Log passes on with session and seq); background errors are logged, with
// repeats of the same error thinned out; a flush that fails for a full
// disk deletes the ballast, if it is there, for Pebble's next try, and
// otherwise makes Pebble's tables wait for room (roomFS), as a compaction
// that fails for a full disk does; a failed
// flush also wakes up Log.flush; each change of the MANIFEST is recorded
// (see record).
func (s *sink) listener() *pebble.EventListener {
	return &pebble.EventListener{
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			s.log.Error("pebble: corrupt data", "file", info.Path, "error", fmt.Sprint(info.Details))
		},
		BackgroundError: s.background,
		FlushEnd: func(info pebble.FlushInfo) {
			s.flushEnd(info)
			if info.Err == nil {
				s.recordManifest()
			}
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if info.Err == nil {
				s.recordManifest()
			} else if errors.Is(info.Err, syscall.ENOSPC) && s.space != nil {
				s.space.pace("a compaction")
			}
		},
		ManifestCreated: func(info pebble.ManifestCreateInfo) {
			if info.Err == nil {
				s.recordManifest()
			}
		},
	}
}

// recordManifest records the MANIFEST as it stands (see record); a
// failure is logged: the next change, or the close, records it again.
func (s *sink) recordManifest() {
	if s.record == nil || s.failure() != nil {
		return
	}
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	if err := s.record(); err != nil {
		s.log.Warn("cannot record the MANIFEST", "file", CloseRecordName, "error", err)
	}
}

func (s *sink) background(err error) {
	msg := err.Error()
	s.mu.Lock()
	if msg == s.lastBg {
		s.repeats++
	} else {
		s.lastBg, s.repeats = msg, 1
	}
	n := s.repeats
	s.mu.Unlock()
	if n&(n-1) == 0 { // the 1st, 2nd, 4th, 8th … time in a row
		s.log.Error("pebble: background error", "error", msg, "times", n)
	}
}
