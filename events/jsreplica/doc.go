// Package jsreplica keeps a cluster-wide copy of corpsim's event logs in a
// NATS JetStream stream, and rebuilds a session's local log from it.
//
// A worker appends each batch to its local log (events/pebblelog) first;
// once the batch is durable there, the driver hands it to a Replica, which
// publishes it to the stream and returns only when every event is stored
// (acknowledged by the stream, which for a replicated stream means by a
// majority of its peers). If the worker dies, another worker calls Restore
// to copy the session's events from the stream into its own log, and
// resumes it from there (sim/driver.Load, then Continue).
//
// # The stream
//
// One stream, Stream ("CORPSIM_LOG"), holds every session, one subject per
// session: Subject(session) = "corpsim.v1.log.<session>". Its storage is
// file, its replicas are configurable (3 in a cluster, 1 on a single
// server), DenyDelete is set (single events cannot be removed) and its
// discard policy is DiscardNew: if someone later gives it a size limit, a
// publish that would exceed it fails instead of silently dropping a
// session's oldest events.
//
// Each message is one event in its canonical binary encoding
// (events.Encode: version, ID, seq, time, cause, type, actor, payload and a
// CRC-32C), so what comes back decodes to the very bytes that were stored
// locally, the checksum travels with it and the seq inside lets Restore check
// order and gaps. A fork's subject holds only its own events (after its
// fork point); its prefix is its parent's.
//
// # Publishing
//
// Every message carries Nats-Msg-Id = session + "/" + event ID (event IDs
// repeat across sessions run with the same seed, so the session is part of
// the key): a message re-sent within the stream's duplicate window is
// acknowledged as a duplicate and not stored twice.
//
// Every message carries Nats-Expected-Last-Subject-Sequence: the stream
// sequence of the session's previous event, which the Replica tracks per
// session (and reads back from the subject's last message after a restart
// or a failed publish), so a second writer that has not seen this writer's
// events is refused at once. The messages go one at a time, each
// acknowledged before the next.
//
// With Config.Batch, only the first message of each batch carries the
// expectation. It is published and acknowledged alone;
// the rest of the batch is then published asynchronously and the
// acknowledgements awaited together. The expected sequence of the second
// message would be the stream sequence of the first, which is not known
// until it is acknowledged, and a replicated stream refuses an expectation
// on a subject that has a message in flight; so the check is per batch. A
// second writer that has not seen this writer's events fails its first
// batch, and nothing of a batch is sent once its first message is refused.
// One at a time runs at a third (one server) to a sixth (three replicas)
// of Batch's rate.
//
// Never use Batch on a cluster: when the stream's leader dies in the
// middle of an asynchronous batch, one message can be lost between the old
// leader and the new while later ones of the batch are stored: a hole in
// the session's subject that no retry fills (tests/failover_test.go found
// it in 2 of 4 runs killing the leader; one at a time, none in 4).
// `corpsim serve --worker` publishes one at a time.
//
// A Replica never relies on the duplicate window alone: before publishing
// to a session it knows the last event the stream holds, skips the events
// of a batch the stream already has (a batch given again after a restart),
// and compares the boundary event with the stored one. Whenever it reads
// the tip it also checks that the subject holds exactly one message per seq
// from its first to its last (a batch cut by a failure part way through
// could otherwise leave a hole that a retry would not see; a hole is a
// *events.CorruptError). A difference is ErrConflict, a batch that does
// not follow the stored events is ErrGap (Sync copies what is missing from
// the local log). Transient failures (a node down, a leader election, a
// lost acknowledgement) are retried for Config.RetryFor, each retry
// starting from the stream's last message.
//
// # Checkpoints
//
// An object store, CheckpointBucket ("CORPSIM_CHECKPOINTS"), holds the
// latest checkpoint of each session, named by its ID, in the encoding the
// local log stores (events.EncodeCheckpoint, with its CRC-32C) and its seq
// in the object's metadata. The driver gives each checkpoint to
// Replica.ReplicateCheckpoint once the log stores it, after the batch it
// ends is replicated (sim/driver's CheckpointReplica), so a replicated
// checkpoint never follows events the stream lacks; a failure there is
// logged and the session goes on. A worker that restores a session calls
// RestoreCheckpoints after Restore: driver.Load then rebuilds the state
// from that checkpoint, and the agents that remember take what it kept of
// their memory, instead of starting from event 1. Only the latest is
// kept: a session is restored to go on from its end.
//
// # Session metadata
//
// A small KeyValue bucket, Bucket ("CORPSIM_SESSIONS"), holds each
// session's events.SessionMeta as JSON under its ID, written by
// Replica.PutSession when a session is created, finished or forked. The
// stream's subjects are the authority on which sessions exist and how many
// events each holds (Sessions lists both); the bucket adds what the events
// do not say: the agents, the creation time, the status, and a fork's
// parent and fork point. Restore uses it when present and otherwise
// derives the metadata of a session that is not a fork from its
// session.started event.
//
// Usage:
//
//	r, err := jsreplica.New(ctx, nc, jsreplica.Config{Replicas: 3})
//	d := driver.New(driver.Config{Log: log, Conn: nc, Replica: r})
//	_ = r.PutSession(ctx, meta)
//	meta, err = d.Run(ctx, meta, engine)
//	_ = r.PutSession(ctx, meta)
//
//	// on another worker, after the first one died:
//	js, _ := jetstream.New(nc)
//	last, err := jsreplica.Restore(ctx, js, session, localLog)
//	_, err = jsreplica.RestoreCheckpoints(ctx, js, session, localLog)
//	e, _, err := driver.Load(ctx, localLog, session, 0, 0)
package jsreplica
