package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/sim/workers"
)

// DefaultData is the data folder of the command line when none is given.
const DefaultData = "corpsim-data"

// DefaultKeepEvents is how many of its latest events the in-memory log of
// an --ephemeral run keeps (--keep-events): a run's memory does not grow
// with its history, and an agent asking for the history since its last
// turns finds it.
const DefaultKeepEvents = 100_000

// newMemLog is an in-memory log keeping the latest keep events of each
// session (0: every one), whose sealed blocks are compressed by the
// compressors' workers: the driver, which appends the batch its turns wait
// for, does not wait for s2.
func newMemLog(keep int) *memlog.Log {
	return memlog.NewWith(memlog.Options{Keep: keep, Beside: compressBeside})
}

// compressBeside runs the compression of the in-memory logs' sealed blocks
// (newMemLog) on compressors' workers. A variable so that a test can see
// that the logs of run, eval and sweep hand their blocks to it.
var compressBeside = compressors.Run

// compressors compress the in-memory logs' sealed blocks (newMemLog), on
// workers that stay a while, as the driver's land its batches.
var compressors = workers.New()

// OpenLog opens the Pebble log in dir (creating it), or an in-memory log.
// A session found "running" in a store this process could open is not
// running anywhere (Pebble locks the folder), so it was interrupted: OpenLog
// records it as such. If ctx is done before the store is open (Pebble can
// take long, or never finish, replaying a WAL on a full disk), OpenLog
// returns an error wrapping ctx's (see ErrOpenInterrupted).
func OpenLog(ctx context.Context, dir string, ephemeral bool, logger hclog.Logger) (events.Log, error) {
	if ephemeral {
		return newMemLog(0), nil
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return openPebble(ctx, dir, false, logger)
}

// OpenRead opens the Pebble log in dir for reading only (the commands that
// only read sessions: sessions, log, verify, replay, score, report, trace,
// diff, export): it changes no byte of the store, works on a read-only
// folder, and leaves a WAL left by a crash for the next writer to replay.
// A session recorded running reads as interrupted. ctx bounds the open as
// for OpenLog.
func OpenRead(ctx context.Context, dir string, logger hclog.Logger) (events.Log, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no data folder %s", dir)
	}
	return openPebble(ctx, dir, true, logger)
}

// ErrOpenInterrupted is wrapped by the error of an open of the store that
// a done context (a signal) stopped before Pebble had opened it.
var ErrOpenInterrupted = errors.New("stopped while opening the store")

// readOnlyCacheSize is the block cache of a store opened to read (replay,
// verify, report, export, trace, …): these scan a session once, so a
// cache the size of a writer's only holds blocks never read again. The
// writer's 96 MiB added about 85 MB to a 688,297-event replay's peak, and
// no speed.
const readOnlyCacheSize = 16 << 20

// openPebble opens the store in dir; a writer also records the sessions it
// finds running as interrupted (see OpenLog). Pebble's Open cannot be
// cancelled, so it runs on a goroutine of its own: if ctx is done first,
// openPebble returns, and the store, should Pebble open it later, is
// closed again; a command that returns the error exits at once.
func openPebble(ctx context.Context, dir string, readOnly bool, logger hclog.Logger) (events.Log, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		// Pebble would say "open DIR/LOCK: not a directory".
		return nil, fmt.Errorf("data folder %s is a file, not a folder", dir)
	}
	type opened struct {
		l   *pebblelog.Log
		err error
	}
	done := make(chan opened, 1)
	go func() {
		cache := int64(0) // a writer's: pebblelog.DefaultCacheSize
		if readOnly {
			cache = readOnlyCacheSize
		}
		l, err := pebblelog.Open(dir, pebblelog.Options{ReadOnly: readOnly, CacheSize: cache, Logger: logger.Named("pebble")})
		done <- opened{l, err}
	}()
	var o opened
	select {
	case o = <-done:
	case <-ctx.Done():
		go func() {
			if o := <-done; o.err == nil {
				_ = o.l.Close()
			}
		}()
		return nil, fmt.Errorf("%w %s (Pebble had not finished opening it: a large WAL to replay, or a full or failing disk): %w",
			ErrOpenInterrupted, dir, context.Cause(ctx))
	}
	l, err := o.l, o.err
	if err != nil && readOnly && strings.Contains(err.Error(), "database does not exist") {
		// A folder with no store in it holds no sessions: reading it gives
		// none, as a writer would have created an empty store.
		return memlog.New(), nil
	}
	if err != nil {
		if isLocked(err) {
			if url := ReadBusURL(dir); url != "" {
				return nil, &InUseError{fmt.Sprintf("data folder %s is in use by a running corpsim (its bus: %s); use --nats %s to follow it (corpsim sessions --nats %s lists its sessions)", dir, url, url, url)}
			}
			return nil, &InUseError{fmt.Sprintf("data folder %s is in use by another corpsim process", dir)}
		}
		return nil, err
	}
	if readOnly {
		// The read lock conflicts with a writer's: no process runs the
		// sessions recorded running here, so they read as interrupted (as a
		// writer would record them), without a write.
		return stoppedLog{l}, nil
	}
	// A write that met a full disk waits for room (pebblelog's
	// FullDiskWait) until the command stops: then it fails, so that the
	// sessions waiting on it stop too, and the process exits.
	context.AfterFunc(ctx, l.StopWaiting)
	metas, err := l.Sessions(ctx)
	var damaged *events.DamagedError
	if errors.As(err, &damaged) {
		// The other sessions are whole: they run, fork and read as ever;
		// `corpsim sessions` and `verify` name the damaged ones too.
		for _, e := range damaged.Errs {
			logger.Warn("the store's session metadata is damaged: the sessions it names are left as they are", "error", e)
		}
	} else if err != nil {
		l.Close()
		return nil, err
	}
	// The folder is this process's now: a bus.url in it was left by a
	// corpsim that was killed, and names a bus nobody listens on.
	RemoveBusURL(dir)
	for _, m := range metas {
		if m.Status == events.StatusRunning {
			if last, err := l.LastSeq(ctx, m.ID); err == nil {
				m.LastSeq = last
			}
			m.Status = events.StatusInterrupted
			if err := l.UpdateSession(ctx, m); err != nil {
				l.Close()
				return nil, err
			}
			logger.Warn("session was interrupted", "session", m.ID, "last_seq", m.LastSeq)
		}
	}
	return l, nil
}

// OpenExisting opens the log in data for a use that reads sessions:
// unlike OpenLog it does not create a missing folder.
func OpenExisting(ctx context.Context, data string, logger hclog.Logger) (events.Log, error) {
	return OpenRead(ctx, data, logger)
}

// OpenSession opens the log in data for reading only and reads session
// id's metadata; the caller closes the log.
func OpenSession(ctx context.Context, data, id string, logger hclog.Logger) (events.Log, events.SessionMeta, error) {
	return openSession(ctx, data, id, true, logger)
}

// OpenSessionWrite is OpenSession for a use that writes (fork, reset).
func OpenSessionWrite(ctx context.Context, data, id string, logger hclog.Logger) (events.Log, events.SessionMeta, error) {
	return openSession(ctx, data, id, false, logger)
}

func openSession(ctx context.Context, data, id string, readOnly bool, logger hclog.Logger) (events.Log, events.SessionMeta, error) {
	if _, err := os.Stat(data); errors.Is(err, fs.ErrNotExist) {
		return nil, events.SessionMeta{}, fmt.Errorf("no session %s in %s (no such folder)", id, data)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	var log events.Log
	var err error
	if readOnly {
		log, err = openPebble(ctx, data, true, logger)
	} else if ok, herr := pebblelog.Holds(data); herr == nil && !ok {
		// A folder with no store holds no session: opened to write, it
		// would get a store (and its ballast) only to find none.
		return nil, events.SessionMeta{}, fmt.Errorf("no session %s in %s", id, data)
	} else {
		log, err = OpenLog(ctx, data, false, logger)
	}
	if err != nil {
		return nil, events.SessionMeta{}, err
	}
	meta, err := sessionIn(ctx, log, data, id)
	if err == nil && meta.LastSeq == 0 && meta.Parent == "" && meta.Status == events.StatusFailed {
		// Recorded failed before any of its events was stored (a server
		// does so for a session that panicked at once): nothing to read,
		// and no damage either.
		err = fmt.Errorf("session %s failed before any of its events was stored (%s): it has nothing to read or resume", meta.ID, orUnknown(meta.Reason))
	}
	if err != nil {
		log.Close()
		return nil, meta, err
	}
	return log, meta, nil
}

func orUnknown(reason string) string {
	if reason == "" {
		return "no reason recorded"
	}
	return reason
}

// sessionIn is session id's metadata in log, the log of data folder data.
func sessionIn(ctx context.Context, log events.Log, data, id string) (events.SessionMeta, error) {
	meta, err := log.Session(ctx, id)
	if errors.Is(err, events.ErrNoSession) || errors.Is(err, events.ErrBadSession) {
		return meta, fmt.Errorf("no session %s in %s", id, data)
	}
	return meta, err
}

const busURLFile = "bus.url"

// WriteBusURL records where a running corpsim's NATS server listens, so that
// other processes (which cannot open the locked store) can follow it.
func WriteBusURL(dir, url string) error {
	return os.WriteFile(filepath.Join(dir, busURLFile), []byte(url+"\n"), 0o644)
}

// RemoveBusURL removes what WriteBusURL wrote.
func RemoveBusURL(dir string) { _ = os.Remove(filepath.Join(dir, busURLFile)) }

// ReadBusURL returns the URL WriteBusURL recorded in dir, or "".
func ReadBusURL(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, busURLFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// isLocked reports whether opening the store failed because another process holds it.
func isLocked(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "resource temporarily unavailable") || strings.Contains(err.Error(), "lock")
}

// InUseError reports a data folder that another process holds open.
type InUseError struct{ msg string }

func (e *InUseError) Error() string { return e.msg }

// OperatorTokenFile is the operator token's file in a data folder (mode 0600).
const OperatorTokenFile = "operator.token"

// OperatorToken reads DATA/operator.token, making it if it does not exist
// (an ephemeral run gets a fresh token that is not written).
func OperatorToken(dir string, ephemeral bool) (string, error) {
	if ephemeral || dir == "" {
		return natsserver.NewToken(), nil
	}
	path := filepath.Join(dir, OperatorTokenFile)
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tok := natsserver.NewToken()
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

// ReadOperatorToken returns DATA/operator.token, or "".
func ReadOperatorToken(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, OperatorTokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// WriteFileAtomic writes a file through a temporary one in the same folder,
// so a failed write leaves no half file; it returns the bytes written. Its
// errors name path (not the temporary file) and say what is wrong with it.
func WriteFileAtomic(path string, write func(io.Writer) error) (int64, error) {
	if err := CheckWritable(path); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".corpsim-*.tmp")
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	defer os.Remove(tmp.Name())
	cw := &countWriter{w: bufio.NewWriter(tmp)}
	if err := write(cw); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := cw.w.(*bufio.Writer).Flush(); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	return cw.n, nil
}

// CheckWritable reports, before any work is done for it, why a file could
// not be written at path: its folder missing or not a folder, path a
// folder. It checks what it can without writing.
func CheckWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("write %s: it is a folder; name a file", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("write %s: no folder %s", path, dir)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("write %s: %s is not a folder", path, dir)
	case err != nil:
		return fmt.Errorf("write %s: %w", path, unwrapPath(err))
	case !fi.IsDir():
		return fmt.Errorf("write %s: %s is not a folder", path, dir)
	}
	return nil
}

// CheckFolder reports, before any work is done for it, why folder dir
// could not be made (or written into, if it is there), without making it,
// as CheckWritable does for a file: the nearest part of its path that
// exists must be a folder this process may write in.
func CheckFolder(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a folder", p)
			}
			if err := syscall.Access(p, 2|1); err != nil { // W_OK|X_OK
				return fmt.Errorf("cannot write in %s: %w", p, err)
			}
			return nil
		}
		if _, lerr := os.Lstat(p); lerr == nil {
			return fmt.Errorf("%s is a link to nothing", p)
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || filepath.Dir(p) == p {
			return err
		}
	}
}

// unwrapPath returns the error of a *fs.PathError or *os.LinkError without
// the path it names (a temporary file's, which the caller replaces by its
// own).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// stoppedLog is a read-only Log whose sessions recorded running read as
// interrupted, with the last seq stored (see openPebble).
type stoppedLog struct{ events.Log }

func (l stoppedLog) stopped(ctx context.Context, m events.SessionMeta) events.SessionMeta {
	if m.Status == events.StatusRunning {
		m.Status = events.StatusInterrupted
		if last, err := l.LastSeq(ctx, m.ID); err == nil {
			m.LastSeq = last
		}
	}
	return m
}

// Session implements events.Log.
func (l stoppedLog) Session(ctx context.Context, id string) (events.SessionMeta, error) {
	m, err := l.Log.Session(ctx, id)
	if err != nil {
		return m, err
	}
	return l.stopped(ctx, m), nil
}

// Read implements events.Log. A read of an ended session to its end fails
// when the log stops before the last seq its metadata recorded at the end
// (events.CheckEnd): events were lost, and log, score, export, report,
// diagnose and trace must say so rather than go on with what is left (a
// review's finished session cut by 97 events scored 806.5 instead of
// 854.5, exported, with exit 0).
func (l stoppedLog) Read(ctx context.Context, id string, from uint64) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		var last uint64 // 0: none read
		for ev, err := range l.Log.Read(ctx, id, from) {
			if !yield(ev, err) || err != nil {
				return
			}
			last = ev.Seq
		}
		if err := l.checkEnd(ctx, id, last); err != nil {
			yield(events.Event{}, err)
		}
	}
}

// Scan implements events.Log, with Read's check of the end.
func (l stoppedLog) Scan(ctx context.Context, id string, from uint64, fn func(*events.Event) error) error {
	var last uint64 // 0: none read
	if err := l.Log.Scan(ctx, id, from, func(ev *events.Event) error {
		last = ev.Seq
		return fn(ev)
	}); err != nil {
		return err
	}
	return l.checkEnd(ctx, id, last)
}

// checkEnd is events.CheckEnd of session id read to seq last, on its
// metadata as stored (one recorded running has no end marker); a read
// that found nothing from where it began (0) checks the log's own last
// seq, so that the count of events missing is right whatever it asked.
func (l stoppedLog) checkEnd(ctx context.Context, id string, last uint64) error {
	m, err := l.Log.Session(ctx, id)
	if err != nil {
		return nil // the read itself said what is wrong, or will
	}
	if last == 0 {
		if last, err = l.Log.LastSeq(ctx, id); err != nil {
			return nil
		}
	}
	return events.CheckEnd(m, last)
}

// Sessions implements events.Log.
func (l stoppedLog) Sessions(ctx context.Context) ([]events.SessionMeta, error) {
	ms, err := l.Log.Sessions(ctx)
	for i := range ms {
		ms[i] = l.stopped(ctx, ms[i])
	}
	return ms, err
}
