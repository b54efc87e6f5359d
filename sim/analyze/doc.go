// Package analyze explains sessions after the fact, from their event logs:
// why a task finished when it did (trace), what a member held, waited on
// and was blocked by, how a project's critical path unfolded, where two
// runs or forks of a session went different ways (diff), where the value a
// session lost went, by cause (Diagnose, Aggregate), and the pure part of
// counterfactual credit (FirstActions, ShapleyEstimate; the forks are
// sim/app's).
//
// It is part of the pure core: it reads events handed to it and the world
// recorded in session.started, rebuilds the company's state with
// org.State.Apply, and follows the Cause links the engine wrote (each event
// names the seq of the event that led to it: a claim is caused by a turn, a
// turn by whatever woke the member, a return from leave by the leave). It
// does no I/O, reads no clock and never lets map order reach its output, so
// the same log always gives the same explanation.
//
//	s, err := analyze.Load(log.Read(ctx, session, 1))
//	tr, err := s.Task("order")     // the causal chain of one task
//	for _, d := range tr.Delays {  // the waits that explain its outcome, longest first
//		fmt.Println(d.Text)
//	}
//	d := analyze.Compare(a, b)    // the first divergent seq of two sessions and what differed
//	dg := s.Diagnose()            // lost points and hours by cause; they add up to dg.Lost
//	dg.WriteText(os.Stdout, "session "+s.ID)
//
// Each result's WriteText renders it for people, as corpsim trace and diff
// print it; its JSON is the struct's own.
//
// Times in results are simulated milliseconds (Time) with their wall-clock
// instant on the world's calendar (Wall, RFC 3339); durations are working
// time on that calendar.
package analyze
