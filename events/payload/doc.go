// Package payload holds the stored and wire form of corpsim's events: the
// event types, each type's payload struct, and their JSON codecs.
//
// A payload is a type of its own, with an explicit snake_case JSON tag on
// every field: never a struct of the world model or of the company's state,
// so that renaming a Go field there cannot change a log. Converting a world
// model value to its payload form is the caller's (org.TaskSpecOf for a
// ticket's definition). The few values a payload carries that are also the
// agents' vocabulary (Action, RequestStep, Limits) are defined here and
// aliased by package org.
//
// Append writes a payload's JSON, exactly as json.Marshal writes it (by hand
// and without reflection for the payloads of a ticket's life, the bulk of a
// long log); Decode reads an event's payload into its type; As gives a
// payload as a T, typed when the engine passes the value it just encoded.
//
//	b, _ := payload.Append(nil, payload.TaskClaimed{Task: "api", BusyUntil: 300000})
//	// {"task":"api","busy_until":300000}
//	p, err := payload.As[payload.TaskClaimed](&ev, nil)
//
// A log records its format in session.started (SessionStarted.Format):
// LogFormat is the one this package writes and reads, and CheckFormat
// refuses another with a sentence that says what to do.
//
// The package is part of the deterministic core: no I/O, no clock, no
// randomness, and no map iteration reaches an encoding.
package payload
