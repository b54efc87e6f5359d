package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/worlds"
)

// TestFaultStoreWaitsForRoom: another writer fills the disk of a served
// store between the log's look at its free space and Pebble's next write
// of the WAL, which Pebble cannot go on from (it stops its database, or
// ends the process when the write was its switch to a new WAL file). The
// write waits for room instead: the sessions whose next write the log
// refuses for room stop interrupted, those whose write waits go on once
// the other writer frees its room a second later, every session's end is
// recorded, the log never fails, and a new session runs to its end,
// without a restart. Real Pebble on an in-memory file system that fails
// writes as a full disk does.
func TestFaultStoreWaitsForRoom(t *testing.T) {
	mem := vfs.NewCrashableMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 40, TotalBytes: 1 << 40})
	var mu sync.Mutex
	full := false
	setFull := func(v bool) {
		mu.Lock()
		full = v
		mu.Unlock()
		if !v {
			mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 40, TotalBytes: 1 << 40})
		}
	}
	var failedWrites int
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if full && allocates(op.Kind) {
			failedWrites++
			// From the first write that meets it, the disk says so.
			mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 4096, TotalBytes: 1 << 40})
			return fmt.Errorf("write %s: %w", op.Path, syscall.ENOSPC)
		}
		return nil
	}))
	l, err := pebblelog.Open("db", pebblelog.Options{FS: fs, Logger: testLogger(t).Named("pebble")})
	if err != nil {
		t.Fatal(err)
	}
	auth := natsserver.NewAuth(natsserver.NewToken())
	bus, err := natsserver.Start(natsserver.Options{Listen: freeAddr(t), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Shutdown()
	svc, err := server.New(server.Config{Log: l, Bus: bus, Auth: auth, Logger: testLogger(t), CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		svc.Close()
		if err := l.Close(); err != nil {
			t.Errorf("closing the log: %v", err)
		}
	}()

	bench, err := worlds.Source("support-desk-bench")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(bench), "count: 200000", "count: 50000", 1)
	var ids []string
	for seed := range uint64(3) {
		reply, err := svc.Create(requestCtx(t, time.Minute), wire.CreateRequest{Source: src, Seed: seed + 1, Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reply.Session)
	}
	for _, id := range ids {
		waitFor(t, time.Minute, func() bool { last, err := l.LastSeq(context.Background(), id); return err == nil && last > 1000 })
	}
	setFull(true)
	time.Sleep(time.Second)
	mu.Lock()
	met := failedWrites
	mu.Unlock()
	if met == 0 {
		t.Fatal("no write met the full disk: the sessions had ended, and the test proves nothing")
	}
	setFull(false)

	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		m, err := svc.Wait(ctx, id)
		cancel()
		switch {
		case m.Status == events.StatusFinished && err == nil:
		case m.Status == events.StatusInterrupted && errors.Is(err, syscall.ENOSPC) && !errors.Is(err, pebblelog.ErrFailed):
		default:
			t.Fatalf("session %s across the full disk: %s, %v; want finished, or interrupted by a write refused for room", id, m.Status, err)
		}
		waitFor(t, 30*time.Second, func() bool {
			stored, err := l.Session(context.Background(), id)
			return err == nil && stored.Status == m.Status
		})
		if last, err := l.LastSeq(context.Background(), id); err != nil || last < m.LastSeq {
			t.Fatalf("session %s: %d events stored, %v; its end records %d", id, last, err, m.LastSeq)
		}
	}
	reply, err := svc.Create(requestCtx(t, time.Minute), wire.CreateRequest{World: "startup", Seed: 9, Agents: "greedy"})
	if err != nil {
		t.Fatalf("a new session once the disk had room: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if m, err := svc.Wait(ctx, reply.Session); err != nil || m.Status != events.StatusFinished {
		t.Fatalf("the new session: %s, %v; want finished", m.Status, err)
	}
}

// allocates tells the operations that a full local disk (ext4, xfs,
// tmpfs) fails for room: the writes of data. A sync of bytes a write
// already placed does not (those file systems allocate at the write; a
// create or a rename needs a new block only when its directory grows), and
// a sync that fails is one the log cannot try again (the kernel may have
// dropped the pages it could not write): Pebble stops, and so does the Log
// (pebblelog.ErrFailed). An injector that failed syncs for room as well
// made this test fail whenever the disk filled between a write of the WAL
// and its sync (CI saw it once).
func allocates(k errorfs.OpKind) bool {
	switch k {
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate:
		return true
	}
	return false
}

// waitFor polls cond every 10 ms until it holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
