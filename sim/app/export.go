package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/export"
)

// ExportOptions describe an export of stored sessions as training data.
type ExportOptions struct {
	Data       string  // data folder of the log
	Format     string  // sft, dpo or jsonl
	Out        string  // file to write; "" or "-" for the writer Export is given
	By         string  // sft, dpo: the reward that filters and ranks episodes (export.ByMember or export.ByTeam)
	MinReward  float64 // sft, with MinSet: keep only the episodes whose reward is at least this
	MinSet     bool
	History    int // sft, with HistorySet: one line per turn with at most this many earlier turns
	HistorySet bool
	Margin     float64 // dpo: pair two episodes only when their rewards differ by more than this
	MarginSet  bool    // Margin was given (0 included): only dpo takes it
	BySet      bool    // By was given: jsonl, which has no rewards, does not take it
	Logger     hclog.Logger
	// Notice, if set, is told of each session that makes no preference
	// pairs (dpo), as a sentence.
	Notice func(string)
	// Progress, if set, is told how far the export of each session has
	// come (sft, dpo): export.Options.Progress, with the session.
	Progress func(session, stage string, done, total uint64)
}

// exportOptions are the export package's options for session id.
func (o ExportOptions) exportOptions(id string) export.Options {
	eo := export.Options{Prompts: llmPrompts}
	if o.Progress != nil {
		eo.Progress = func(stage string, done, total uint64) { o.Progress(id, stage, done, total) }
	}
	return eo
}

// Export writes the sessions ids of the log in o.Data as o.Format to o.Out
// (or stdout), and returns what it wrote, e.g. "3 episodes of 1 session"
// or "2 preference pairs from 2 sessions to pairs.jsonl". A regular file (or
// nothing) at o.Out is replaced only once the whole output is written.
func Export(ctx context.Context, o ExportOptions, ids []string, stdout io.Writer) (string, error) {
	switch o.Format {
	case "sft", "dpo", "jsonl":
	default:
		return "", Usagef("--format %q: want sft, dpo or jsonl", o.Format)
	}
	if err := export.ValidBy(o.By); err != nil {
		return "", Usagef("--reward %q: want member or team", o.By)
	}
	if o.MinSet && o.Format != "sft" {
		return "", Usagef("--min-reward is for --format sft")
	}
	if math.IsNaN(o.MinReward) {
		// No reward is below NaN, nor at least NaN: it would keep every episode.
		return "", Usagef("--min-reward must be a number, got %g", o.MinReward)
	}
	if o.HistorySet && (o.Format != "sft" || o.History < 0) {
		return "", Usagef("--history is for --format sft, and at least 0")
	}
	if o.BySet && o.Format == "jsonl" {
		return "", Usagef("--reward is for --format sft or dpo: jsonl's raw events are not ranked")
	}
	if (o.MarginSet || o.Margin != 0) && o.Format != "dpo" {
		return "", Usagef("--margin is for --format dpo")
	}
	if math.IsNaN(o.Margin) {
		// No two rewards differ by more than NaN: it would make no pairs.
		return "", Usagef("--margin must be a number, got %g", o.Margin)
	}
	if o.Margin < 0 {
		return "", Usagef("--margin must not be negative, got %g", o.Margin)
	}
	var uniq []string
	dup := map[string]bool{}
	for _, id := range ids {
		if !dup[id] {
			dup[id] = true
			uniq = append(uniq, id)
		}
	}
	if len(uniq) == 0 {
		return "", Usagef("export needs at least one session")
	}
	log, first, err := OpenSession(ctx, o.Data, uniq[0], o.Logger)
	if err != nil {
		return "", err
	}
	defer log.Close()
	metas := []events.SessionMeta{first}
	for _, id := range uniq[1:] {
		m, err := log.Session(ctx, id)
		if err != nil {
			if errors.Is(err, events.ErrNoSession) || errors.Is(err, events.ErrBadSession) {
				return "", fmt.Errorf("no session %s in %s", id, o.Data)
			}
			return "", err
		}
		metas = append(metas, m)
	}
	for _, m := range metas {
		if m.Status != events.StatusFinished && o.Format != "dpo" && o.Notice != nil {
			// Its episodes end where it stopped, with what it had earned
			// (dpo leaves it out: exportDPO).
			what := "its events end there"
			if o.Format == "sft" {
				what = "each line says its status"
			}
			o.Notice(fmt.Sprintf("session %s is %s, not finished: its data ends at event %d (%s)", m.ID, m.Status, m.LastSeq, what))
		}
	}
	return writeOutput(o.Out, stdout, func(w io.Writer) (string, error) {
		switch o.Format {
		case "jsonl":
			n, err := export.WriteEvents(ctx, w, log, uniq)
			return fmt.Sprintf("%s of %s", analyze.Plural(int(n), "event"), analyze.Plural(len(uniq), "session")), err
		case "sft":
			return exportSFT(ctx, w, log, uniq, o)
		default:
			return exportDPO(ctx, w, log, uniq, o)
		}
	})
}

// llmPrompts make transcripts read as what the LLM agent sends a seat.
var llmPrompts = export.Prompts{System: llm.SystemPrompt, Observation: llm.ObservationMessage, Result: llm.ToolResult}

// episodes reads a session's episodes, leaving out the seats that never
// answered a turn.
func episodes(ctx context.Context, log export.Log, id string, o ExportOptions) (eps []export.Episode, empty int, err error) {
	all, err := export.Episodes(ctx, log, id, o.exportOptions(id))
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

// exportSFT writes each session's episodes as they are replayed, their
// transcripts waiting for the session's rewards in a spill file rather
// than in memory (a 320-day session's 3.1 GB of lines took 8.3 GiB when
// they were held): in the folder of the output file, where its own
// temporary file goes (writeOutput), or the system's temporary folder
// ($TMPDIR) for stdout, a device or a pipe. Where no spill file can be
// made, the transcripts are held in memory, as before, and a notice says so.
func exportSFT(ctx context.Context, w io.Writer, log export.Log, ids []string, o ExportOptions) (string, error) {
	kept, lines, low, empty := 0, 0, 0, 0
	keep := func(ep *export.Episode) bool {
		switch {
		case ep.Turns == 0:
			empty++
			return false
		case o.MinSet && ep.Score(o.By) < o.MinReward:
			low++
			return false
		}
		return true
	}
	dir := os.TempDir()
	if o.Out != "" && o.Out != "-" {
		if st, err := os.Lstat(o.Out); err != nil || st.Mode().IsRegular() {
			dir = filepath.Dir(o.Out)
		}
	}
	said := false // that no spill file can be made: once, not for every session
	notice := func(msg string) {
		if o.Notice != nil && !said {
			said = true
			o.Notice(msg)
		}
	}
	for _, id := range ids {
		k, l, err := spilling(dir, notice, func(sp export.Spill) (int, int, error) {
			return export.WriteSFT(ctx, w, log, id, export.SFTOptions{Options: o.exportOptions(id),
				Windows: o.HistorySet, History: o.History, Keep: keep, Spill: sp})
		})
		if err != nil {
			return "", err
		}
		kept, lines = kept+k, lines+l
	}
	what := fmt.Sprintf("%s of %s", analyze.Plural(kept, "episode"), analyze.Plural(len(ids), "session"))
	if o.HistorySet {
		what += fmt.Sprintf(" in %d lines of at most %d earlier turns", lines, o.History)
	}
	if low > 0 {
		what += fmt.Sprintf(" (%d with a %s reward below %g left out)", low, o.By, o.MinReward)
	}
	if empty > 0 {
		what += fmt.Sprintf(" (%d seats that never answered a turn left out)", empty)
	}
	return what, nil
}

// spilling runs write with a new spill file in dir, which is gone when it
// returns (and, where the system lets an open file be removed, at once: a
// crash leaves none). When none can be made there, write gets no spill
// (export.WriteSFT then holds the transcripts in memory), and notice is
// told why.
func spilling(dir string, notice func(string), write func(export.Spill) (int, int, error)) (int, int, error) {
	f, err := os.CreateTemp(dir, ".corpsim-export-*")
	if err != nil {
		if notice != nil {
			notice(fmt.Sprintf("no spill file in %s (%v): the transcripts are held in memory", dir, unwrapPath(err)))
		}
		return write(nil)
	}
	removed := os.Remove(f.Name()) == nil
	defer func() {
		f.Close()
		if !removed {
			os.Remove(f.Name())
		}
	}()
	return write(f)
}

func exportDPO(ctx context.Context, w io.Writer, log export.Log, ids []string, o ExportOptions) (string, error) {
	var all []export.Episode
	paired := 0 // the sessions whose episodes may pair: finished, with a seat that answered
	for _, id := range ids {
		eps, _, err := episodes(ctx, log, id, o)
		if err != nil {
			return "", err
		}
		if len(eps) > 0 && eps[0].Status != string(events.StatusFinished) {
			// Its rewards are what it had earned where it stopped: no
			// measure against a session played to its end.
			if o.Notice != nil {
				o.Notice(fmt.Sprintf("session %s is %s, not finished: its rewards are partial, so it makes no pairs", id, eps[0].Status))
			}
			continue
		}
		if len(eps) > 0 {
			paired++
		}
		all = append(all, eps...)
	}
	pairs, alone := export.Pairs(all, export.PairOptions{Margin: o.Margin, By: o.By})
	for i, id := range alone {
		if o.Notice == nil {
			break
		}
		if i == maxAloneNamed && len(alone) > maxAloneNamed+1 {
			// Thousands of rollouts of as many seeds would say it thousands of times.
			o.Notice(fmt.Sprintf("and %d more sessions alone in their situation: no pairs", len(alone)-i))
			break
		}
		ep := all[0]
		for _, e := range all {
			if e.Session == id {
				ep = e
				break
			}
		}
		o.Notice(fmt.Sprintf("session %s (world %s, seed %d) shares its world and seed, and its draw key, load, seed at event 1, log format and the event each seed began at, with no other session given: no pairs", id, ep.World, ep.Seed))
	}
	if err := export.WriteLines(w, pairs); err != nil {
		return "", err
	}
	what := fmt.Sprintf("%s from %s", analyze.Plural(len(pairs), "preference pair"), analyze.Plural(len(ids), "session"))
	if len(pairs) == 0 && len(alone) < paired {
		what += fmt.Sprintf(" (no two episodes of the same world, seed and member have %s rewards that differ by more than %g)", o.By, o.Margin)
	}
	return what, nil
}

// maxAloneNamed is how many sessions that make no pairs a dpo export names
// one by one before it counts the rest.
const maxAloneNamed = 5

// writeOutput runs write on stdout (path "" or "-"), or on a new file that
// replaces the regular file (or nothing) at path only once write succeeded;
// anything else at path (a device, a pipe, a symbolic link) is written
// through. It returns what write says it wrote, and where.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) (string, error)) (string, error) {
	if path == "" || path == "-" {
		return write(stdout)
	}
	if err := CheckWritable(path); err != nil {
		return "", err
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return "", err
		}
		what, err := write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
		return what + " to " + path, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, unwrapPath(err))
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
		return "", err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	return what + " to " + path, nil
}
