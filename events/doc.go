// Package events defines corpsim's event log: the Event envelope, its
// canonical checksummed binary codec, deterministic event IDs, session
// metadata, and the Log interface that stores them.
//
// Every change to a simulated company is an Event appended to its session's
// log, so a session can be replayed, forked and re-scored. Events carry a
// gapless per-session sequence number; appends are batches guarded by the
// expected last sequence number (optimistic concurrency) and are idempotent,
// so a driver that does not know whether its last write landed may simply
// retry it. Checkpoints (opaque snapshots of a session's state with its
// state hash, stored checksummed beside the events) let resume, reset and
// fork start from the nearest snapshot instead of event 1, and let replay
// verify itself.
//
// This package is part of the deterministic core: it performs no I/O, never
// reads the wall clock and never draws random numbers. Durable storage lives
// in events/pebblelog, an in-memory store in events/memlog, and every Log
// implementation passes the conformance suite in events/logtest. What a
// payload holds, for each event type, is package events/payload's.
//
// Usage:
//
//	id := events.NewID(idKey, startUnixMs, now, seq)
//	batch := []events.Event{{ID: id, Seq: last + 1, Time: now, Type: "task.claimed", Actor: "m1",
//		Payload: json.RawMessage(`{"task":"t1"}`)}}
//	if err := log.Append(ctx, session, last, batch); errors.Is(err, events.ErrConflict) {
//		// someone else appended: reload and retry
//	}
//	for e, err := range log.Read(ctx, session, 1) {
//		if err != nil {
//			return err // a *events.CorruptError names session and seq
//		}
//		apply(e)
//	}
//
// A caller that looks at each event once (replay, verification, a report)
// scans instead: the same events, checksummed and decoded in place, with
// no copy per event. The *Event is borrowed: it and its Payload are valid
// only until fn returns, so fn keeps ev.Clone() if it keeps anything.
//
//	err := log.Scan(ctx, session, 1, func(ev *events.Event) error {
//		return apply(*ev) // apply keeps nothing of ev.Payload
//	})
package events
