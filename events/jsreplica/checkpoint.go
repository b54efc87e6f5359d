package jsreplica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/events"
)

// CheckpointBucket is the object store holding each session's latest
// checkpoint, named by session ID.
const CheckpointBucket = "CORPSIM_CHECKPOINTS"

// seqKey is the object metadata key giving the checkpoint's seq, read
// before its data is fetched.
const seqKey = "seq"

// ensureCheckpoints creates the checkpoint bucket, or updates its
// configuration to c's.
func ensureCheckpoints(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.ObjectStore, error) {
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      CheckpointBucket,
		Description: "corpsim checkpoints: the latest of each session (events.EncodeCheckpoint), by session ID",
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("jsreplica: bucket %s: %w", CheckpointBucket, err)
	}
	return obs, nil
}

// ReplicateCheckpoint stores cp as session's latest checkpoint in
// CheckpointBucket, replacing the one stored before, and returns when the
// cluster has it. cp must follow events the stream holds (the driver
// gives it once the batch it ends is replicated): a checkpoint past the
// stream's last event of the session is refused, so a worker that adopts
// the session never restores a state its events do not reach. It is
// encoded as the local log stores it (events.EncodeCheckpoint), with its
// checksum.
func (r *Replica) ReplicateCheckpoint(ctx context.Context, session string, cp events.Checkpoint) error {
	if err := events.ValidSessionID(session); err != nil {
		return err
	}
	if err := cp.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	t, known := r.sessions[session]
	r.mu.Unlock()
	if !known || cp.Seq > t.seq {
		return fmt.Errorf("%w: session %s: checkpoint at seq %d is past the events replicated (%d)", events.ErrBadCheckpoint, session, cp.Seq, t.seq)
	}
	meta := jetstream.ObjectMeta{Name: session, Metadata: map[string]string{seqKey: strconv.FormatUint(cp.Seq, 10)}}
	if _, err := r.checkpoints.Put(ctx, meta, bytes.NewReader(events.EncodeCheckpoint(&cp))); err != nil {
		return fmt.Errorf("jsreplica: session %s: checkpoint at seq %d: %w", session, cp.Seq, err)
	}
	return nil
}

// RestoreCheckpoints copies into dst the latest checkpoint replicated for
// session, and for each session up its fork chain, when dst holds the
// events it follows and has no checkpoint at its seq yet; call it after
// Restore. driver.Load then rebuilds the state from it, and the agents'
// memory it keeps (sim.RecallFrom), instead of from the first event. It
// returns the seq of session's own checkpoint in dst after it (0: none
// replicated). A cluster that never replicated a checkpoint, or a
// session that has none, is not an error: the session replays from
// event 1. A stored checkpoint that does not decode is a
// *events.CorruptError of Kind CorruptCheckpoint; nothing is copied then,
// and Load still works from the events.
func RestoreCheckpoints(ctx context.Context, js jetstream.JetStream, session string, dst events.Log) (uint64, error) {
	obs, err := js.ObjectStore(ctx, CheckpointBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("jsreplica: bucket %s: %w", CheckpointBucket, err)
	}
	var own uint64
	for depth, s := 0, session; s != "" && depth <= maxForkDepth; depth++ {
		meta, err := dst.Session(ctx, s)
		if err != nil {
			return own, err
		}
		seq, err := restoreCheckpoint(ctx, obs, meta, dst)
		if err != nil {
			return own, err
		}
		if depth == 0 {
			own = seq
		}
		s = meta.Parent
	}
	return own, nil
}

// restoreCheckpoint copies meta's session's replicated checkpoint into
// dst, if it follows an event dst holds; it returns its seq, or 0.
func restoreCheckpoint(ctx context.Context, obs jetstream.ObjectStore, meta events.SessionMeta, dst events.Log) (uint64, error) {
	session := meta.ID
	info, err := obs.GetInfo(ctx, session)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("jsreplica: session %s: checkpoint: %w", session, err)
	}
	seq, err := strconv.ParseUint(info.Metadata[seqKey], 10, 64)
	if err != nil {
		return 0, &events.CorruptError{Session: session, Kind: events.CorruptCheckpoint, Key: CheckpointBucket + "/" + session,
			Err: fmt.Errorf("%w: metadata %s=%q", events.ErrCorrupt, seqKey, info.Metadata[seqKey])}
	}
	if seq == 0 || seq > meta.LastSeq {
		return 0, nil // not followed by the events restored: of no use
	}
	if have, err := dst.LatestCheckpoint(ctx, session, seq); err == nil && have.Seq == seq {
		return seq, nil
	}
	b, err := obs.GetBytes(ctx, session)
	if err != nil {
		return 0, fmt.Errorf("jsreplica: session %s: checkpoint at seq %d: %w", session, seq, err)
	}
	var cp events.Checkpoint
	if err := events.DecodeCheckpoint(b, &cp); err != nil {
		return 0, &events.CorruptError{Session: session, Seq: seq, Kind: events.CorruptCheckpoint, Key: CheckpointBucket + "/" + session, Err: err}
	}
	if cp.Seq != seq {
		return 0, &events.CorruptError{Session: session, Seq: seq, Kind: events.CorruptCheckpoint, Key: CheckpointBucket + "/" + session,
			Err: fmt.Errorf("%w: the object's metadata says seq %d, its checkpoint %d", events.ErrCorrupt, seq, cp.Seq)}
	}
	if err := dst.PutCheckpoint(ctx, session, cp); err != nil {
		return 0, fmt.Errorf("jsreplica: session %s: checkpoint at seq %d: %w", session, seq, err)
	}
	return seq, nil
}

// Checkpoints returns the seq of each session's latest replicated
// checkpoint, by session ID: how far back a worker that adopts it
// replays from. A cluster that replicated none gives an empty map.
func Checkpoints(ctx context.Context, js jetstream.JetStream) (map[string]uint64, error) {
	out := map[string]uint64{}
	obs, err := js.ObjectStore(ctx, CheckpointBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsreplica: bucket %s: %w", CheckpointBucket, err)
	}
	infos, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsreplica: bucket %s: %w", CheckpointBucket, err)
	}
	for _, info := range infos {
		if seq, err := strconv.ParseUint(info.Metadata[seqKey], 10, 64); err == nil {
			out[info.Name] = seq
		}
	}
	return out, nil
}
