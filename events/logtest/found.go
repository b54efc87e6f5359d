package logtest

import (
	"context"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/events"
)

// testFound: events.Found (CreateSessionWith, for a Founder) creates a
// session, root or fork, with its first batch, readable as if it had been
// created and then appended to; and when it refuses, nothing of the
// session is stored: a bad batch, a taken ID, a missing parent or a fork
// point beyond the parent's end leave the log as it was.
func testFound(t *testing.T, l events.Log) {
	ctx := context.Background()
	wantAbsent := func(t *testing.T, id string) {
		t.Helper()
		_, err := l.Session(ctx, id)
		wantErrIs(t, "Session("+id+") after a refused Found", err, events.ErrNoSession)
	}

	t.Run("root", func(t *testing.T) {
		m := meta("r")
		batch := mkEvents(1, 4, "r")
		if err := events.Found(ctx, l, m, batch); err != nil {
			t.Fatalf("Found(r): %v", err)
		}
		if got, err := l.Session(ctx, "r"); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("Session(r): got %+v, %v; want %+v", got, err, m)
		}
		wantLastSeq(t, l, "r", 4)
		wantEvents(t, "Read(r)", mustRead(t, l, "r", 1), withSession("r", batch))
		// It goes on like any session.
		more := mkEvents(5, 2, "r")
		mustAppend(t, l, "r", 4, more)
		wantEvents(t, "Read(r, 4)", mustRead(t, l, "r", 4), withSession("r", append(batch[3:4:4], more...)))
		// A second founding of the same ID is refused and changes nothing.
		wantErrIs(t, "Found(r) again", events.Found(ctx, l, m, mkEvents(1, 1, "x")), events.ErrSessionExists)
		wantLastSeq(t, l, "r", 6)
	})

	t.Run("fork", func(t *testing.T) {
		parent := mkEvents(1, 6, "p")
		mustCreate(t, l, meta("p"))
		mustAppend(t, l, "p", 0, parent)
		f := meta("f")
		f.Parent, f.ForkSeq = "p", 4
		own := mkEvents(5, 2, "f")
		if err := events.Found(ctx, l, f, own); err != nil {
			t.Fatalf("Found(f at 4): %v", err)
		}
		if got, err := l.Session(ctx, "f"); err != nil || !reflect.DeepEqual(got, f) {
			t.Fatalf("Session(f): got %+v, %v; want %+v", got, err, f)
		}
		wantLastSeq(t, l, "f", 6)
		want := append(withSession("p", parent[:4]), withSession("f", own)...)
		wantEvents(t, "Read(f)", mustRead(t, l, "f", 1), want)
		wantLastSeq(t, l, "p", 6) // the parent is untouched
		wantEvents(t, "Read(p)", mustRead(t, l, "p", 1), withSession("p", parent))
	})

	refused := []struct {
		name  string
		m     func() events.SessionMeta
		batch []events.Event
		want  error
	}{
		{"empty batch", func() events.SessionMeta { return meta("e1") }, nil, events.ErrBadBatch},
		{"batch not from seq 1", func() events.SessionMeta { return meta("e2") }, mkEvents(2, 2, "e"), events.ErrBadBatch},
		{"batch of a fork not after its fork point", func() events.SessionMeta {
			m := meta("e3")
			m.Parent, m.ForkSeq = "p", 3
			return m
		}, mkEvents(5, 1, "e"), events.ErrBadBatch},
		{"payload not a JSON object", func() events.SessionMeta { return meta("e4") }, func() []events.Event {
			b := mkEvents(1, 2, "e")
			b[1].Payload = []byte(`[1]`)
			return b
		}(), events.ErrBadBatch},
		{"missing parent", func() events.SessionMeta {
			m := meta("e5")
			m.Parent, m.ForkSeq = "nobody", 2
			return m
		}, mkEvents(3, 1, "e"), events.ErrNoSession},
		{"fork point beyond the parent", func() events.SessionMeta {
			m := meta("e6")
			m.Parent, m.ForkSeq = "p", 60
			return m
		}, mkEvents(61, 1, "e"), events.ErrBadSession},
		{"bad metadata", func() events.SessionMeta {
			m := meta("e7")
			m.Status = "dancing"
			return m
		}, mkEvents(1, 1, "e"), events.ErrBadSession},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m()
			wantErrIs(t, "Found", events.Found(ctx, l, m, tt.batch), tt.want)
			wantAbsent(t, m.ID)
		})
	}

	t.Run("closed", func(t *testing.T) {
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wantErrIs(t, "Found after Close", events.Found(ctx, l, meta("c"), mkEvents(1, 1, "c")), events.ErrClosed)
	})
}
