package jsreplica_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/events/memlog"
)

// checkpointAt is a checkpoint at seq whose data spans several of the
// object store's chunks (128 KiB).
func checkpointAt(seq uint64) events.Checkpoint {
	data := bytes.Repeat([]byte{byte(seq)}, 300_000)
	copy(data, "state after the event")
	return events.Checkpoint{Seq: seq, StateHash: "ab12", Data: data}
}

// A session's latest checkpoint travels with its events: what
// RestoreCheckpoints puts into a log restored from the stream is the
// checkpoint given last, byte for byte, and the state it restores follows
// events the stream holds.
func TestReplicateAndRestoreCheckpoints(t *testing.T) {
	ctx := context.Background()
	_, nc := mustServer(t)
	r := mustReplica(t, nc, jsreplica.Config{})
	meta, batches := session(t, "c", 5)
	half := len(batches) / 2
	for _, b := range batches[:half] {
		if err := r.Replicate(ctx, "c", b); err != nil {
			t.Fatal(err)
		}
	}
	tip := batches[half-1][len(batches[half-1])-1].Seq
	if err := r.ReplicateCheckpoint(ctx, "c", checkpointAt(tip+1)); !errors.Is(err, events.ErrBadCheckpoint) {
		t.Fatalf("a checkpoint past the events replicated: %v, want ErrBadCheckpoint", err)
	}
	if err := r.ReplicateCheckpoint(ctx, "c", checkpointAt(tip-3)); err != nil {
		t.Fatal(err)
	}
	for _, b := range batches[half:] {
		if err := r.Replicate(ctx, "c", b); err != nil {
			t.Fatal(err)
		}
	}
	latest := checkpointAt(meta.LastSeq - 1)
	if err := r.ReplicateCheckpoint(ctx, "c", latest); err != nil {
		t.Fatal(err)
	}
	if err := r.PutSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	js := r.JetStream()

	if got, err := jsreplica.Checkpoints(ctx, js); err != nil || len(got) != 1 || got["c"] != latest.Seq {
		t.Fatalf("the checkpoints listed: %v, %v; want c's at %d", got, err, latest.Seq)
	}
	dst := memlog.New()
	if _, err := jsreplica.RestoreCheckpoints(ctx, js, "c", dst); !errors.Is(err, events.ErrNoSession) {
		t.Fatalf("checkpoints restored before the session's events: %v", err)
	}
	if _, err := jsreplica.Restore(ctx, js, "c", dst); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds it there already
		seq, err := jsreplica.RestoreCheckpoints(ctx, js, "c", dst)
		if err != nil || seq != latest.Seq {
			t.Fatalf("restored the checkpoint at %d, %v; want %d", seq, err, latest.Seq)
		}
		got, err := dst.LatestCheckpoint(ctx, "c", meta.LastSeq)
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != latest.Seq || got.StateHash != latest.StateHash || !bytes.Equal(got.Data, latest.Data) {
			t.Fatalf("restored the checkpoint at %d (%d bytes), want the one at %d", got.Seq, len(got.Data), latest.Seq)
		}
		if _, err := dst.LatestCheckpoint(ctx, "c", latest.Seq-1); !errors.Is(err, events.ErrNoCheckpoint) {
			t.Fatalf("an earlier checkpoint is there too: %v (only the latest is kept)", err)
		}
	}

	// A fork restored from the stream takes its parent's checkpoint too.
	fork := meta
	fork.ID, fork.Parent, fork.ForkSeq, fork.Status = "f", "c", meta.LastSeq, events.StatusRunning
	if err := r.PutSession(ctx, fork); err != nil {
		t.Fatal(err)
	}
	fdst := memlog.New()
	if _, err := jsreplica.Restore(ctx, js, "f", fdst); err != nil {
		t.Fatal(err)
	}
	if seq, err := jsreplica.RestoreCheckpoints(ctx, js, "f", fdst); err != nil || seq != 0 {
		t.Fatalf("the fork's own checkpoint: %d, %v; it has none", seq, err)
	}
	if got, err := fdst.LatestCheckpoint(ctx, "f", fork.ForkSeq); err != nil || got.Seq != latest.Seq {
		t.Fatalf("the fork's latest checkpoint: %d, %v; want its parent's at %d", got.Seq, err, latest.Seq)
	}

	// One that does not decode is reported with its session and seq, and
	// nothing is put in the log.
	obs, err := js.ObjectStore(ctx, jsreplica.CheckpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	bad := events.EncodeCheckpoint(&latest)
	bad[len(bad)/2] ^= 1
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: "c", Metadata: map[string]string{"seq": "40"}}, bytes.NewReader(bad)); err != nil {
		t.Fatal(err)
	}
	cdst := memlog.New()
	if _, err := jsreplica.Restore(ctx, js, "c", cdst); err != nil {
		t.Fatal(err)
	}
	_, err = jsreplica.RestoreCheckpoints(ctx, js, "c", cdst)
	var ce *events.CorruptError
	if !errors.As(err, &ce) || ce.Session != "c" || ce.Seq != 40 || ce.Kind != events.CorruptCheckpoint {
		t.Fatalf("a corrupt checkpoint: %v, want a CorruptError of session c's checkpoint at 40", err)
	}
	if _, err := cdst.LatestCheckpoint(ctx, "c", meta.LastSeq); !errors.Is(err, events.ErrNoCheckpoint) {
		t.Fatalf("a corrupt checkpoint was stored: %v", err)
	}

	// A cluster that never replicated a checkpoint has no bucket: nothing
	// to restore, and no error.
	if err := js.DeleteObjectStore(ctx, jsreplica.CheckpointBucket); err != nil {
		t.Fatal(err)
	}
	if seq, err := jsreplica.RestoreCheckpoints(ctx, js, "c", memlog.New()); err != nil || seq != 0 {
		t.Fatalf("without the bucket: %d, %v", seq, err)
	}
	if got, err := jsreplica.Checkpoints(ctx, js); err != nil || len(got) != 0 {
		t.Fatalf("the checkpoints listed without the bucket: %v, %v", got, err)
	}
}
