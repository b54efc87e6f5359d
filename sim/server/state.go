package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/workers"
)

// savedSession is what the state file keeps of a session the service runs:
// enough to continue it after a restart. Its agents are the session's
// recorded metadata (events.SessionMeta.Agents).
type savedSession struct {
	Seats       map[string]wire.Seat `json:"seats,omitempty"` // remote seats' credentials (tokens: the file is 0600)
	TurnTimeout string               `json:"turn_timeout,omitempty"`
	JoinTimeout string               `json:"join_timeout,omitempty"`
	// Paused: an operator paused the session; a restarted service resumes
	// it paused, until a start control message.
	Paused bool `json:"paused,omitempty"`
	// Via: the client that plays the remote seats (wire.CreateRequest.Via).
	Via string `json:"via,omitempty"`
	// Resuming, when set, is when (RFC 3339) a service began resuming the
	// session, which has not yet shown that it runs (see probation): a
	// service that finds it set does not resume the session again.
	Resuming string `json:"resuming,omitempty"`
}

// timeouts returns the session's turn and join timeouts: the recorded
// ones, or turn and join where none (or no valid one) was recorded.
func (ss savedSession) timeouts(turn, join time.Duration) (time.Duration, time.Duration) {
	if d, err := time.ParseDuration(ss.TurnTimeout); err == nil && d > 0 {
		turn = d
	}
	if d, err := time.ParseDuration(ss.JoinTimeout); err == nil && d > 0 {
		join = d
	}
	return turn, join
}

type savedState struct {
	Sessions map[string]savedSession `json:"sessions"`
}

// stateFile keeps savedState in a file, rewritten whole (write to a
// temporary file, sync, rename) after every change: a change returns once
// a rewrite begun after it is durable, and the changes made while one is
// written share the next (sessions created and ended at once by many
// clients). A nil *stateFile keeps nothing. Safe for concurrent use.
type stateFile struct {
	path    string
	mu      sync.Mutex // guards st, changes and durable
	st      savedState
	changes uint64 // changes made to st
	durable uint64 // changes in the file, synced
	writes  workers.Group
}

func openState(path string) (*stateFile, error) {
	if path == "" {
		return nil, nil
	}
	f := &stateFile{path: path, st: savedState{Sessions: map[string]savedSession{}}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("server: state file: %w", err)
	}
	if err := json.Unmarshal(b, &f.st); err != nil {
		return nil, fmt.Errorf("server: state file %s: %w", path, err)
	}
	if f.st.Sessions == nil {
		f.st.Sessions = map[string]savedSession{}
	}
	return f, nil
}

func (f *stateFile) put(id string, s savedSession) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	f.st.Sessions[id] = s
	return f.commitLocked(true)
}

// setPaused records whether session id is paused, if the file keeps it.
func (f *stateFile) setPaused(id string, paused bool) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	saved, ok := f.st.Sessions[id]
	if !ok || saved.Paused == paused {
		return f.commitLocked(false)
	}
	saved.Paused = paused
	f.st.Sessions[id] = saved
	return f.commitLocked(true)
}

// setResuming records when a resume of session id began ("" clears it),
// if the file keeps the session.
func (f *stateFile) setResuming(id, since string) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	saved, ok := f.st.Sessions[id]
	if !ok || saved.Resuming == since {
		return f.commitLocked(false)
	}
	saved.Resuming = since
	f.st.Sessions[id] = saved
	return f.commitLocked(true)
}

func (f *stateFile) remove(id string) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	if _, ok := f.st.Sessions[id]; !ok {
		return f.commitLocked(false)
	}
	delete(f.st.Sessions, id)
	return f.commitLocked(true)
}

// commitLocked releases f.mu and returns once the state as it stands is
// in the file, synced: at once if it already is, else after a rewrite
// begun now. A call that changed nothing waits too, when another's change
// to the same value is not durable yet (a pause recorded by the session's
// start and by the operator at once: neither returns before it is).
func (f *stateFile) commitLocked(changed bool) error {
	if changed {
		f.changes++
	}
	pending := f.durable < f.changes
	f.mu.Unlock()
	if !pending {
		return nil
	}
	return f.writes.Do(f.write)
}

// saved returns the recorded sessions, by ID.
func (f *stateFile) saved() map[string]savedSession {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]savedSession, len(f.st.Sessions))
	for id, s := range f.st.Sessions {
		out[id] = s
	}
	return out
}

// write rewrites the file with the state as it is now; f.writes runs it,
// one at a time.
func (f *stateFile) write() error {
	f.mu.Lock()
	b, err := json.MarshalIndent(f.st, "", "  ")
	changes := f.changes
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if err := f.writeFile(b); err != nil {
		return err
	}
	f.mu.Lock()
	f.durable = max(f.durable, changes)
	f.mu.Unlock()
	return nil
}

// writeFile replaces the file with b, durably.
func (f *stateFile) writeFile(b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".serve-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return err
	}
	// The rename is durable once the folder is synced.
	dir, err := os.Open(filepath.Dir(f.path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// ResumeSaved continues the sessions a previous service on the same data
// left unfinished (shut down, or killed): those in the state file whose
// log is not finished. Each is rebuilt from its log (driver.Load), its
// built-in seats are made again from the agents the session recorded, and
// its remote seats are admitted with the credentials they had; it then
// waits for its remote seats as a new session does (the join timeout it
// was created with) and runs from its last durable event. Sessions that
// ended, or never reached the log, are dropped from the state file.
//
// A session the previous service was resuming when its process stopped
// (still marked in the state file, see probation) is not resumed: it is
// recorded failed with ReasonStoppedResuming and dropped, and the error
// names it. The others are resumed one at a time, each marked until it
// has shown that it runs. It returns the IDs of the sessions it resumed,
// in order.
func (s *Service) ResumeSaved(ctx context.Context) ([]string, error) {
	saved := s.state.saved()
	ids := make([]string, 0, len(saved))
	for id := range saved {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var resumed []string
	var errs []error
	for _, id := range ids {
		log := s.logger.With("session", id)
		var err error
		var p *probation
		if since := saved[id].Resuming; since != "" {
			err = s.failStopped(ctx, id)
			switch {
			case errors.Is(err, events.ErrNoSession):
				err = fmt.Errorf("%w: the session never started (it is not in the log)", errNothingToResume)
			case err == nil:
				log.Error("session not resumed and recorded failed: the process stopped while resuming it", "resuming_since", since)
				err = fmt.Errorf("%w: %s", ErrStoppedResuming, ReasonStoppedResuming)
			}
		} else {
			p, err = s.resume(ctx, id, saved[id])
		}
		switch {
		case errors.Is(err, errNothingToResume):
			log.Info("not resumed", "reason", err)
		case err != nil:
			log.Error("cannot resume the session", "error", err)
			errs = append(errs, fmt.Errorf("session %s: %w", id, err))
		default:
			resumed = append(resumed, id)
			p.wait(ctx)
			continue
		}
		if s.cfg.Auth != nil {
			s.cfg.Auth.RemoveSession(id)
		}
		if err := s.state.remove(id); err != nil {
			log.Warn("cannot update the state file", "error", err)
		}
	}
	return resumed, errors.Join(errs...)
}

// SavedSeats reads the remote seats' credentials a state file keeps. A
// server admits them (natsserver.Auth.RestoreSeat) before it listens, so a
// client reconnecting to a restarted server is never refused while its
// session is being resumed; ResumeSaved revokes those of sessions it does
// not resume. A missing file has none.
func SavedSeats(stateFile string) ([]wire.Seat, error) {
	f, err := openState(stateFile)
	if err != nil {
		return nil, err
	}
	var seats []wire.Seat
	for _, s := range f.saved() {
		for _, seat := range s.Seats {
			seats = append(seats, seat)
		}
	}
	return seats, nil
}

var errNothingToResume = errors.New("nothing to resume")

// ErrStoppedResuming is wrapped by ResumeSaved's error for each session it
// did not resume because the process stopped while resuming it.
var ErrStoppedResuming = errors.New("server: not resumed")

// resume marks session id as being resumed, rebuilds it and launches it;
// the probation it returns clears the mark once the session runs.
func (s *Service) resume(ctx context.Context, id string, saved savedSession) (*probation, error) {
	meta, err := s.cfg.Log.Session(ctx, id)
	if errors.Is(err, events.ErrNoSession) {
		return nil, fmt.Errorf("%w: the session never started (it is not in the log)", errNothingToResume)
	}
	if err != nil {
		return nil, err
	}
	if meta.Status == events.StatusFinished || meta.Status == events.StatusFailed {
		return nil, fmt.Errorf("%w: the session is %s", errNothingToResume, meta.Status)
	}
	// Marked before its log is read: rebuilding it may be what kills the
	// process.
	p, err := s.markResuming(id)
	if err != nil {
		return nil, err
	}
	// Every event, not only those after the latest checkpoint (Load's):
	// a damaged log is refused, not continued (CheckPrefix).
	if err := driver.CheckPrefix(ctx, s.cfg.Log, id, 0); err != nil {
		return nil, err
	}
	e, n, err := driver.Load(ctx, s.cfg.Log, id, 0, meta.Seed)
	if err != nil {
		return nil, err
	}
	p.at = e.State().LastSeq
	turnTimeout, joinTimeout := saved.timeouts(s.cfg.TurnTimeout, s.cfg.JoinTimeout)
	seats := map[string]wire.Seat{}
	for member, name := range meta.Agents {
		if name != agents.Remote {
			continue
		}
		seat, ok := saved.Seats[member]
		switch {
		case s.cfg.Auth == nil:
			seat = wire.Seat{Session: id, Member: member, Subject: wire.TurnSubject(id, member)}
		case ok && s.cfg.Auth.RestoreSeat(seat):
		default:
			seat = s.cfg.Auth.AddSeat(id, member)
			s.logger.Warn("remote seat had no saved credentials; it has new ones (in the state file)", "session", id, "member", member)
		}
		seats[member] = seat
	}
	at := e.State().LastSeq // read before launch: the engine is the driver's from then on
	if err := s.launch(launch{meta: meta, engine: e, turnTimeout: turnTimeout, joinTimeout: joinTimeout, seats: seats, paused: saved.Paused, via: saved.Via,
		probation: p}); err != nil {
		if s.cfg.Auth != nil {
			s.cfg.Auth.RemoveSession(id)
		}
		return nil, err
	}
	s.logger.Info("session resumed", "session", id, "at_seq", at, "replayed", n, "remote", len(seats))
	return p, nil
}

// ForgetSessions takes sessions ids out of the state file of a serve that
// used data (no serve must be running on it), so that a serve started
// there later does not try to continue sessions deleted meanwhile
// (corpsim delete). A folder without a state file is left as it is.
func ForgetSessions(data string, ids []string) error {
	f, err := openState(filepath.Join(data, StateFileName))
	if err != nil {
		return err
	}
	if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, id := range ids {
		if err := f.remove(id); err != nil {
			return err
		}
	}
	return nil
}
