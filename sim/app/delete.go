package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/hashicorp/go-hclog"
)

// Deleted is one session Delete removed, with how many of its own events
// it held.
type Deleted = wire.Deleted

// compacter is the log that can give the space of deleted sessions back
// at once (pebblelog).
type compacter interface {
	Compact(ctx context.Context, ids ...string) error
}

// Delete removes sessions ids from the log in data — their metadata,
// events and checkpoints — and compacts their keys, so that their space
// returns now. Sessions listed are deleted forks first; a session with a
// fork not listed is refused unless withForks, which deletes every fork
// under it too, the deepest first. It returns what it deleted, in the
// order deleted, also on an error partway.
func Delete(ctx context.Context, data string, ids []string, withForks bool, logger hclog.Logger) ([]Deleted, error) {
	if _, err := os.Stat(data); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no data folder %s", data)
	}
	if ok, err := pebblelog.Holds(data); err == nil && !ok && len(ids) > 0 {
		// No store, no session: none is made to find that out.
		if len(ids) > 1 {
			return nil, fmt.Errorf("no session %s in %s; nothing was deleted", ids[0], data)
		}
		return nil, fmt.Errorf("no session %s in %s", ids[0], data)
	}
	log, err := OpenLog(ctx, data, false, logger)
	if iu := (*InUseError)(nil); errors.As(err, &iu) {
		return nil, &InUseError{iu.msg + "; a running serve deletes its sessions itself: DELETE /v1/sessions/{id} on its --http gateway, or corpsim.v1.sessions.delete on its bus, with the operator token"}
	}
	if err != nil {
		return nil, err
	}
	defer log.Close()
	done, err := DeleteFrom(ctx, log, ids, withForks, nil)
	if ns := (*noSessionError)(nil); errors.As(err, &ns) {
		return nil, fmt.Errorf("no session %s in %s; nothing was deleted", ns.id, data)
	} else if errors.Is(err, events.ErrNoSession) && len(ids) == 1 && len(done) == 0 {
		return nil, fmt.Errorf("no session %s in %s", ids[0], data)
	}
	if err != nil || len(done) == 0 {
		return done, err
	}
	if c, ok := log.(compacter); ok {
		gone := make([]string, len(done))
		for i, x := range done {
			gone[i] = x.Session
		}
		slices.Sort(gone)
		if err := c.Compact(ctx, gone...); err != nil {
			return done, fmt.Errorf("deleted, but their space was not given back yet: %w", err)
		}
	}
	return done, nil
}

// DeleteFrom is Delete on an open log, without the compaction: the space
// returns as the log compacts in its own time. busy, if set, is asked of
// every session about to be deleted, before any is: an error refuses the
// whole delete (a session still running).
func DeleteFrom(ctx context.Context, log events.Log, ids []string, withForks bool, busy func(id string) error) ([]Deleted, error) {
	d, ok := log.(events.Deleter)
	if !ok {
		return nil, errors.New("this log cannot delete sessions")
	}
	// The sessions in an order that deletes forks before the session they
	// read from: those listed always, the others with withForks. A listing
	// that fails (metadata damaged somewhere) leaves the order given, and
	// the log refuses what it must.
	var all []events.SessionMeta
	var err error
	if withForks || len(ids) > 1 {
		all, err = log.Sessions(ctx)
	} // else one session alone: its log refuses it while forks read from it, naming them, without a listing of every session
	if err != nil && withForks {
		return nil, fmt.Errorf("the forks cannot be found: %w", err)
	}
	children := map[string][]string{}
	known := map[string]bool{}
	for _, m := range all {
		known[m.ID] = true
		if m.Parent != "" {
			children[m.Parent] = append(children[m.Parent], m.ID)
		}
	}
	listed := map[string]bool{}
	for _, id := range ids {
		listed[id] = true
	}
	order := ids
	if err == nil && all != nil {
		order = nil
		seen := map[string]bool{}
		var visit func(id string)
		visit = func(id string) {
			if seen[id] {
				return
			}
			seen[id] = true
			for _, c := range children[id] {
				if withForks || listed[c] {
					visit(c)
				}
			}
			order = append(order, id)
		}
		for _, id := range ids {
			if !known[id] {
				return nil, &noSessionError{id}
			}
			visit(id)
		}
	}
	if busy != nil {
		for _, id := range order {
			if err := busy(id); err != nil {
				return nil, err
			}
		}
	}
	// A session with a fork that is not deleted with it is refused before
	// anything is deleted (the sessions before it in the order went first).
	if all != nil && !withForks {
		for _, id := range order {
			var kept []string
			for _, c := range children[id] {
				if !listed[c] {
					kept = append(kept, c)
				}
			}
			if len(kept) > 0 {
				return nil, fmt.Errorf("%w; nothing was deleted %s", &events.ForksError{Session: id, Forks: kept}, forksHint)
			}
		}
	}
	var done []Deleted
	for _, id := range order {
		n, err := d.DeleteSession(ctx, id)
		if err != nil {
			var fe *events.ForksError
			if errors.As(err, &fe) || errors.Is(err, events.ErrBadSession) && len(children[id]) > 0 {
				err = fmt.Errorf("%w %s", err, forksHint)
			}
			return done, err
		}
		done = append(done, Deleted{Session: id, Events: n})
	}
	return done, nil
}

// forksHint says how to delete a session with its forks.
const forksHint = "(--forks deletes them too; over HTTP, ?forks=true)"

// noSessionError is DeleteFrom's refusal of an ID the log does not hold
// (errors.Is events.ErrNoSession), before anything is deleted.
type noSessionError struct{ id string }

func (e *noSessionError) Error() string { return events.ErrNoSession.Error() + ": " + e.id }

func (e *noSessionError) Unwrap() error { return events.ErrNoSession }
