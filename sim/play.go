package sim

import (
	"errors"

	"github.com/corpsim/corpsim/events"
)

// ErrStopped is returned by Play when a callback asked it to stop.
var ErrStopped = errors.New("sim: stopped")

// Play runs a started engine to its end in process, without a log or a
// bus: the loop every in-process caller (tests, benchmarks, tools) would
// otherwise write again. batch, if not nil, sees each batch of events
// before Advance (it must copy what it keeps: the engine reuses the
// slice); decide answers each turn. Either returns false to stop Play,
// which then returns ErrStopped. maxSteps bounds the loop (0: 10 million)
// against an engine that does not end.
func Play(e *Engine, batch func([]events.Event) bool, decide func(Turn) (Answer, bool), maxSteps int) error {
	if maxSteps <= 0 {
		maxSteps = 10_000_000
	}
	for range maxSteps {
		rd := e.Ready()
		if batch != nil && len(rd.Events) > 0 && !batch(rd.Events) {
			return ErrStopped
		}
		e.Advance()
		if rd.Done {
			return nil
		}
		if len(rd.Turns) == 0 {
			e.Tick()
			continue
		}
		ans := make([]Answer, 0, len(rd.Turns))
		for _, t := range rd.Turns {
			a, ok := decide(t)
			if !ok {
				return ErrStopped
			}
			ans = append(ans, a)
		}
		e.Step(ans)
	}
	return errors.New("sim: the engine did not end within the steps allowed")
}
