package export_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/export"
)

// WriteSFT writes the bytes WriteLines writes for Episodes, whole or cut
// into windows, keeping what Keep keeps, its transcripts in memory or in a
// file: on sessions with every kind of turn (timed out, stale, malformed,
// an unknown tool), with record reads, and a fork.
func TestWriteSFTIsWriteLinesOfEpisodes(t *testing.T) {
	ctx := context.Background()
	log := memlog.New()
	mustSession(t, log, "startup", "startup", 3, team(3))
	mustSession(t, log, "billing", "billing-support", 1, greedyOnly)
	mustFork(t, log, "fork", "startup", 40, greedyOnly)
	prompts := []export.Options{
		{},
		{Prompts: export.Prompts{
			System:      func(o org.Observation) string { return "you are " + o.Member + ` <&> "messages":[]` },
			Observation: func(o org.Observation) (string, error) { return strings.Repeat("obs ", int(o.Turn)), nil },
		}},
	}
	keeps := map[string]func(*export.Episode) bool{
		"all":      nil,
		"rewarded": func(ep *export.Episode) bool { return ep.Reward > 0 && ep.Turns > 0 },
	}
	for _, id := range []string{"startup", "billing", "fork"} {
		for pi, o := range prompts {
			eps, err := export.Episodes(ctx, log, id, o)
			if err != nil {
				t.Fatal(err)
			}
			for kname, keep := range keeps {
				var kept []export.Episode
				for i := range eps {
					if keep == nil || keep(&eps[i]) {
						kept = append(kept, eps[i])
					}
				}
				for _, history := range []int{-2, 0, 1, 3, 1000} {
					var want bytes.Buffer
					lines := len(kept)
					if history == -2 { // whole episodes
						if err := export.WriteLines(&want, kept); err != nil {
							t.Fatal(err)
						}
					} else {
						var wins []export.Episode
						for i := range kept {
							wins = append(wins, kept[i].Windows(history)...)
						}
						lines = len(wins)
						if err := export.WriteLines(&want, wins); err != nil {
							t.Fatal(err)
						}
					}
					for _, file := range []bool{false, true} {
						so := export.SFTOptions{Options: o, Windows: history != -2, History: history, Keep: keep}
						if file {
							f, err := os.CreateTemp(t.TempDir(), "spill")
							if err != nil {
								t.Fatal(err)
							}
							defer f.Close()
							so.Spill = f
						}
						var got bytes.Buffer
						n, l, err := export.WriteSFT(ctx, &got, log, id, so)
						if err != nil {
							t.Fatal(err)
						}
						if n != len(kept) || l != lines || !bytes.Equal(got.Bytes(), want.Bytes()) {
							t.Fatalf("%s, prompts %d, keep %s, history %d, file %v: %d episodes in %d lines (want %d in %d), bytes equal %v\ngot  %.300s\nwant %.300s",
								id, pi, kname, history, file, n, l, len(kept), lines, bytes.Equal(got.Bytes(), want.Bytes()), got.String(), want.String())
						}
					}
					if want.Len() == 0 {
						t.Fatalf("%s, keep %s, history %d: nothing written: the comparison tests nothing", id, kname, history)
					}
				}
			}
		}
	}
}

// failingSpill refuses writes, as a full disk does.
type failingSpill struct{ *os.File }

func (failingSpill) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A spill that cannot be written is an error, not a short transcript.
func TestWriteSFTSpillError(t *testing.T) {
	log := memlog.New()
	mustSession(t, log, "s", "startup", 3, team(3))
	f, err := os.Create(filepath.Join(t.TempDir(), "spill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	_, _, err = export.WriteSFT(context.Background(), &out, log, "s", export.SFTOptions{Spill: failingSpill{f}})
	if err == nil || !strings.Contains(err.Error(), "no space left") || out.Len() != 0 {
		t.Fatalf("err %v, %d bytes written; want the spill's error and nothing", err, out.Len())
	}
}

// Progress follows the replay to the session's last event, then the
// lines to the last one written.
func TestWriteSFTProgress(t *testing.T) {
	log := memlog.New()
	mustSession(t, log, "s", "startup", 3, team(3))
	last := uint64(len(readAll(t, log, "s")))
	var replayed, wrote, total uint64
	o := export.SFTOptions{Windows: true, History: 1}
	o.Progress = func(stage string, done, of uint64) {
		switch stage {
		case "replay":
			if done <= replayed || of != last {
				t.Fatalf("replay progress %d of %d after %d; want rising to %d", done, of, replayed, last)
			}
			replayed = done
		case "write":
			wrote, total = done, of
		}
	}
	var out bytes.Buffer
	_, lines, err := export.WriteSFT(context.Background(), &out, log, "s", o)
	if err != nil {
		t.Fatal(err)
	}
	if replayed != last || wrote != uint64(lines) || total != uint64(lines) || lines == 0 {
		t.Fatalf("progress: replayed %d of %d, wrote %d of %d; want all, and %d lines", replayed, last, wrote, total, lines)
	}
}
