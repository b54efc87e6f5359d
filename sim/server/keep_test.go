package server

import (
	"context"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
)

// The service keeps the records of the latest KeepEnded sessions to end
// and forgets the earlier ones (their logs say how they ended), letting go
// of the worlds of all that ended: a server that runs sessions for weeks
// does not grow by every session it ran.
func TestServiceKeepsTheLatestEnded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc := mustServiceWith(t, Config{Log: memlog.New(), Bus: mustBus(t), KeepEnded: 3})
	var ids []string
	for i := range 8 {
		r, err := svc.Create(ctx, wire.CreateRequest{World: "meetings", Seed: uint64(i + 1), Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		if m, err := svc.Wait(ctx, r.Session); err != nil || m.Status != events.StatusFinished {
			t.Fatalf("session %d: %s, %v", i, m.Status, err)
		}
		ids = append(ids, r.Session)
	}
	// The last session's goroutine may still be finishing: wait for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		svc.mu.Lock()
		n := len(svc.sessions)
		svc.mu.Unlock()
		if n <= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	svc.mu.Lock()
	n, kept := len(svc.sessions), len(svc.ended)
	for _, ss := range svc.sessions {
		if ss.world != nil {
			t.Errorf("ended session %s still holds its world", ss.id)
		}
	}
	svc.mu.Unlock()
	if n != 3 || kept != 3 {
		t.Fatalf("the service holds %d sessions (%d ended kept) after 8 ended; want the latest 3", n, kept)
	}
	if r := svc.Status(ids[0]); r.Error != "no such session" {
		t.Errorf("the first session's status: %+v; want it forgotten", r)
	}
	if r := svc.Status(ids[7]); r.Error != "" || r.Status != string(events.StatusFinished) {
		t.Errorf("the last session's status: %+v; want finished", r)
	}
	// The forgotten sessions are still listed, from the log.
	metas, err := svc.List(ctx)
	if err != nil || len(metas) != 8 {
		t.Fatalf("listing: %d sessions, %v; want all 8", len(metas), err)
	}
}

// endHold is a log that holds the session's driver once its end is
// recorded (the metadata updated to finished), until released: the window
// in which status reads the session finished from the log while the
// service is still finishing it.
type endHold struct {
	events.Log
	held    chan struct{}
	release chan struct{}
}

func (h *endHold) UpdateSession(ctx context.Context, m events.SessionMeta) error {
	err := h.Log.UpdateSession(ctx, m)
	if m.Status == events.StatusFinished {
		close(h.held)
		<-h.release
	}
	return err
}

func (h *endHold) DeleteSession(ctx context.Context, id string) (int, error) {
	return h.Log.(events.Deleter).DeleteSession(ctx, id)
}

// A client that saw a session finished and deletes it at once is not
// refused as running while the service is still finishing it: Delete
// waits for the finish (it was refused 409 in CI: a serve's status read
// the end from the log before the session let go of its engine).
func TestDeleteWaitsForAFinishingSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := &endHold{Log: memlog.New(), held: make(chan struct{}), release: make(chan struct{})}
	svc := mustServiceWith(t, Config{Log: h, Bus: mustBus(t)})
	released := false
	t.Cleanup(func() { // before the service's Close, which waits for it
		if !released {
			close(h.release)
		}
	})
	r, err := svc.Create(ctx, wire.CreateRequest{World: "meetings", Seed: 1, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	<-h.held
	if st := svc.Status(r.Session); st.Status != string(events.StatusFinished) {
		t.Fatalf("status while finishing: %+v; want finished (from the log)", st)
	}
	type result struct {
		done []wire.Deleted
		err  error
	}
	got := make(chan result, 1)
	go func() {
		done, err := svc.Delete(ctx, []string{r.Session}, false)
		got <- result{done, err}
	}()
	select {
	case res := <-got:
		t.Fatalf("Delete answered before the session finished: %+v, %v", res.done, res.err)
	case <-time.After(200 * time.Millisecond):
	}
	close(h.release)
	released = true
	res := <-got
	if res.err != nil || len(res.done) != 1 || res.done[0].Session != r.Session {
		t.Fatalf("Delete of a session that finished: %+v, %v", res.done, res.err)
	}
}
