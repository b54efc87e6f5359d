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
// Baselines: idle (always waits), random (seeded plausible actions), greedy
// (takes the most valuable task whose dependencies are done, asks for
// approval and information when a task needs them, approves valid requests
// addressed to it), planner (dependency-, deadline- and SLA-aware) and
// cheater (tries every shortcut, to test the rubric). Tools and
// ActionFromToolCall describe the actions to LLMs; agents/llm is an agent
// backed by an OpenAI-compatible endpoint.
//
// This package is part of the deterministic core; transports that carry
// turns to agents elsewhere live in subpackages named for what they wrap.
package agents
