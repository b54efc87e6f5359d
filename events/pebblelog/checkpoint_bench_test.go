package pebblelog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

// fillSession appends n small events (about 100 bytes stored each) to
// session id of l, after last, in batches of up to 10,000. Meant for a
// NoSync log.
func fillSession(b *testing.B, l *pebblelog.Log, id string, last uint64, n int) {
	b.Helper()
	const batchLen = 10_000
	batch := make([]events.Event, 0, batchLen)
	ctx := context.Background()
	for done := 0; done < n; {
		batch = batch[:0]
		for i := 0; i < batchLen && done+i < n; i++ {
			seq := last + uint64(i) + 1
			batch = append(batch, events.Event{
				ID:      events.NewID(idKey, 1_700_000_000_000, int64(seq)*1000, seq),
				Seq:     seq,
				Time:    int64(seq) * 1000,
				Type:    "task.progress",
				Actor:   "alice",
				Cause:   seq - 1,
				Payload: json.RawMessage(fmt.Sprintf(`{"task":"t-%04d","done":%d}`, seq%10_000, seq%100)),
			})
		}
		if err := l.Append(ctx, id, last, batch); err != nil {
			b.Fatalf("Append(%s, %d): %v", id, last, err)
		}
		last += uint64(len(batch))
		done += len(batch)
	}
}

// settle flushes the memtable and compacts the whole database, so every
// size is measured on sstables in the shape a long-running log settles
// into, not on the memtable or the pile of level-0 files a bulk load
// leaves behind.
func settle(b *testing.B, db *pebble.DB) {
	b.Helper()
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Compact(context.Background(), []byte("a"), []byte("z"), true); err != nil {
		b.Fatal(err)
	}
}

// lsmShape describes the sstables of db, e.g. "L0: 0 files, L6: 3 files".
func lsmShape(db *pebble.DB) string {
	m := db.Metrics()
	var parts []string
	for i, lv := range m.Levels {
		if lv.TablesCount > 0 || i == 0 {
			parts = append(parts, fmt.Sprintf("L%d: %d files", i, lv.TablesCount))
		}
	}
	return strings.Join(parts, ", ")
}

// benchCheckpoint returns the checkpoint after seq, with 256 bytes of data.
func benchCheckpoint(seq uint64) events.Checkpoint {
	data := fmt.Appendf(nil, `{"seq":%d,"state":"`, seq)
	data = append(data, bytes.Repeat([]byte("s"), 256-len(data)-2)...)
	data = append(data, `"}`...)
	return events.Checkpoint{Seq: seq, StateHash: strings.Repeat("c3", 32), Data: data}
}

// BenchmarkLatestCheckpoint looks up the latest checkpoint at or before a
// seq in a session holding n checkpoints, one after every other event, each
// with 256 bytes of data. Lookups are at odd seqs spread over the session,
// so each lands just after a checkpoint; the same lookups are made once
// untimed first, so the block cache is warm and ns/op is the cost of the
// lookup, not of reading blocks from disk. With one reverse seek per
// lookup, ns/op should not grow with n beyond Pebble's own cost of a seek
// in a bigger LSM. raw-pebble is the baseline: the same seek and value copy
// straight on Pebble, without the Log layer (locking, metadata, decoding
// and checksum).
func BenchmarkLatestCheckpoint(b *testing.B) {
	// The logs are built once per n and reused by every run of the
	// sub-benchmark, so they belong to the outer benchmark.
	outer := b
	logs := map[int]*pebblelog.Log{}
	setup := func(b *testing.B, n int) *pebblelog.Log {
		if l, ok := logs[n]; ok {
			return l
		}
		start := time.Now()
		l := mustOpen(b, outer.TempDir(), pebblelog.Options{NoSync: true})
		outer.Cleanup(func() { l.Close() })
		mustCreate(b, l, meta("s"))
		fillSession(b, l, "s", 0, 2*n)
		for i := 1; i <= n; i++ {
			mustPutCheckpoint(b, l, "s", benchCheckpoint(uint64(2*i)))
		}
		settle(b, l.DB())
		b.Logf("setup of %d checkpoints: %v; %s", n, time.Since(start).Round(time.Millisecond), lsmShape(l.DB()))
		logs[n] = l
		runtime.GC() // not in the timed runs
		return l
	}
	// query returns the i-th seq to look up: odd, spread over [3, 2n+1].
	query := func(i, n int) uint64 { return uint64(2*(1+(i*7919)%n) + 1) }

	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("checkpoints=%d", n), func(b *testing.B) {
			l := setup(b, n)
			ctx := context.Background()
			lookup := func(i int) {
				at := query(i, n)
				cp, err := l.LatestCheckpoint(ctx, "s", at)
				if err != nil {
					b.Fatal(err)
				}
				if cp.Seq != at-1 || len(cp.Data) != 256 {
					b.Fatalf("LatestCheckpoint(%d): got seq %d with %d bytes, want seq %d with 256", at, cp.Seq, len(cp.Data), at-1)
				}
			}
			for i := range b.N { // warm the block cache: measure lookups, not disk reads
				lookup(i)
			}
			miss := cacheMisses(l.DB())
			b.ResetTimer()
			for i := range b.N {
				lookup(i)
			}
			miss(b)
		})
	}
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("raw-pebble/checkpoints=%d", n), func(b *testing.B) {
			benchRawSeekLT(b, setup(b, n).DB(), n, query)
		})
	}
}

// benchRawSeekLT is BenchmarkLatestCheckpoint's baseline: one bounded
// reverse seek and a copy of the value, straight on Pebble.
func benchRawSeekLT(b *testing.B, db *pebble.DB, n int, query func(i, n int) uint64) {
	lower := pebblelog.CheckpointKey("s", 0)[:len("c/s/")]
	seek := func(i int) {
		at := query(i, n)
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: pebblelog.CheckpointKey("s", at+1)})
		if err != nil {
			b.Fatal(err)
		}
		if !it.Last() {
			b.Fatalf("no checkpoint at or before %d", at)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			b.Fatal(err)
		}
		if v = bytes.Clone(v); len(v) < 256 {
			b.Fatalf("value of %d bytes", len(v))
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for i := range b.N { // warm the block cache, as the Log runs do
		seek(i)
	}
	miss := cacheMisses(db)
	b.ResetTimer()
	for i := range b.N {
		seek(i)
	}
	miss(b)
}

// cacheMisses returns a function reporting the block and file cache misses
// per op since it was made: 0 means every lookup was served from memory.
// (With Pebble's default 8 MiB block cache, which its memtables use up,
// the 100,000 case missed 3 blocks per lookup and took 4x as long; hence
// Options.CacheSize.)
func cacheMisses(db *pebble.DB) func(b *testing.B) {
	m0 := db.Metrics()
	return func(b *testing.B) {
		m := db.Metrics()
		b.ReportMetric(float64(m.BlockCache.Misses-m0.BlockCache.Misses)/float64(b.N), "block-misses/op")
		b.ReportMetric(float64(m.FileCache.Misses-m0.FileCache.Misses)/float64(b.N), "file-misses/op")
	}
}

// BenchmarkFork measures forking a parent at its last seq and resuming the
// fork, for a parent of 1,000 and of 1,000,000 events (each in its own
// database). The parent holds a checkpoint at its last seq. One op, on a
// synced log with the session cache dropped first (as in a fresh process):
//
//	create: the fork founded with its first own event (events.Found: the
//	        metadata and the event in one synced batch), as the driver
//	        founds a fork that goes on;
//	resume: LastSeq, LatestCheckpoint (the parent's, one level up) and Read
//	        of the first own event.
//
// A fork points at its parent's prefix instead of copying it, so ns/op
// should not grow with the prefix. The create and resume shares are
// reported as create-ns/op and resume-ns/op; create holds one fsync (two
// before founding: CreateSession's and Append's).
func BenchmarkFork(b *testing.B) {
	type parent struct {
		l    *pebblelog.Log
		next int // forks made so far
	}
	// The parents are built once per n and reused by every run of the
	// sub-benchmark, so they belong to the outer benchmark.
	outer := b
	parents := map[int]*parent{}
	dir := b.TempDir()
	setup := func(b *testing.B, n int) *parent {
		if p, ok := parents[n]; ok {
			return p
		}
		start := time.Now()
		path := filepath.Join(dir, fmt.Sprint(n))
		l := mustOpen(b, path, pebblelog.Options{NoSync: true})
		mustCreate(b, l, meta("p"))
		fillSession(b, l, "p", 0, n)
		mustPutCheckpoint(b, l, "p", benchCheckpoint(uint64(n)))
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		l = mustOpen(b, path, pebblelog.Options{}) // synced from here on
		outer.Cleanup(func() { l.Close() })
		settle(b, l.DB())
		b.Logf("setup of a %d-event parent: %v; %s", n, time.Since(start).Round(time.Millisecond), lsmShape(l.DB()))
		p := &parent{l: l}
		parents[n] = p
		runtime.GC() // not in the timed runs
		return p
	}

	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("prefix=%d", n), func(b *testing.B) {
			p := setup(b, n)
			l, last := p.l, uint64(n)
			ctx := context.Background()
			own := events.Event{
				ID:   events.NewID(idKey, 1_700_000_000_000, int64(last+1)*1000, last+1),
				Seq:  last + 1,
				Time: int64(last+1) * 1000,
				Type: "fork.started",
			}
			var create, resume time.Duration
			b.ResetTimer()
			for range b.N {
				p.next++
				id := fmt.Sprintf("f%d", p.next)
				m := meta(id)
				m.Parent, m.ForkSeq = "p", last

				t0 := time.Now()
				l.ForgetCache()
				if err := events.Found(ctx, l, m, []events.Event{own}); err != nil {
					b.Fatalf("Found(%s): %v", id, err)
				}
				t1 := time.Now()
				l.ForgetCache()
				got, err := l.LastSeq(ctx, id)
				if err != nil || got != last+1 {
					b.Fatalf("LastSeq(%s): got %d, %v; want %d", id, got, err, last+1)
				}
				cp, err := l.LatestCheckpoint(ctx, id, got)
				if err != nil || cp.Seq != last {
					b.Fatalf("LatestCheckpoint(%s, %d): got seq %d, %v; want %d", id, got, cp.Seq, err, last)
				}
				evs, err := readAll(l, id, cp.Seq+1)
				if err != nil || len(evs) != 1 || evs[0].ID != own.ID || evs[0].Session != id {
					b.Fatalf("Read(%s, %d): got %+v, %v; want its first own event", id, cp.Seq+1, evs, err)
				}
				t2 := time.Now()
				create += t1.Sub(t0)
				resume += t2.Sub(t1)
			}
			b.ReportMetric(float64(create.Nanoseconds())/float64(b.N), "create-ns/op")
			b.ReportMetric(float64(resume.Nanoseconds())/float64(b.N), "resume-ns/op")
		})
	}
}
