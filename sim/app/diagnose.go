package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/analyze"
)

// SweepDiagnoses is the file a sweep with an output folder writes beside
// sweep.csv: one JSON object per run (SweepRun), in the sweep's order.
const SweepDiagnoses = "diagnose.jsonl"

// SweepRun is one run of a sweep and its diagnosis, as a line of
// SweepDiagnoses: the run's world, load, agents and seed, then the
// diagnosis's lost and causes, then its possible value and team score.
type SweepRun struct {
	World  string  `json:"world"`
	Load   float64 `json:"load"`
	Agents string  `json:"agents"`
	Seed   uint64  `json:"seed"`
	*analyze.Diagnosis
	Possible float64 `json:"possible"`
	Score    float64 `json:"score"`
	Failed   int     `json:"failed"`
	Items    int     `json:"items"`
	// Details are the causes' details (who or what), by cause.
	Details map[string][]analyze.Part `json:"details,omitempty"`
}

func sweepRun(w string, load float64, agents string, seed uint64, d *analyze.Diagnosis) SweepRun {
	r := SweepRun{World: w, Load: load, Agents: agents, Seed: seed, Diagnosis: d, Possible: d.Possible, Score: d.Score, Failed: d.Failed, Items: d.Items}
	for _, c := range d.Causes {
		if len(c.Detail) > 0 {
			if r.Details == nil {
				r.Details = map[string][]analyze.Part{}
			}
			r.Details[c.Cause] = c.Detail
		}
	}
	return r
}

// diagnoseLog diagnoses session id of log.
func diagnoseLog(ctx context.Context, log events.Log, id string) (*analyze.Diagnosis, error) {
	s, err := analyze.Load(log.Read(ctx, id, 1))
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	s.ID = id
	return s.Diagnose(), nil
}

// Diagnose reads stored session id and says where its lost value went.
func Diagnose(ctx context.Context, data, id string, logger hclog.Logger) (*analyze.Diagnosis, error) {
	s, err := LoadAnalysis(ctx, data, id, logger)
	if err != nil {
		return nil, err
	}
	return s.Diagnose(), nil
}

// WriteDiagnoses writes the sweep's runs as SweepDiagnoses lines.
func (r *SweepResult) WriteDiagnoses(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, run := range r.Runs {
		if err := enc.Encode(run); err != nil {
			return err
		}
	}
	return nil
}

// ReadSweep reads the diagnoses a sweep wrote to its output folder dir.
func ReadSweep(dir string) ([]SweepRun, error) {
	path := filepath.Join(dir, SweepDiagnoses)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(filepath.Join(dir, "sweep.csv")); serr == nil {
			return nil, Usagef("%s has no %s: it was written by a corpsim without diagnose; run corpsim sweep -o %s again", dir, SweepDiagnoses, dir)
		}
		return nil, Usagef("%s is not a corpsim sweep output folder (no %s)", dir, SweepDiagnoses)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []SweepRun
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r SweepRun
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Diagnosis == nil {
			if err == nil {
				err = errors.New("no diagnosis")
			}
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		r.Diagnosis.World, r.Diagnosis.Possible, r.Diagnosis.Score = r.World, r.Possible, r.Score
		r.Diagnosis.Failed, r.Diagnosis.Items, r.Diagnosis.Sessions = r.Failed, r.Items, 1
		for i := range r.Diagnosis.Causes {
			r.Diagnosis.Causes[i].Detail = r.Details[r.Diagnosis.Causes[i].Cause]
		}
		runs = append(runs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s has no runs", path)
	}
	return runs, nil
}
