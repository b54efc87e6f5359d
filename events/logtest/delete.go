package logtest

import (
	"context"
	"errors"
	"testing"

	"github.com/corpsim/corpsim/events"
)

// testDelete: a Deleter removes a session — metadata, events, checkpoints —
// and nothing of the others; a session with a fork is refused until the
// fork is gone; a deleted session takes no more appends or checkpoints,
// and its ID may be taken again from nothing. Logs that do not delete pass.
func testDelete(t *testing.T, l events.Log) {
	d, ok := l.(events.Deleter)
	if !ok {
		t.Skip("the log does not delete sessions")
	}
	ctx := context.Background()
	mustCreate(t, l, meta("p"))
	mustAppend(t, l, "p", 0, mkEvents(1, 6, "p"))
	mustPutCheckpoint(t, l, "p", mkCheckpoint(3, "p"))
	mustCreate(t, l, meta("q"))
	q := mkEvents(1, 3, "q")
	mustAppend(t, l, "q", 0, q)
	f := meta("f")
	f.Parent, f.ForkSeq = "p", 4
	mustCreate(t, l, f)
	mustAppend(t, l, "f", 4, mkEvents(5, 2, "f"))
	mustPutCheckpoint(t, l, "f", mkCheckpoint(5, "f"))

	_, err := d.DeleteSession(ctx, "p")
	wantErrIs(t, "DeleteSession(p) with a fork", err, events.ErrBadSession)
	wantLastSeq(t, l, "p", 6) // refused: nothing of it went
	if n, err := d.DeleteSession(ctx, "f"); err != nil || n != 2 {
		t.Fatalf("DeleteSession(f): %d events, %v; want its own 2", n, err)
	}
	wantLastSeq(t, l, "p", 6) // the parent keeps what the fork shared
	if n, err := d.DeleteSession(ctx, "p"); err != nil || n != 6 {
		t.Fatalf("DeleteSession(p): %d events, %v; want 6", n, err)
	}
	for _, id := range []string{"p", "f"} {
		_, err := l.Session(ctx, id)
		wantErrIs(t, "Session of a deleted session", err, events.ErrNoSession)
		_, err = l.LastSeq(ctx, id)
		wantErrIs(t, "LastSeq of a deleted session", err, events.ErrNoSession)
		wantErrIs(t, "Append to a deleted session", l.Append(ctx, id, 6, mkEvents(7, 1, id)), events.ErrNoSession)
		wantErrIs(t, "PutCheckpoint of a deleted session", l.PutCheckpoint(ctx, id, mkCheckpoint(1, id)), events.ErrNoSession)
		_, err = d.DeleteSession(ctx, id)
		wantErrIs(t, "DeleteSession twice", err, events.ErrNoSession)
	}
	all, err := l.Sessions(ctx)
	if err != nil || len(all) != 1 || all[0].ID != "q" {
		t.Fatalf("Sessions after the deletes: %+v, %v; want q alone", all, err)
	}
	wantEvents(t, "Read(q)", mustRead(t, l, "q", 1), withSession("q", q))
	// The IDs are free again, with nothing of the old sessions in them:
	// p a session of its own, f now a fork of q at another point.
	mustCreate(t, l, meta("p"))
	wantLastSeq(t, l, "p", 0)
	if got := mustRead(t, l, "p", 1); len(got) != 0 {
		t.Fatalf("a new session p reads %d events of the deleted one", len(got))
	}
	if got := mustCheckpoints(t, l, "p"); len(got) != 0 {
		t.Fatalf("a new session p has %d checkpoints of the deleted one", len(got))
	}
	mustAppend(t, l, "p", 0, mkEvents(1, 2, "new"))
	wantLastSeq(t, l, "p", 2)
	f = meta("f")
	f.Parent, f.ForkSeq = "q", 1
	mustCreate(t, l, f)
	wantLastSeq(t, l, "f", 1)
	wantEvents(t, "Read(f) of the new fork", mustRead(t, l, "f", 1), withSession("q", q[:1]))
	if _, err := l.LatestCheckpoint(ctx, "f", 10); !errors.Is(err, events.ErrNoCheckpoint) {
		t.Fatalf("the new fork f finds a checkpoint (%v); the deleted f's went with it", err)
	}
}
