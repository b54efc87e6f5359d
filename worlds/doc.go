// Package worlds turns world files into validated worlds.
//
// A world file is YAML (JSON is accepted as the same schema). It describes an
// organization — calendar, roles, teams, members, work queues, approval chains,
// projects whose tasks depend on each other — and how long a session runs.
// Load decodes and validates a file; every mistake is reported as an *Error
// carrying the file, line, column and the field's path, and nothing runs:
//
//	w, err := worlds.Load("my-world.yaml", src)
//	if err != nil {
//		fmt.Fprintln(os.Stderr, err) // my-world.yaml:12:9: projects[0].tasks[2].deps[0]: unknown task "desgn"
//	}
//
// Shipped worlds are embedded in the binary: Names lists them and Shipped
// loads one by name.
//
// The package is part of the deterministic core: it reads no files itself
// (callers pass the bytes), and a World is immutable once loaded.
package worlds
