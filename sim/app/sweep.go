package app

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/report"
	"github.com/corpsim/corpsim/worlds"
)

// SweepOptions describe a sweep: every (load, agents, seed) of a world.
type SweepOptions struct {
	World     string
	Loads     []float64
	Agents    []string // agent specs, each as for run's --agents
	Seeds     int
	FirstSeed uint64
	// FirstSeedSet says FirstSeed was given (EvalOptions.FirstSeedSet).
	FirstSeedSet bool
	Parallel     int
	// Progress, if set, is called after each run with the runs done and the total.
	Progress func(done, total int)
	// Diagnose diagnoses every run (analyze.Session.Diagnose) into
	// SweepResult.Runs, for corpsim diagnose --sweep.
	Diagnose bool
}

// SweepPoint is one (load, agents) cell of a sweep: means and sample
// standard deviations over its seeds.
type SweepPoint struct {
	Load         float64   `json:"load"`
	Agents       string    `json:"agents"`
	Seeds        []uint64  `json:"seeds"`
	Completion   float64   `json:"completion_mean"`
	CompletionSD float64   `json:"completion_sd"`
	OnTime       float64   `json:"on_time_mean"`
	OnTimeSD     float64   `json:"on_time_sd"`
	Score        float64   `json:"score_mean"`
	ScoreSD      float64   `json:"score_sd"`
	Scores       []float64 `json:"scores"`
	// Templates is the completion of each case template (format 2), in
	// the world's order; none in a world without cases.
	Templates []TemplateCompletion `json:"templates,omitempty"`
}

// TemplateCompletion is how many of a case template's cases were done
// (every step verified) of those opened, over a point's seeds.
type TemplateCompletion struct {
	Template string  `json:"template"`
	Opened   float64 `json:"opened_mean"`
	Done     float64 `json:"done_mean"`
	// Completion is the mean over seeds of done / opened (a seed that
	// opened none counts 0).
	Completion   float64 `json:"completion_mean"`
	CompletionSD float64 `json:"completion_sd"`
}

// templateCompletion is the completion of each case template of ids (the
// world's, in its order) over cards. A card that opened no case has no
// templates at all: each counts 0 opened and 0 done there.
func templateCompletion(ids []string, cards []policies.Scorecard) []TemplateCompletion {
	if len(cards) == 0 || len(ids) == 0 {
		return nil
	}
	out := make([]TemplateCompletion, len(ids))
	for i, id := range ids {
		out[i].Template = id
		var opened, done, comp []float64
		for _, c := range cards {
			t := policies.CaseScore{Template: id}
			for _, x := range c.Templates {
				if x.Template == id {
					t = x
				}
			}
			opened, done = append(opened, float64(t.Cases)), append(done, float64(t.Done))
			r := 0.0
			if t.Cases > 0 {
				r = float64(t.Done) / float64(t.Cases)
			}
			comp = append(comp, r)
		}
		out[i].Opened, _ = meanSD(opened)
		out[i].Done, _ = meanSD(done)
		out[i].Completion, out[i].CompletionSD = meanSD(comp)
	}
	return out
}

// SweepResult is what corpsim sweep reports, in load order, then agents order.
type SweepResult struct {
	World  string       `json:"world"`
	Rubric string       `json:"rubric"`
	Seeds  int          `json:"seeds"`
	Keyed  bool         `json:"keyed,omitempty"` // the draws were keyed with a secret (RunResult.Keyed)
	Points []SweepPoint `json:"points"`
	Wall   string       `json:"wall"`
	// Runs are the runs' diagnoses in the sweep's order (load, agents,
	// seed), if SweepOptions.Diagnose.
	Runs []SweepRun `json:"runs,omitempty"`
}

// onTimeRate is the share of a run's work (project tasks, tickets and
// cases, as its completion counts them) that was done, verified and on
// time (tickets and cases: within their SLA).
func onTimeRate(s policies.Scorecard) float64 {
	if n := s.Tasks + s.Tickets + s.Cases; n > 0 {
		return float64(s.OnTime+s.TicketsInSLA+s.CasesInSLA) / float64(n)
	}
	return 0
}

// Sweep runs every (load, agents, seed) of a world in memory, in parallel,
// over one embedded NATS server, each run exactly as Eval runs it, and
// reports completion, on-time rate and team score per (load, agents).
func Sweep(ctx context.Context, o SweepOptions, ro RunOptions) (*SweepResult, error) {
	if err := checkEpisodes(&o.FirstSeed, o.FirstSeedSet, o.Seeds, &o.Parallel); err != nil {
		return nil, err
	}
	if len(o.Loads) == 0 || len(o.Agents) == 0 {
		return nil, Usagef("--loads and --agents need at least one value each")
	}
	if n := len(o.Loads) * len(o.Agents) * o.Seeds; n > MaxEpisodes || n/len(o.Loads)/len(o.Agents) != o.Seeds {
		return nil, Usagef("%d loads × %d agents × %d seeds: at most %d episodes in one sweep", len(o.Loads), len(o.Agents), o.Seeds, MaxEpisodes)
	}
	// A value given twice would run the same cells twice and print them
	// as two.
	for i, l := range o.Loads {
		if slices.Contains(o.Loads[:i], l) {
			return nil, Usagef("--loads gives %v twice", l)
		}
	}
	for i, a := range o.Agents {
		if slices.Contains(o.Agents[:i], a) {
			return nil, Usagef("--agents gives %q twice", a)
		}
	}
	if err := ro.WorldLimits.Validate(); err != nil {
		return nil, usage(err)
	}
	for _, l := range o.Loads {
		if err := worlds.CheckNewLoad(l, ro.WorldLimits.WithDefaults().MaxLoad); err != nil {
			return nil, usage(fmt.Errorf("--loads: %w", err))
		}
	}
	w, _, err := LoadWorldLimited(o.World, ro.WorldLimits)
	if err != nil {
		return nil, err
	}
	for _, l := range o.Loads {
		if err := admit(w, l, ro.WorldLimits); err != nil {
			return nil, err
		}
	}
	logWarnings(ro.Logger, w)
	ro.quiet = true
	for _, a := range o.Agents {
		if agents.MentionsLLM(a) {
			return nil, Usagef("--agents %q: a sweep plays built-in agents only, not llm", a)
		}
		if _, err := ParseAgents(a, w, false); err != nil {
			return nil, err
		}
	}
	srv, err := natsserver.Start(natsserver.Options{Logger: ro.Logger})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	start := time.Now()
	type job struct{ load, agents, seed int }
	var jobs []job
	for li := range o.Loads {
		for ai := range o.Agents {
			for si := range o.Seeds {
				jobs = append(jobs, job{li, ai, si})
			}
		}
	}
	cards := make([]policies.Scorecard, len(jobs))
	var runs []SweepRun
	if o.Diagnose {
		runs = make([]SweepRun, len(jobs))
	}
	errs := make([]error, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, o.Parallel)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
jobs:
	for i, j := range jobs {
		select { // at most o.Parallel episodes, and goroutines, at once
		case sem <- struct{}{}:
		case <-ctx.Done():
			break jobs // an interrupt or a failed job starts no more
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			r := ro
			r.World, r.Agents, r.Load, r.Seed = o.World, o.Agents[j.agents], o.Loads[j.load], o.FirstSeed+uint64(j.seed)
			r.Log, r.Bus, r.CheckpointEvery, r.Progress = newMemLog(0), srv, -1, nil
			res, err := Run(ctx, r)
			if err != nil {
				errs[i] = fmt.Errorf("load %g, agents %s, seed %d: %w", r.Load, r.Agents, r.Seed, err)
				cancel()
				return
			}
			cards[i] = res.Score
			if runs != nil {
				d, err := diagnoseLog(ctx, r.Log, res.Session)
				if err != nil {
					errs[i] = fmt.Errorf("load %g, agents %s, seed %d: %w", r.Load, r.Agents, r.Seed, err)
					cancel()
					return
				}
				runs[i] = sweepRun(w.Name, r.Load, r.Agents, r.Seed, d)
			}
			mu.Lock()
			done++
			if o.Progress != nil {
				o.Progress(done, len(jobs))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // jobs left unplayed: no result
	}
	res := &SweepResult{World: w.Name, Rubric: policies.RubricVersion, Seeds: o.Seeds, Keyed: len(ro.Secret) > 0, Runs: runs}
	templates := make([]string, len(w.Cases))
	for i := range w.Cases {
		templates[i] = w.Cases[i].ID
	}
	for i := 0; i < len(jobs); i += o.Seeds {
		j := jobs[i]
		p := SweepPoint{Load: o.Loads[j.load], Agents: o.Agents[j.agents]}
		var comp, onTime []float64
		for k := range o.Seeds {
			c := cards[i+k]
			p.Seeds = append(p.Seeds, o.FirstSeed+uint64(k))
			p.Scores = append(p.Scores, c.TeamScore)
			comp = append(comp, c.Completion)
			onTime = append(onTime, onTimeRate(c))
		}
		p.Completion, p.CompletionSD = meanSD(comp)
		p.OnTime, p.OnTimeSD = meanSD(onTime)
		p.Score, p.ScoreSD = meanSD(p.Scores)
		p.Templates = templateCompletion(templates, cards[i:i+o.Seeds])
		res.Points = append(res.Points, p)
	}
	res.Wall = time.Since(start).Round(time.Millisecond).String()
	return res, nil
}

// meanSD is the mean and the sample standard deviation (0 for one value).
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// WriteCSV writes one row per (load, agents); a world with cases adds
// columns per case template: cases_<template>_{opened,done,completion}_mean.
func (r *SweepResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"world", "load", "agents", "seeds", "completion_mean", "completion_sd", "on_time_mean", "on_time_sd", "score_mean", "score_sd"}
	if len(r.Points) > 0 {
		for _, t := range r.Points[0].Templates {
			head = append(head, "cases_"+t.Template+"_opened_mean", "cases_"+t.Template+"_done_mean", "cases_"+t.Template+"_completion_mean")
		}
	}
	cw.Write(head)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	for _, p := range r.Points {
		row := []string{r.World, strconv.FormatFloat(p.Load, 'g', -1, 64), p.Agents, strconv.Itoa(len(p.Seeds)),
			f(p.Completion), f(p.CompletionSD), f(p.OnTime), f(p.OnTimeSD), f(p.Score), f(p.ScoreSD)}
		for _, t := range p.Templates {
			row = append(row, f(t.Opened), f(t.Done), f(t.Completion))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// Chart is completion against load, one line per agents, with ±1 sd bars.
func (r *SweepResult) Chart() report.LineChart {
	var series []report.Series
	idx := map[string]int{}
	for _, p := range r.Points {
		i, ok := idx[p.Agents]
		if !ok {
			i = len(series)
			idx[p.Agents] = i
			series = append(series, report.Series{Name: p.Agents})
		}
		series[i].Points = append(series[i].Points, report.Point{X: p.Load, Y: p.Completion, Err: p.CompletionSD})
	}
	var ticks []report.Tick
	for _, p := range r.Points {
		if len(ticks) == 0 || ticks[len(ticks)-1].V != p.Load {
			ticks = append(ticks, report.Tick{V: p.Load, Label: strconv.FormatFloat(p.Load, 'g', -1, 64)})
		}
	}
	return report.LineChart{
		Title:  fmt.Sprintf("%s: completion against load (mean of %d seeds, bars ±1 sd)", r.World, r.Seeds),
		XTicks: func(float64, float64) []report.Tick { return ticks },
		XLabel: "load factor", YLabel: "completion", Width: 720, Height: 360,
		Series: series, Markers: true, YMin: 0, YMax: 1,
		YFormat: func(v float64) string { return strconv.FormatFloat(math.Round(1000*v)/10, 'f', -1, 64) + "%" },
	}
}
