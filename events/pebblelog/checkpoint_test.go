package pebblelog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

func mkCheckpoint(seq uint64) events.Checkpoint {
	return events.Checkpoint{Seq: seq, StateHash: strings.Repeat("5a", 32), Data: fmt.Appendf(nil, `{"state":"after %d"}`, seq)}
}

func mustPutCheckpoint(tb testing.TB, l events.Log, id string, cp events.Checkpoint) {
	tb.Helper()
	if err := l.PutCheckpoint(context.Background(), id, cp); err != nil {
		tb.Fatalf("PutCheckpoint(%s, %d): %v", id, cp.Seq, err)
	}
}

// wantCorruptCheckpoint checks that err is a *CorruptError about the
// checkpoint of session at seq, not about an event.
func wantCorruptCheckpoint(tb testing.TB, what string, err error, session string, seq uint64, reason string) {
	tb.Helper()
	wantCorrupt(tb, what, err, session, seq, reason)
	var ce *events.CorruptError
	errors.As(err, &ce)
	if ce.Kind != events.CorruptCheckpoint {
		tb.Fatalf("%s: got Kind %q, want %q", what, ce.Kind, events.CorruptCheckpoint)
	}
	prefix := "events: corrupt checkpoint of session " + session
	if seq != 0 {
		prefix += fmt.Sprintf(" at seq %d: ", seq)
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		tb.Fatalf("%s: got %q, want prefix %q", what, err, prefix)
	}
}

// TestCorruptCheckpoint writes damaged checkpoints behind the Log's back and
// checks that LatestCheckpoint and Checkpoints report them with session and
// seq, through a fork too, while the events stay readable.
func TestCorruptCheckpoint(t *testing.T) {
	good := events.EncodeCheckpoint(&events.Checkpoint{Seq: 3, StateHash: "abcd", Data: []byte("engine state")})
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i/8] ^= 1 << (i % 8)
		return b
	}
	tests := []struct {
		name   string
		value  []byte // stored as p's checkpoint at seq 3
		reason string
	}{
		{"bit flip in data", flip(8 * (len(good) - 6)), "checkpoint checksum mismatch"},
		{"bit flip in hash", flip(8 * 4), "checkpoint checksum mismatch"},
		{"bit flip in checksum", flip(8*len(good) - 1), "checkpoint checksum mismatch"},
		{"bit flip in version", flip(1), "unknown checkpoint version 195"},
		{"truncated", good[:len(good)-1], "checkpoint checksum mismatch"},
		{"truncated to 3 bytes", good[:3], "truncated checkpoint"},
		{"empty", nil, "truncated checkpoint"},
		{"checkpoint of another seq", events.EncodeCheckpoint(&events.Checkpoint{Seq: 4, StateHash: "ab"}), "stored checkpoint has seq 4"},
		{"an event", events.Encode(&mkEvents(3, 1)[0]), "unknown checkpoint version 1"},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
			defer l.Close()
			mustCreate(t, l, meta("p"))
			mustAppend(t, l, "p", 0, mkEvents(1, 5))
			mustPutCheckpoint(t, l, "p", mkCheckpoint(1))
			mustPutCheckpoint(t, l, "p", mkCheckpoint(3))
			f := meta("f")
			f.Parent, f.ForkSeq = "p", 5
			mustCreate(t, l, f)
			if err := l.DB().Set(pebblelog.CheckpointKey("p", 3), tt.value, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			_, err := l.LatestCheckpoint(ctx, "p", 5)
			wantCorruptCheckpoint(t, "LatestCheckpoint(p)", err, "p", 3, tt.reason)
			_, err = l.LatestCheckpoint(ctx, "f", 5)
			wantCorruptCheckpoint(t, "LatestCheckpoint(f)", err, "p", 3, tt.reason)
			_, err = l.Checkpoints(ctx, "p")
			wantCorruptCheckpoint(t, "Checkpoints(p)", err, "p", 3, tt.reason)
			if tt.name == "checkpoint of another seq" || tt.name == "an event" {
				var ce *events.CorruptError
				errors.As(err, &ce)
				if want := string(pebblelog.CheckpointKey("p", 3)); ce.Key != want {
					t.Fatalf("Key: got %q, want %q", ce.Key, want)
				}
			}

			// The older checkpoint, the events and replacing are unaffected.
			if cp, err := l.LatestCheckpoint(ctx, "f", 2); err != nil || !reflect.DeepEqual(cp, mkCheckpoint(1)) {
				t.Fatalf("LatestCheckpoint(f, 2): got %+v, %v; want the checkpoint at 1", cp, err)
			}
			if evs, err := readAll(l, "f", 1); err != nil || len(evs) != 5 {
				t.Fatalf("Read(f): got %d events, %v; want 5, nil", len(evs), err)
			}
			mustPutCheckpoint(t, l, "p", mkCheckpoint(3))
			if cp, err := l.LatestCheckpoint(ctx, "f", 5); err != nil || !reflect.DeepEqual(cp, mkCheckpoint(3)) {
				t.Fatalf("LatestCheckpoint(f) after replacing: got %+v, %v", cp, err)
			}
		})
	}
}

// TestCorruptCheckpointLayout damages the checkpoint key space.
func TestCorruptCheckpointLayout(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *pebblelog.Log {
		l := mustOpen(t, "db", pebblelog.Options{FS: vfs.NewMem()})
		t.Cleanup(func() { l.Close() })
		mustCreate(t, l, meta("s1"))
		mustAppend(t, l, "s1", 0, mkEvents(1, 5))
		mustPutCheckpoint(t, l, "s1", mkCheckpoint(2))
		return l
	}
	t.Run("short key after the last", func(t *testing.T) {
		l := setup(t)
		if err := l.DB().Set([]byte("c/s1/\xff"), good(t), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		_, err := l.LatestCheckpoint(ctx, "s1", ^uint64(0))
		wantCorruptCheckpoint(t, "LatestCheckpoint", err, "s1", 0, "malformed key")
		cps, err := l.Checkpoints(ctx, "s1")
		wantCorruptCheckpoint(t, "Checkpoints", err, "s1", 0, "malformed key")
		if len(cps) != 1 || cps[0].Seq != 2 || !errors.As(err, new(*events.DamagedError)) {
			t.Fatalf("Checkpoints beside a stray key: %+v, %v; want the checkpoint at 2 and the stray one named damaged", cps, err)
		}
		// A bounded lookup below the stray key does not see it.
		if cp, err := l.LatestCheckpoint(ctx, "s1", 5); err != nil || cp.Seq != 2 {
			t.Fatalf("LatestCheckpoint(s1, 5): got %+v, %v; want the checkpoint at 2", cp, err)
		}
	})
	t.Run("seq zero", func(t *testing.T) {
		l := setup(t)
		if err := l.DB().Set(pebblelog.CheckpointKey("s1", 0), good(t), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		_, err := l.Checkpoints(ctx, "s1")
		wantCorruptCheckpoint(t, "Checkpoints", err, "s1", 0, "malformed key")
	})
	t.Run("key spaces do not mix", func(t *testing.T) {
		// Checkpoints are neither events nor sessions, and events are not
		// checkpoints.
		l := setup(t)
		if evs, err := readAll(l, "s1", 1); err != nil || len(evs) != 5 {
			t.Fatalf("Read: got %d events, %v; want 5, nil", len(evs), err)
		}
		l.ForgetCache()
		if last, err := l.LastSeq(ctx, "s1"); err != nil || last != 5 {
			t.Fatalf("LastSeq: got %d, %v; want 5", last, err)
		}
		if ss, err := l.Sessions(ctx); err != nil || len(ss) != 1 {
			t.Fatalf("Sessions: got %d, %v; want 1", len(ss), err)
		}
		if cps, err := l.Checkpoints(ctx, "s1"); err != nil || len(cps) != 1 {
			t.Fatalf("Checkpoints: got %+v, %v; want 1", cps, err)
		}
	})
}

func good(t *testing.T) []byte {
	t.Helper()
	cp := mkCheckpoint(2)
	return events.EncodeCheckpoint(&cp)
}

// TestCheckpointDurable checks that acknowledged checkpoints survive a crash
// that loses everything not synced, and a reopen.
func TestCheckpointDurable(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	l := mustOpen(t, "db", pebblelog.Options{FS: fs})
	mustCreate(t, l, meta("s1"))
	mustAppend(t, l, "s1", 0, mkEvents(1, 5))
	for seq := uint64(1); seq <= 5; seq += 2 {
		mustPutCheckpoint(t, l, "s1", mkCheckpoint(seq))
	}
	f := meta("f")
	f.Parent, f.ForkSeq = "s1", 4
	mustCreate(t, l, f)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = mustOpen(t, "db", pebblelog.Options{FS: crashed})
	defer l.Close()
	cps, err := l.Checkpoints(ctx, "s1")
	want := []events.Checkpoint{{Seq: 1, StateHash: mkCheckpoint(1).StateHash}, {Seq: 3, StateHash: mkCheckpoint(3).StateHash},
		{Seq: 5, StateHash: mkCheckpoint(5).StateHash}}
	if err != nil || !reflect.DeepEqual(cps, want) {
		t.Fatalf("Checkpoints after crash: got %+v, %v; want %+v", cps, err, want)
	}
	if cp, err := l.LatestCheckpoint(ctx, "f", 100); err != nil || !reflect.DeepEqual(cp, mkCheckpoint(3)) {
		t.Fatalf("LatestCheckpoint(f) after crash: got %+v, %v; want %+v", cp, err, mkCheckpoint(3))
	}
}

// A damaged block of a table in the middle of a session's checkpoints
// stops Checkpoints' iterator there: the checkpoints before it are still
// listed, with a *events.DamagedError that says the store is damaged
// (verify then checks them; it checked none).
func TestCheckpointsBeforeADamagedBlock(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	l := mustOpen(t, "db", pebblelog.Options{FS: fs})
	mustCreate(t, l, meta("s"))
	mustAppend(t, l, "s", 0, mkEvents(1, 10))
	rng := rand.New(rand.NewPCG(1, 2))
	datas := map[uint64][]byte{}
	for seq := uint64(1); seq <= 8; seq++ {
		// Incompressible and larger than a block: each checkpoint is a
		// block of its own, found in the table by its bytes.
		data := make([]byte, 2*pebblelog.BlockSize)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		datas[seq] = data
		mustPutCheckpoint(t, l, "s", events.Checkpoint{Seq: seq, StateHash: strings.Repeat("5a", 32), Data: data})
	}
	l = mustOpen(t, "db", pebblelog.Options{FS: damageBlockOf(t, l, fs, datas[6][:64], 1000)})
	defer l.Close()
	cps, err := l.Checkpoints(ctx, "s")
	var seqs []uint64
	for _, cp := range cps {
		seqs = append(seqs, cp.Seq)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5}) || !errors.As(err, new(*events.DamagedError)) || !errors.Is(err, events.ErrCorrupt) {
		t.Fatalf("Checkpoints: %v, %v; want 1 to 5 and the damage", seqs, err)
	}
}
