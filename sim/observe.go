package sim

import (
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// ObserveOmitting is Observe without the parts omit names (org.Omit): for a
// caller that knows the member's agent never reads them, such as an agent
// played in process. Like Observe, it must be called before Step, from the
// goroutine that owns the engine.
func (e *Engine) ObserveOmitting(member string, omit org.Omit) org.Observation {
	return e.observeAt(member, omit, e.now)
}

// observeAt is what member sees at instant at (its turn's: the engine's
// now when it is asked, a recorded turn's time when it is recalled), of
// the state as the last event applied left it (org.State.ViewAt).
func (e *Engine) observeAt(member string, omit org.Omit, at clock.Time) org.Observation {
	o := e.st.ViewAt(member, omit, at)
	o.Session = e.cfg.Session
	return o
}
