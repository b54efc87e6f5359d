package sim

import "github.com/corpsim/corpsim/org"

// ObserveOmitting is Observe without the parts omit names (org.Omit): for a
// caller that knows the member's agent never reads them, such as an agent
// played in process. Like Observe, it must be called before Step, from the
// goroutine that owns the engine.
func (e *Engine) ObserveOmitting(member string, omit org.Omit) org.Observation {
	o := e.st.ViewOmitting(member, omit)
	o.Session = e.cfg.Session
	return o
}
