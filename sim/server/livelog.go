package server

import (
	"context"
	"errors"
	"iter"

	"github.com/corpsim/corpsim/events"
)

// liveLog is what the live view (/live/) reads: the store, with the index
// the service lists (a session held for its start, a paused one), and a
// page for a session held for its start, empty until it starts (the
// store knows nothing of it until then).
type liveLog struct {
	events.Log
	svc *Service
}

// Sessions implements live.Log: what the service lists.
func (l liveLog) Sessions(ctx context.Context) ([]events.SessionMeta, error) {
	return l.svc.List(ctx)
}

// Session implements live.Log.
func (l liveLog) Session(ctx context.Context, id string) (events.SessionMeta, error) {
	m, err := l.Log.Session(ctx, id)
	if errors.Is(err, events.ErrNoSession) {
		if held, ok := l.svc.held(id); ok {
			return held, nil
		}
	}
	return m, err
}

// Read implements live.Log: nothing yet of a session held for its start.
func (l liveLog) Read(ctx context.Context, id string, from uint64) iter.Seq2[events.Event, error] {
	if _, err := l.Log.Session(ctx, id); errors.Is(err, events.ErrNoSession) {
		if _, ok := l.svc.held(id); ok {
			return func(func(events.Event, error) bool) {}
		}
	}
	return l.Log.Read(ctx, id, from)
}
