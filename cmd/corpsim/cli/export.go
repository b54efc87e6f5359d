package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/export"
)

// exportOptions are corpsim export's flags.
type exportOptions struct {
	data, format, out, by string
	minReward, margin     float64
	minSet, historySet    bool
	history               int
}

func (a *app) exportCmd() *cobra.Command {
	var o exportOptions
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

--format dpo: preference pairs of two sessions of the same world and seed, for the same member,
whose rewards differ by more than --margin: the messages both share (at least the system prompt
and the first observation) as the prompt, and each one's continuation as chosen (the higher
reward) and rejected. Sessions that share their world and seed with no other make no pairs.

--format jsonl: every event of the sessions, one per line, as corpsim log prints them; each line
names the session it was exported as (and "stored_in" for the events a fork shares with its parent).

--reward team ranks and filters episodes by the team score instead of the member's reward.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.minSet = cmd.Flags().Changed("min-reward")
			o.historySet = cmd.Flags().Changed("history")
			return a.export(cmd.Context(), o, args)
		},
	}
	f := c.Flags()
	f.StringVar(&o.data, "data", DefaultData, "data folder of the event log")
	f.StringVar(&o.format, "format", "sft", "what to export: sft, dpo or jsonl")
	f.StringVarP(&o.out, "output", "o", "-", "file to write (- for stdout)")
	f.Float64Var(&o.minReward, "min-reward", 0, "sft: keep only the episodes whose reward is at least this")
	f.IntVar(&o.history, "history", 0, "sft: one line per turn with at most this many earlier turns (default: one line per episode)")
	f.Float64Var(&o.margin, "margin", 0, "dpo: pair two episodes only when their rewards differ by more than this")
	f.StringVar(&o.by, "reward", export.ByMember, "sft, dpo: the reward that filters and ranks episodes: member or team")
	return c
}

// export checks the flags, reads the sessions and writes the output.
func (a *app) export(ctx context.Context, o exportOptions, ids []string) error {
	switch o.format {
	case "sft", "dpo", "jsonl":
	default:
		return usagef("--format %q: want sft, dpo or jsonl", o.format)
	}
	if err := export.ValidBy(o.by); err != nil {
		return usagef("--reward %q: want member or team", o.by)
	}
	if o.minSet && o.format != "sft" {
		return usagef("--min-reward is for --format sft")
	}
	if o.historySet && (o.format != "sft" || o.history < 0) {
		return usagef("--history is for --format sft, and at least 0")
	}
	if o.margin != 0 && o.format != "dpo" {
		return usagef("--margin is for --format dpo")
	}
	if o.margin < 0 {
		return usagef("--margin must not be negative, got %g", o.margin)
	}
	var uniq []string
	dup := map[string]bool{}
	for _, id := range ids {
		if !dup[id] {
			dup[id] = true
			uniq = append(uniq, id)
		}
	}
	log, _, err := a.openSession(ctx, o.data, uniq[0])
	if err != nil {
		return err
	}
	defer log.Close()
	for _, id := range uniq[1:] {
		if _, err := log.Session(ctx, id); err != nil {
			if errors.Is(err, events.ErrNoSession) || errors.Is(err, events.ErrBadSession) {
				return fmt.Errorf("no session %s in %s", id, o.data)
			}
			return err
		}
	}
	return a.writeOutput(o.out, func(w io.Writer) (string, error) {
		switch o.format {
		case "jsonl":
			n, err := export.WriteEvents(ctx, w, log, uniq)
			return fmt.Sprintf("%d events of %s", n, nSessions(len(uniq))), err
		case "sft":
			return a.exportSFT(ctx, w, log, uniq, o)
		default:
			return a.exportDPO(ctx, w, log, uniq, o)
		}
	})
}

// llmPrompts make transcripts read as what the LLM agent sends a seat.
var llmPrompts = export.Prompts{System: llm.SystemPrompt, Observation: llm.ObservationMessage, Result: llm.ToolResult}

// episodes reads a session's episodes, leaving out the seats that never
// answered a turn.
func episodes(ctx context.Context, log export.Log, id string) (eps []export.Episode, empty int, err error) {
	all, err := export.Episodes(ctx, log, id, export.Options{Prompts: llmPrompts})
	if err != nil {
		return nil, 0, err
	}
	for _, ep := range all {
		if ep.Turns == 0 {
			empty++
			continue
		}
		eps = append(eps, ep)
	}
	return eps, empty, nil
}

func (a *app) exportSFT(ctx context.Context, w io.Writer, log export.Log, ids []string, o exportOptions) (string, error) {
	kept, lines, low, empty := 0, 0, 0, 0
	for _, id := range ids {
		eps, e, err := episodes(ctx, log, id)
		if err != nil {
			return "", err
		}
		empty += e
		var out []export.Episode
		for _, ep := range eps {
			if o.minSet && ep.Score(o.by) < o.minReward {
				low++
				continue
			}
			out = append(out, ep)
		}
		kept += len(out)
		if o.historySet {
			var wins []export.Episode
			for i := range out {
				wins = append(wins, out[i].Windows(o.history)...)
			}
			lines += len(wins)
			out = wins
		}
		if err := export.WriteLines(w, out); err != nil {
			return "", err
		}
	}
	what := fmt.Sprintf("%d episodes of %s", kept, nSessions(len(ids)))
	if o.historySet {
		what += fmt.Sprintf(" in %d lines of at most %d earlier turns", lines, o.history)
	}
	if low > 0 {
		what += fmt.Sprintf(" (%d with a %s reward below %g left out)", low, o.by, o.minReward)
	}
	if empty > 0 {
		what += fmt.Sprintf(" (%d seats that never answered a turn left out)", empty)
	}
	return what, nil
}

func (a *app) exportDPO(ctx context.Context, w io.Writer, log export.Log, ids []string, o exportOptions) (string, error) {
	var all []export.Episode
	for _, id := range ids {
		eps, _, err := episodes(ctx, log, id)
		if err != nil {
			return "", err
		}
		all = append(all, eps...)
	}
	pairs, alone := export.Pairs(all, export.PairOptions{Margin: o.margin, By: o.by})
	for _, id := range alone {
		ep := all[0]
		for _, e := range all {
			if e.Session == id {
				ep = e
				break
			}
		}
		fmt.Fprintf(a.stderr, "corpsim export: session %s (world %s, seed %d) shares its world and seed with no other session given: no pairs\n", id, ep.World, ep.Seed)
	}
	if err := export.WriteLines(w, pairs); err != nil {
		return "", err
	}
	what := fmt.Sprintf("%d preference pairs from %s", len(pairs), nSessions(len(ids)))
	if len(pairs) == 0 && len(alone) < len(ids) {
		what += fmt.Sprintf(" (no two episodes of the same world, seed and member have %s rewards that differ by more than %g)", o.by, o.margin)
	}
	return what, nil
}

// writeOutput runs write on stdout (path "" or "-"), or on a new file that
// replaces the regular file (or nothing) at path only once write succeeded;
// anything else at path (a device, a pipe, a symbolic link) is written
// through. It then says on stderr what was written.
func (a *app) writeOutput(path string, write func(io.Writer) (string, error)) error {
	if path == "" || path == "-" {
		what, err := write(a.stdout)
		if err == nil {
			fmt.Fprintf(a.stderr, "corpsim export: %s\n", what)
		}
		return err
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		what, err := write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			fmt.Fprintf(a.stderr, "corpsim export: %s to %s\n", what, path)
		}
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename there is nothing left to remove
	what, err := write(f)
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp makes it 0600
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "corpsim export: %s to %s\n", what, path)
	return nil
}

func nSessions(n int) string {
	if n == 1 {
		return "1 session"
	}
	return fmt.Sprintf("%d sessions", n)
}
