package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/export"
)

func (a *cmdline) exportCmd() *cobra.Command {
	var o app.ExportOptions
	c := &cobra.Command{
		Use:   "export SESSION…",
		Short: "Export sessions as training data: chat transcripts (sft), preference pairs (dpo) or raw events (jsonl)",
		Long: `Export sessions from the data folder as JSON Lines, to -o FILE (or stdout: no -o, or -o -).

--format sft: one line per session and member seat played by an agent: its turns as an
OpenAI-format chat transcript — the LLM agent's system prompt, each observation the member saw
(rebuilt from the log), its actions as tool calls and each call's result (accepted, or why it
was refused) — with the tool definitions, the member's reward (its delivered value) and the
team's (the team score), as corpsim score reports them. --min-reward X keeps the episodes whose
reward is at least X. --history N cuts each episode into one line per turn, as an LLM agent keeping
N earlier turns (--llm-history N) is asked: the system prompt, up to N earlier turns, then the
turn's observation and the answer; each line says its "turn".

--format dpo: preference pairs of two sessions of the same world and seed (and the same draw key,
load, seed at event 1 and log format, each seed from the same event on: the same situation), for the same member, whose rewards differ by more
than --margin: the messages both share (at least the system prompt and the first observation) as
the prompt, and each one's continuation as chosen (the higher reward) and rejected. Sessions that
share their situation with no other make no pairs; sessions that did not finish make none.

--format jsonl: every event of the sessions, one per line, as corpsim log prints them; each line
names the session it was exported as (and "stored_in" for the events a fork shares with its parent).

--reward team ranks and filters episodes by the team score instead of the member's reward.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.MinSet = cmd.Flags().Changed("min-reward")
			o.HistorySet = cmd.Flags().Changed("history")
			o.MarginSet = cmd.Flags().Changed("margin")
			o.BySet = cmd.Flags().Changed("reward")
			o.Logger = a.logger
			// Progress on a terminal, unless the lines go to that terminal too.
			toTerminal := (o.Out == "" || o.Out == "-") && isTerminal(a.stdout)
			if isTerminal(a.stderr) && !toTerminal {
				o.Progress = exportProgress(a.stderr)
			}
			o.Notice = func(s string) {
				if o.Progress != nil {
					fmt.Fprint(a.stderr, "\r\033[K") // the progress line, not the notice, is cut
				}
				fmt.Fprintf(a.stderr, "corpsim export: %s\n", s)
			}
			what, err := app.Export(cmd.Context(), o, args, a.stdout)
			if o.Progress != nil {
				fmt.Fprint(a.stderr, "\r\033[K") // clear the progress line
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "corpsim export: %s\n", what)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	f.StringVar(&o.Format, "format", "sft", "what to export: sft, dpo or jsonl")
	f.StringVarP(&o.Out, "output", "o", "-", "file to write (- for stdout)")
	f.Float64Var(&o.MinReward, "min-reward", 0, "sft: keep only the episodes whose reward is at least this")
	f.IntVar(&o.History, "history", 0, "sft: one line per turn with at most this many earlier turns (default: one line per episode)")
	f.Float64Var(&o.Margin, "margin", 0, "dpo: pair two episodes only when their rewards differ by more than this")
	f.StringVar(&o.By, "reward", export.ByMember, "sft, dpo: the reward that filters and ranks episodes: member or team")
	return c
}

// exportProgress prints how far an export has come on one line, at most
// ten times a second: a long session takes a while to replay and write.
func exportProgress(w io.Writer) func(session, stage string, done, total uint64) {
	var last time.Time
	return func(session, stage string, done, total uint64) {
		if now := time.Now(); now.Sub(last) > 100*time.Millisecond {
			last = now
			what := "replayed %d of %d events"
			if stage == "write" {
				what = "wrote %d of %d lines"
			}
			fmt.Fprintf(w, "\r\033[Ksession %s: "+what+" ", session, done, total)
		}
	}
}
