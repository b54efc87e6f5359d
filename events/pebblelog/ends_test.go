package pebblelog_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

// Sessions that end at once share the flushes that put their ends in a
// table, and every one is in a table when its end returns: after a crash
// that takes every WAL, each ended session is whole and finished.
func TestSessionsEndingAtOnceShareFlushes(t *testing.T) {
	const sessions, each = 24, 40
	fs := vfs.NewCrashableMem()
	// The first flush's table is held until the other ends have come (on a
	// loaded machine they can come over many milliseconds, and each late
	// one would make a flush of its own, as it should).
	var holding sync.Once
	held, release := make(chan struct{}), make(chan struct{})
	wrapped := errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst") {
			holding.Do(func() {
				close(held)
				<-release
			})
		}
		return nil
	}))
	l := mustOpen(t, "db", pebblelog.Options{FS: wrapped})
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%02d", i)
		mustCreate(t, l, meta(ids[i]))
		appendN(t, l, ids[i], 0, each)
	}
	before := l.DB().Metrics().Flush.Count
	start := make(chan struct{})
	var wg sync.WaitGroup
	var called sync.WaitGroup
	called.Add(sessions)
	for _, id := range ids {
		wg.Go(func() {
			<-start
			called.Done()
			finish(t, l, id, each)
		})
	}
	close(start)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("no end made a flush within a minute")
	}
	called.Wait()
	time.Sleep(50 * time.Millisecond) // from called to waiting in the flush group
	close(release)
	wg.Wait()
	flushes := l.DB().Metrics().Flush.Count - before
	t.Logf("%d sessions ended at once: %d flushes", sessions, flushes)
	if flushes == 0 || flushes > sessions/4 {
		// One each when the ends waited for each other's flushes, about
		// one for two when each asked Pebble for its own at once; 2 here
		// when they share.
		t.Fatalf("%d sessions ended at once made %d flushes; want them to share (at least one, at most a quarter of one each)", sessions, flushes)
	}

	// A crash now, and every WAL lost: the ends are in tables.
	img := fs.CrashClone(vfs.CrashCloneCfg{})
	names, err := img.List("db")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			if err := img.Remove(img.PathJoin("db", n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := mustOpen(t, "db", pebblelog.Options{FS: img, ReadOnly: true})
	defer r.Close()
	ctx := context.Background()
	for _, id := range ids {
		m, err := r.Session(ctx, id)
		if err != nil {
			t.Fatalf("session %s after losing the WALs: %v", id, err)
		}
		last, err := r.LastSeq(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != events.StatusFinished || last != each {
			t.Fatalf("session %s after losing the WALs: %s with %d events; want finished with %d", id, m.Status, last, each)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
