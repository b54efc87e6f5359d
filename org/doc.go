// Package org holds the company's state and the vocabulary agents use to act
// in it.
//
// State is built from a world (New) and changed only by applying events
// (Apply), both in a live run and in replay, so the two cannot drift. The
// engine in package sim decides which events happen; org only records their
// consequences. Hash returns a digest of the state that replay compares with
// the one a live run recorded.
//
// Each action's preconditions are written once, in check.go: Check says
// whether a member may do an action now and, if not, why (a Rejection with a
// stable kind). The engine asks it before it emits an action's events, and
// Apply asks the same checks of the event it applies, so a log whose events
// break them is refused. Apply dispatches each event type to one method.
//
// Action is what an agent sends, Observation is what a member sees
// (View). Both are the JSON of the agent protocol, whose codecs live in
// agents/wire. The events' payloads, their types and their codecs live in
// events/payload; org applies them and never encodes JSON itself, but for
// its state's snapshot (snapshot_codec.go), which needs its internals.
//
// In a world with systems (format 2, records.go) the state holds records,
// drawn from the session's seed when it starts; the record tools read them
// (record.read: the results reach the reader's next observation) and write
// them (record.written, with the values before and after), each checked by
// role; a case's outcomes are kept with the values its records held when
// each step was completed, for the rubric to verify.
//
//	st := org.New(world)
//	for ev, err := range log.Read(ctx, session, 1) {
//		if err != nil { ... }
//		if err := st.Apply(ev); err != nil { ... }
//	}
//	fmt.Printf("%x\n", st.Hash())
//
// Beside what it hashes, a State keeps derived indexes, never hashed nor in
// snapshots and built again by Restore, so that a view, a queue's head, a
// claim's queue-order check or a wake-up costs what it touches, not the
// length of the session: a queue's open tickets in lanes by priority and
// role (queue_index.go); the colleagues that may be idle and the seats of
// each role, for waking (wake_index.go); pending requests, unanswered
// messages and the messages about each task (view_lists.go);
// each member's busy blocks by start, their instants read once
// (meetings.go); and, per case, its step tasks, who did one and its
// colleagues' steps left and ready to be asked for, with the open cases
// each member did a step of and those with such a step ready (case.go);
// the done cases a requester may reopen (kinds.go). Each is held
// by a test to the scan it replaces.
//
// The package is part of the deterministic core: no I/O, no wall clock, no
// randomness, and no map iteration reaches events, hashes or observations.
// A State is not safe for concurrent use. It starts no goroutine: given
// a Sequencer by the driver, it hands it the hashing of the tickets it
// retires, by batches, and a snapshot waits for them (retire.go); the
// digest is the one hashing them in turn gives.
package org
