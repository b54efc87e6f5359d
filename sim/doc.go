// Package sim is the simulation engine: a deterministic state machine in the
// style of etcd raft's RawNode.
//
// The Engine performs no I/O, starts no goroutines, never reads the wall
// clock and draws randomness only from streams derived from the session's
// seed. A driver (package sim/driver) does the I/O around it, in this order:
//
//	e, _ := sim.New(sim.Config{World: w, Seed: 7})
//	e.Start()
//	for {
//		rd := e.Ready()
//		persist(rd.Events)         // one synced batch; nothing counts before this
//		publish(rd.Events)         // the durable event feed
//		e.Advance()
//		if rd.Done {
//			break
//		}
//		if len(rd.Turns) > 0 {
//			e.Step(ask(rd.Turns)) // every member due now decides; any order of answers
//		} else {
//			e.Tick()              // advance simulated time to the next thing that happens
//		}
//	}
//
// Answers given to Step are applied in member-ID order, so the log does not
// depend on which agent answered first. Every state change is an event
// applied through the same function live and in replay (Apply), so a
// replayed session rebuilds exactly the state, timers and due members the
// live one had.
package sim
