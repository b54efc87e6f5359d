// Package app holds the application's use cases: what corpsim does for the
// people who run it, whatever front end asks. The command line
// (cmd/corpsim) parses flags and prints; the server (sim/server) takes
// requests over the bus; both call this package.
//
//   - Run plays a new session of a world end to end (the log, the bus, the
//     seats, the driver) and returns its scorecard; Resume and Fork continue
//     stored sessions; Eval and Sweep run many seeds, loads and seatings in
//     memory and summarize them.
//   - Seat building turns an agents spec into the agents this process plays
//     (built-in, llm, custom) and the seats remote agents play.
//   - The stored-session uses read a data folder: Replay, Verify, Score,
//     PrintLog (with --follow over the bus), LoadAnalysis (trace, diff),
//     BuildReport and Export.
//   - OpenLog opens a data folder's Pebble log (or an in-memory one) and
//     records sessions a crash left running as interrupted; the data
//     folder's other files (bus.url, operator.token) are read and written
//     here too.
//
// It is part of the composition root with sim/server: it may wire several
// adapters (the Pebble and in-memory logs, the embedded NATS server and its
// host of seats, the LLM agent) together. Its errors are values: a
// UsageError is a mistake in what was asked (the command line exits 2).
//
//	res, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Ephemeral: true})
//	fmt.Println(res.Score.TeamScore, res.StateHash)
package app
