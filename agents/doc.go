// Package agents defines what an agent is and ships the built-in baselines.
//
// An Agent is asked to decide whenever something its member can see changes;
// it gets an org.Observation and returns the actions to take. Built-in agents
// are deterministic given their seed, so a session played by them produces
// the same log every time.
//
//	a, _ := agents.New("greedy", agents.Options{Seed: 7})
//	actions, err := a.Decide(ctx, obs)
//
// Baselines: idle (always waits) and greedy (takes the most valuable task
// whose dependencies are done, asks for approval when a task needs it,
// approves valid requests addressed to it).
//
// This package is part of the deterministic core; transports that carry
// turns to agents elsewhere live in subpackages named for what they wrap.
package agents
