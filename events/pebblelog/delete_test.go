package pebblelog_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

func deleteMeta(id, parent string, forkSeq uint64) events.SessionMeta {
	return events.SessionMeta{ID: id, World: "startup", WorldHash: strings.Repeat("ab", 32),
		Seed: 1, Agents: map[string]string{"alice": "greedy"}, Created: "2025-01-02T03:04:05Z", Status: events.StatusRunning,
		Parent: parent, ForkSeq: forkSeq}
}

// A session deleted and created again under its ID, while readers ask for
// it all along, is the new session: no reader caches the deleted one's
// fork point between the delete and the create.
func TestDeleteRecreateWhileRead(t *testing.T) {
	l := mustOpen(t, t.TempDir(), pebblelog.Options{NoSync: true})
	defer l.Close()
	ctx := context.Background()
	if err := l.CreateSession(ctx, deleteMeta("p", "", 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, "p", 0, mkEvents(1, 10)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				_, _ = l.LastSeq(ctx, "x")
				_, _ = l.Checkpoints(ctx, "x")
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range 1000 {
		fork := 3 + uint64(i%2)*4 // 3, 7, 3, 7, …
		if err := l.CreateSession(ctx, deleteMeta("x", "p", fork)); err != nil {
			t.Fatal(err)
		}
		if got, err := l.LastSeq(ctx, "x"); err != nil || got != fork {
			t.Fatalf("round %d: LastSeq(x) = %d, %v; want the new fork point %d", i, got, err, fork)
		}
		if _, err := l.DeleteSession(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
}

// Damaged metadata does not block deleting: its own session is deleted
// all the same, and another session is refused only while the damaged one
// might be its fork, naming it.
func TestDeleteWithDamagedMetadata(t *testing.T) {
	l := mustOpen(t, t.TempDir(), pebblelog.Options{NoSync: true})
	defer l.Close()
	ctx := context.Background()
	for _, id := range []string{"q", "z"} {
		if err := l.CreateSession(ctx, deleteMeta(id, "", 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Append(ctx, "z", 0, mkEvents(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := l.DB().Set(pebblelog.MetaKey("z"), []byte("garbage"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := l.DeleteSession(ctx, "q")
	if !errors.Is(err, events.ErrBadSession) || !strings.Contains(err.Error(), "the metadata of z is damaged, so whether it forks from q is unknown") {
		t.Fatalf("DeleteSession(q) beside damaged z: %v", err)
	}
	if _, err := l.DeleteSession(ctx, "z"); err != nil {
		t.Fatalf("DeleteSession(z), the damaged one: %v", err)
	}
	if n, err := l.DeleteSession(ctx, "q"); err != nil || n != 0 {
		t.Fatalf("DeleteSession(q) once z is gone: %d, %v", n, err)
	}
	if all, err := l.Sessions(ctx); err != nil || len(all) != 0 {
		t.Fatalf("Sessions: %v, %v; want none", all, err)
	}
}

// BenchmarkDeleteAmongSessions: deleting one session of a store that holds
// n others, synced. The log looks for the session's forks among every
// session's metadata, decoding only those that name it; the baseline,
// Pebble's own, deletes the same three key ranges in a synced batch.
func BenchmarkDeleteAmongSessions(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			l := mustOpen(b, b.TempDir(), pebblelog.Options{})
			defer l.Close()
			ctx := context.Background()
			for i := range n {
				if err := l.CreateSession(ctx, deleteMeta(fmt.Sprintf("s%05d", i), "", 0)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				id := fmt.Sprintf("d%07d", i)
				if err := l.CreateSession(ctx, deleteMeta(id, "", 0)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := l.DeleteSession(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("raw-pebble", func(b *testing.B) {
		db := openRaw(b, b.TempDir())
		for i := range b.N {
			b.StopTimer()
			key := []byte(fmt.Sprintf("m/d%07d", i))
			if err := db.Set(key, []byte("x"), pebble.Sync); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			batch := db.NewBatch()
			for _, p := range []string{"e/", "c/"} {
				lo := []byte(p + string(key[2:]) + "/")
				if err := batch.DeleteRange(lo, append(slices.Clone(lo[:len(lo)-1]), '0'), nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := batch.Delete(key, nil); err != nil {
				b.Fatal(err)
			}
			if err := batch.Commit(pebble.Sync); err != nil {
				b.Fatal(err)
			}
			batch.Close()
		}
	})
}

// The forks of a session are found among sessions whose metadata names it
// elsewhere too (an agent called like it), and only those whose parent it
// is refuse its delete.
func TestDeleteFindsForksAmongNamesakes(t *testing.T) {
	l := mustOpen(t, t.TempDir(), pebblelog.Options{NoSync: true})
	defer l.Close()
	ctx := context.Background()
	namesake := deleteMeta("n", "", 0)
	namesake.Agents = map[string]string{"p": "greedy", "alice": "p"}
	for _, m := range []events.SessionMeta{deleteMeta("p", "", 0), namesake, deleteMeta("other", "", 0)} {
		if err := l.CreateSession(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Append(ctx, "p", 0, mkEvents(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateSession(ctx, deleteMeta("f", "p", 2)); err != nil {
		t.Fatal(err)
	}
	var fe *events.ForksError
	if _, err := l.DeleteSession(ctx, "p"); !errors.As(err, &fe) || !slices.Equal(fe.Forks, []string{"f"}) || !errors.Is(err, events.ErrBadSession) {
		t.Fatalf("DeleteSession(p) with its fork f: %v; want a ForksError naming f alone", err)
	}
	for _, id := range []string{"f", "p", "n"} {
		if _, err := l.DeleteSession(ctx, id); err != nil {
			t.Fatalf("DeleteSession(%s): %v", id, err)
		}
	}
}

// A fork whose metadata is damaged in a way its checksum does not show —
// another session's metadata under its key, or JSON that does not parse
// stored with a good checksum — has an unknown parent: deleting the
// session it may fork from is refused, as for any damaged metadata.
func TestDeleteBesideDamageTheChecksumMisses(t *testing.T) {
	withSum := func(body string) []byte {
		return binary.BigEndian.AppendUint32([]byte(body), crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
	}
	other, err := events.EncodeMeta(&events.SessionMeta{ID: "o", Status: events.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	for name, stored := range map[string][]byte{ // order: independent subtests
		"another session's metadata": other,
		"bad JSON, good checksum":    withSum(`{"id":"f","parent":`),
		"its own ID, cut short":      withSum(`{"id":"f","world":"startup"`),
	} {
		t.Run(name, func(t *testing.T) {
			l := mustOpen(t, t.TempDir(), pebblelog.Options{NoSync: true})
			defer l.Close()
			ctx := context.Background()
			if err := l.CreateSession(ctx, deleteMeta("p", "", 0)); err != nil {
				t.Fatal(err)
			}
			if err := l.Append(ctx, "p", 0, mkEvents(1, 3)); err != nil {
				t.Fatal(err)
			}
			if err := l.CreateSession(ctx, deleteMeta("f", "p", 2)); err != nil {
				t.Fatal(err)
			}
			if err := l.DB().Set(pebblelog.MetaKey("f"), stored, nil); err != nil {
				t.Fatal(err)
			}
			l.ForgetCache()
			if _, err := l.DeleteSession(ctx, "p"); !errors.Is(err, events.ErrBadSession) || !strings.Contains(err.Error(), "the metadata of f is damaged") {
				t.Fatalf("DeleteSession(p) beside f, damaged: %v; want refused (f's parent unknown)", err)
			}
		})
	}
}
