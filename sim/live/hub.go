package live

import (
	"bytes"
	"sync"
	"time"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/driver"
)

// Hub passes the events a server makes durable to the live pages
// following their sessions. It is a driver.Observer: the server's driver
// calls Appended after each durable append. A follower that falls behind
// (its buffer is full) is marked lagging and catches up from the log
// instead, so the driver never waits for a browser.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[*follower]struct{}
}

var _ driver.Observer = (*Hub)(nil)

// NewHub makes an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string]map[*follower]struct{}{}} }

// followerBuffer is how many events a follower buffers before it lags.
const followerBuffer = 4096

type follower struct {
	ch      chan events.Event
	mu      sync.Mutex
	lagging bool
}

// Appended implements driver.Observer. The batch is borrowed: the events
// are copied.
func (h *Hub) Appended(session string, batch []events.Event, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.subs[session]
	if len(subs) == 0 {
		return
	}
	for i := range batch {
		ev := batch[i]
		ev.Payload = bytes.Clone(ev.Payload)
		for f := range subs { // order: each follower gets every event; which first does not matter
			select {
			case f.ch <- ev:
			default:
				f.mu.Lock()
				f.lagging = true
				f.mu.Unlock()
			}
		}
	}
}

// Turn implements driver.Observer (a no-op).
func (h *Hub) Turn(string, string, time.Duration, bool) {}

// follow subscribes to session's events; stop unsubscribes.
func (h *Hub) follow(session string) (*follower, func()) {
	f := &follower{ch: make(chan events.Event, followerBuffer)}
	h.mu.Lock()
	if h.subs[session] == nil {
		h.subs[session] = map[*follower]struct{}{}
	}
	h.subs[session][f] = struct{}{}
	h.mu.Unlock()
	return f, func() {
		h.mu.Lock()
		delete(h.subs[session], f)
		if len(h.subs[session]) == 0 {
			delete(h.subs, session)
		}
		h.mu.Unlock()
	}
}

// takeLag reports and clears the lagging mark.
func (f *follower) takeLag() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lagging
	f.lagging = false
	return l
}

// Observers calls each of its observers in turn.
type Observers []driver.Observer

// Appended implements driver.Observer.
func (o Observers) Appended(session string, batch []events.Event, d time.Duration) {
	for _, x := range o {
		x.Appended(session, batch, d)
	}
}

// Turn implements driver.Observer.
func (o Observers) Turn(session, member string, d time.Duration, timedOut bool) {
	for _, x := range o {
		x.Turn(session, member, d, timedOut)
	}
}
