package pebblelog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

// The benchmarks write batches of benchBatch events with payloads of about
// 200 bytes. Each Log benchmark has a raw Pebble baseline writing or reading
// the same keys and bytes, so the cost of the Log layer (validation,
// idempotency and conflict checks, locking, decoding) shows in one run.

const benchBatch = 64

var benchPayload = json.RawMessage(`{"task":"t-0042","from":"alice","to":"bob","note":"` + strings.Repeat("x", 150) + `"}`)

// benchEvents returns a batch template; fill sets it to seqs from, from+1, ….
func benchEvents() (batch []events.Event, fill func(from uint64)) { return benchEventsN(benchBatch) }

// benchEventsN is benchEvents with batches of n events.
func benchEventsN(n int) (batch []events.Event, fill func(from uint64)) {
	batch = make([]events.Event, n)
	for i := range batch {
		batch[i] = events.Event{Type: "message.sent", Actor: "alice", Payload: benchPayload}
	}
	return batch, func(from uint64) {
		for i := range batch {
			seq := from + uint64(i)
			batch[i].Seq, batch[i].Time, batch[i].Cause = seq, int64(seq)*1000, seq-1
			batch[i].ID = events.NewID(idKey, 1_700_000_000_000, batch[i].Time, seq)
		}
	}
}

func reportEventsPerSec(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

func openRaw(b *testing.B, dir string) *pebble.DB {
	b.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quiet{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// quiet discards Pebble's log messages, as pebblelog.Open does.
type quiet struct{}

func (quiet) Infof(string, ...any)           {}
func (quiet) Errorf(string, ...any)          {}
func (quiet) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func openBenchLog(b *testing.B, opts pebblelog.Options, sessions ...string) *pebblelog.Log {
	b.Helper()
	l := mustOpen(b, b.TempDir(), opts)
	b.Cleanup(func() { l.Close() })
	for _, s := range sessions {
		mustCreate(b, l, meta(s))
	}
	return l
}

// BenchmarkAppend measures synced Appends of one batch each.
func BenchmarkAppend(b *testing.B) {
	l := openBenchLog(b, pebblelog.Options{}, "s")
	batch, fill := benchEvents()
	ctx := context.Background()
	var last uint64
	b.SetBytes(int64(benchBatch * events.EncodedLen(&batch[0])))
	b.ResetTimer()
	for range b.N {
		fill(last + 1)
		if err := l.Append(ctx, "s", last, batch); err != nil {
			b.Fatal(err)
		}
		last += benchBatch
	}
	reportEventsPerSec(b, b.N*benchBatch)
}

// BenchmarkRawPebbleBatch is BenchmarkAppend's baseline: the same keys and
// encoded events written straight to Pebble, one synced batch per op.
func BenchmarkRawPebbleBatch(b *testing.B) { rawPebbleBatches(b, benchBatch) }

// BenchmarkRawPebbleGroup is the ceiling of a durable run: raw synced
// batches as large as the driver's group commit (driver.DefaultMaxBatch,
// 4096 events), the most a run that asks no agent puts in one batch.
func BenchmarkRawPebbleGroup(b *testing.B) { rawPebbleBatches(b, 4096) }

func rawPebbleBatches(b *testing.B, n int) {
	db := openRaw(b, b.TempDir())
	batch, fill := benchEventsN(n)
	var (
		last uint64
		key  []byte
		val  []byte
	)
	b.SetBytes(int64(n * events.EncodedLen(&batch[0])))
	b.ResetTimer()
	for range b.N {
		fill(last + 1)
		pb := db.NewBatch()
		for i := range batch {
			key = append(append(key[:0], "e/s/"...), pebblelog.EventKey("s", batch[i].Seq)[4:]...)
			val = events.AppendEncode(val[:0], &batch[i])
			if err := pb.Set(key, val, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := pb.Commit(pebble.Sync); err != nil {
			b.Fatal(err)
		}
		pb.Close()
		last += uint64(n)
	}
	reportEventsPerSec(b, b.N*n)
}

// BenchmarkAppendParallel appends synced batches from several goroutines,
// each to its own session; Pebble's commit pipeline shares their fsyncs.
func BenchmarkAppendParallel(b *testing.B) {
	const sessions = 64
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%02d", i)
	}
	l := openBenchLog(b, pebblelog.Options{}, ids...)
	var next atomic.Int64
	ctx := context.Background()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := ids[int(next.Add(1)-1)%sessions]
		batch, fill := benchEvents()
		var last uint64
		for pb.Next() {
			fill(last + 1)
			if err := l.Append(ctx, id, last, batch); err != nil {
				b.Error(err)
				return
			}
			last += benchBatch
		}
	})
	reportEventsPerSec(b, b.N*benchBatch)
}

const benchReadEvents = 160 * benchBatch // 10240

// readBenchLog is a log whose session "s" holds benchReadEvents events,
// for the read benchmarks, and one batch of them.
func readBenchLog(b *testing.B) (*pebblelog.Log, []events.Event) {
	l := openBenchLog(b, pebblelog.Options{NoSync: true}, "s")
	batch, fill := benchEvents()
	for last := uint64(0); last < benchReadEvents; last += benchBatch {
		fill(last + 1)
		mustAppend(b, l, "s", last, batch)
	}
	return l, batch
}

// BenchmarkRead measures Read: one op is one event read and decoded.
func BenchmarkRead(b *testing.B) {
	l, batch := readBenchLog(b)
	ctx := context.Background()
	b.SetBytes(int64(events.EncodedLen(&batch[0])))
	b.ResetTimer()
	for n := 0; n < b.N; {
		for e, err := range l.Read(ctx, "s", 1) {
			if err != nil {
				b.Fatal(err)
			}
			if len(e.Payload) == 0 {
				b.Fatal("empty payload")
			}
			if n++; n == b.N {
				break
			}
		}
	}
	reportEventsPerSec(b, b.N)
}

// BenchmarkScan measures Scan, the borrowed-event read: one op is one
// event read, checksummed and decoded in place.
func BenchmarkScan(b *testing.B) {
	l, batch := readBenchLog(b)
	ctx := context.Background()
	errDone := errors.New("done")
	b.SetBytes(int64(events.EncodedLen(&batch[0])))
	b.ResetTimer()
	for n := 0; n < b.N; {
		err := l.Scan(ctx, "s", 1, func(e *events.Event) error {
			if len(e.Payload) == 0 {
				return errors.New("empty payload")
			}
			if n++; n == b.N {
				return errDone
			}
			return nil
		})
		if err != nil && err != errDone {
			b.Fatal(err)
		}
	}
	reportEventsPerSec(b, b.N)
}

// BenchmarkRawPebbleScan is BenchmarkRead's baseline: the same keys and
// values scanned straight from Pebble, without decoding.
func BenchmarkRawPebbleScan(b *testing.B) {
	db := openRaw(b, b.TempDir())
	batch, fill := benchEvents()
	for last := uint64(0); last < benchReadEvents; last += benchBatch {
		fill(last + 1)
		pb := db.NewBatch()
		for i := range batch {
			if err := pb.Set(pebblelog.EventKey("s", batch[i].Seq), events.Encode(&batch[i]), nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := pb.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
		pb.Close()
	}
	lower, upper := []byte("e/s/"), []byte("e/s0")
	b.SetBytes(int64(events.EncodedLen(&batch[0])))
	b.ResetTimer()
	total := 0
	for n := 0; n < b.N; {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			b.Fatal(err)
		}
		for ok := it.First(); ok && n < b.N; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				b.Fatal(err)
			}
			total += len(v)
			n++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if total == 0 {
		b.Fatal("read nothing")
	}
	reportEventsPerSec(b, b.N)
}
