// Package export turns recorded sessions into training data, from their
// event logs alone:
//
//   - WriteEvents: the raw event stream as JSON Lines, one event per line,
//     sessions one after the other (the lines of corpsim log);
//   - Episodes: for every member seat an agent played, the session as a chat
//     transcript in the OpenAI format (system prompt, then per turn the
//     observation the member saw, its actions as tool calls and what became
//     of each), with the member's and the team's episode reward, for
//     supervised fine-tuning; Episode.Windows cuts one into an example per
//     turn, as an LLM agent that keeps a few turns of history is asked;
//     WriteSFT writes the same lines holding no transcript, each turn's
//     messages waiting for the session's rewards in a Spill the driver
//     gives (a file: corpsim export);
//   - Pairs: preference pairs for DPO from episodes of the same world, seed
//     and member whose rewards differ.
//
// Observations are not stored in the log: a turn event records Seen, the
// last seq of the state its member observed. Episodes replays the session
// with the engine's own Apply and, after event Seen, builds the member's
// view exactly as the engine did when it asked (org.State.View), so a
// transcript shows what the agent was sent, byte for byte — except the
// session ID, which is left out of the observations (it is on every line)
// so that transcripts of the same world and seed share their beginning.
// Actions become tool calls with agents.ToolCallFromAction; one no tool can
// say (an LLM's call that did not parse, recorded as an unknown action
// type with the parse error) keeps its type as the name. Each call's result
// is "accepted" or the refusal the log recorded for it.
// In a world with systems (format 2) an accepted get or search's result
// also holds what the read returned — the records with their fields and
// text, as the member's next observation shows them (records.go), and
// each episode carries in Outcomes the rubric's verdicts on the outcome
// steps its member completed (wrong ones marked), which a preference pair
// carries for each side.
// An episode's tools are its world's (agents.ToolDefsFor, `corpsim tools
// --world`), as the llm agent offers them since 2026-12-05; a session its
// seats played before then was offered every action's.
// Rewards come from the rubric on the final state, as corpsim score
// reports them: a member's reward is its delivered value
// (policies.MemberCredit.Delivered, the sum of its dense rewards), the team
// reward the team score.
//
// The package is part of the deterministic core: it does no I/O of its own
// (it reads a Log and writes to an io.Writer), and its output depends only
// on the events and the options.
//
//	eps, err := export.Episodes(ctx, log, session, export.Options{Prompts: export.Prompts{
//		System: llm.SystemPrompt, Observation: llm.ObservationMessage, Result: llm.ToolResult}})
//	err = export.WriteLines(w, eps) // or eps[i].Windows(4): one line per turn
//	pairs, alone := export.Pairs(eps, export.PairOptions{})
package export
