package app

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// EvalOptions describe an evaluation over seeds.
type EvalOptions struct {
	World     string
	Agents    string
	Load      float64
	Seeds     int
	FirstSeed uint64
	// FirstSeedSet says FirstSeed was given: 0 is then seed 0 (a seed
	// like any other, as run's), where an unset FirstSeed is seed 1.
	FirstSeedSet bool
	Parallel     int
}

// GoalResult is one goal over all the runs of an evaluation.
type GoalResult struct {
	Goal    string  `json:"goal"`
	Passes  int     `json:"passes"`
	PassAt1 float64 `json:"pass_at_1"` // share of runs in which it passed
	PassK   bool    `json:"pass_k"`    // it passed in every run
	// Share is, for a case template's goal (case_sla:<template>), the mean
	// over runs of the share of its cases done within their SLA.
	Share *float64 `json:"share_in_sla_mean,omitempty"`
}

// caseSLAGoal is the goal of a case template's SLA: "case_sla:<template>".
const caseSLAGoal = "case_sla:"

// caseShare is the share of a template's cases done within their SLA (1
// when none was opened: none was late).
func caseShare(t policies.CaseScore) float64 {
	if t.Cases == 0 {
		return 1
	}
	return float64(t.InSLA) / float64(t.Cases)
}

// EvalResult is what corpsim eval reports.
type EvalResult struct {
	World      string       `json:"world"`
	Agents     string       `json:"agents"`
	Load       float64      `json:"load"`
	Seeds      []uint64     `json:"seeds"`
	Keyed      bool         `json:"keyed,omitempty"` // the draws were keyed with a secret (RunResult.Keyed)
	Rubric     string       `json:"rubric"`
	Scores     []float64    `json:"scores"`
	Mean       float64      `json:"mean"`
	StdDev     float64      `json:"stddev"`
	Min        float64      `json:"min"`
	Max        float64      `json:"max"`
	Completion float64      `json:"completion_mean"`
	Goals      []GoalResult `json:"goals"`
	// OutcomeMean is the outcome score's mean over the seeds and
	// OutcomeMax the mean of its maximum possible (the outcomes of the
	// cases opened); OutcomeScores per seed. In a world with systems
	// (format 2) only.
	OutcomeMean   *float64  `json:"outcome_mean,omitempty"`
	OutcomeMax    *float64  `json:"outcome_max,omitempty"`
	OutcomeScores []float64 `json:"outcome_scores,omitempty"`
	// TurnErrors and Timeouts are, per seed (as Scores), the turns whose
	// agent failed (turn.failed: its backend) and those not answered in
	// time: a seat that never acted can leave the others to pass every
	// goal, which the scores alone do not say.
	TurnErrors []int `json:"turn_errors"`
	Timeouts   []int `json:"timeouts"`
	// PassAt1 and PassK count a run as passed when every goal passed in it.
	PassAt1 float64 `json:"pass_at_1"`
	PassK   bool    `json:"pass_k"`
	Wall    string  `json:"wall"`
	// Failed are the seeds whose agents failed every turn (RunResult.Err):
	// they gave no result and are left out of the scores above.
	Failed []SeedError `json:"failed,omitempty"`
}

// SeedError is a seed of an evaluation that gave no result, and why.
type SeedError struct {
	Seed  uint64 `json:"seed"`
	Error string `json:"error"`
}

// ErrNoResult is Eval's error when no seed gave a result.
var ErrNoResult = errors.New("no seed gave a result")

// Goals of a scorecard: each project ("project:<id>" passes when it is
// completed: every task verified and on time), the tickets' SLA
// ("sla" passes when at least 90% of the tickets that arrived were resolved
// within their SLA), each case template of the world ("case_sla:<template>"
// passes when at least 90% of its cases were done within their SLA, or none
// was opened) and the budget ("budget" passes with no overrun). A card
// with no ticket has no "sla" goal and one with no case no "case_sla:"
// goals: Eval counts them passed in such a run.
func goals(s policies.Scorecard) map[string]bool {
	g := map[string]bool{}
	for _, p := range s.Projects {
		g["project:"+p.ID] = p.Completed
	}
	for _, t := range s.Templates {
		g[caseSLAGoal+t.Template] = caseShare(t) >= 0.9
	}
	if s.Tickets > 0 {
		g["sla"] = float64(s.TicketsInSLA) >= 0.9*float64(s.Tickets)
	}
	g["budget"] = s.BudgetOverrun == 0
	return g
}

// Eval runs Seeds episodes of a world, in parallel, in memory, over one
// embedded NATS server, and reports the spread of scores, pass@1 and pass^k.
func Eval(ctx context.Context, o EvalOptions, ro RunOptions) (*EvalResult, error) {
	if err := checkEpisodes(&o.FirstSeed, o.FirstSeedSet, o.Seeds, &o.Parallel); err != nil {
		return nil, err
	}
	// Checked once, before any seed runs: the load, the world and what its
	// arrivals would bring at that load.
	if err := ro.WorldLimits.Validate(); err != nil {
		return nil, usage(err)
	}
	if err := worlds.CheckNewLoad(loadOr1(o.Load), ro.WorldLimits.WithDefaults().MaxLoad); err != nil {
		return nil, usage(err)
	}
	w, _, err := LoadWorldLimited(o.World, ro.WorldLimits)
	if err != nil {
		return nil, err
	}
	if err := admit(w, loadOr1(o.Load), ro.WorldLimits); err != nil {
		return nil, err
	}
	logWarnings(ro.Logger, w)
	ro.quiet = true
	srv, err := natsserver.Start(natsserver.Options{Logger: ro.Logger})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	start := time.Now()
	cards := make([]policies.Scorecard, o.Seeds)
	errs := make([]error, o.Seeds)
	failed := make([]error, o.Seeds) // seeds whose agents failed: no result
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
seeds:
	for i := range o.Seeds {
		select { // at most o.Parallel episodes, and goroutines, at once
		case sem <- struct{}{}:
		case <-ctx.Done():
			break seeds // an interrupt starts no more
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			r := ro
			r.World, r.Agents, r.Load, r.Seed = o.World, o.Agents, o.Load, o.FirstSeed+uint64(i)
			r.Log, r.Bus, r.CheckpointEvery, r.Progress = newMemLog(0), srv, -1, nil
			res, err := Run(ctx, r)
			if err != nil {
				errs[i] = fmt.Errorf("seed %d: %w", r.Seed, err)
				return
			}
			failed[i] = res.Err()
			cards[i] = res.Score
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // seeds left unplayed: no result
	}
	res := &EvalResult{World: o.World, Agents: o.Agents, Load: o.Load, Keyed: len(ro.Secret) > 0, Rubric: policies.RubricVersion, Wall: time.Since(start).Round(time.Millisecond).String()}
	if res.Load == 0 {
		res.Load = 1
	}
	var seeds []uint64
	var kept []policies.Scorecard
	for i, c := range cards {
		seed := o.FirstSeed + uint64(i)
		if failed[i] != nil {
			res.Failed = append(res.Failed, SeedError{Seed: seed, Error: failed[i].Error()})
			continue
		}
		seeds, kept = append(seeds, seed), append(kept, c)
	}
	if len(kept) == 0 {
		return res, fmt.Errorf("%w: every seed's agents failed every turn (seed %d: %s)", ErrNoResult, res.Failed[0].Seed, res.Failed[0].Error)
	}
	cards = kept
	// The goals are those of any run: a run with no ticket, or no case of
	// a template, has no such goal on its card and passes it (nothing of
	// it was late), as it does all goals.
	pass := map[string]int{}
	for _, c := range cards {
		for g := range goals(c) {
			pass[g] = 0
		}
	}
	allPass := 0
	sum := 0.0
	for i, c := range cards {
		res.Seeds = append(res.Seeds, seeds[i])
		res.Scores = append(res.Scores, c.TeamScore)
		res.TurnErrors, res.Timeouts = append(res.TurnErrors, c.TurnErrors), append(res.Timeouts, c.Timeouts)
		sum += c.TeamScore
		res.Completion += c.Completion / float64(len(cards))
		every, gs := true, goals(c)
		for g := range pass {
			if ok, on := gs[g]; ok || !on {
				pass[g]++
			} else {
				every = false
			}
		}
		if every {
			allPass++
		}
	}
	n := float64(len(cards))
	res.Mean = sum / n
	if len(w.Systems) > 0 {
		// Sums first, divided once: 7.6, not 7.6000000000000005.
		var om, ox float64
		for _, c := range cards {
			om += c.Outcome
			ox += c.OutcomeMax
			res.OutcomeScores = append(res.OutcomeScores, c.Outcome)
		}
		om, ox = om/n, ox/n
		res.OutcomeMean, res.OutcomeMax = &om, &ox
	}
	res.Min, res.Max = res.Scores[0], res.Scores[0]
	for _, x := range res.Scores {
		res.StdDev += (x - res.Mean) * (x - res.Mean)
		res.Min, res.Max = math.Min(res.Min, x), math.Max(res.Max, x)
	}
	if len(cards) > 1 {
		res.StdDev = math.Sqrt(res.StdDev / (n - 1))
	} else {
		res.StdDev = 0
	}
	names := make([]string, 0, len(pass))
	for g := range pass {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		gr := GoalResult{Goal: g, Passes: pass[g], PassAt1: float64(pass[g]) / n, PassK: pass[g] == len(cards)}
		if tpl, ok := strings.CutPrefix(g, caseSLAGoal); ok {
			share := 0.0
			for _, c := range cards {
				// A run that opened no case has no template on its card: none was late.
				t := policies.CaseScore{Template: tpl}
				for _, x := range c.Templates {
					if x.Template == tpl {
						t = x
					}
				}
				share += caseShare(t) / n
			}
			gr.Share = &share
		}
		res.Goals = append(res.Goals, gr)
	}
	res.PassAt1 = float64(allPass) / n
	res.PassK = allPass == len(cards)
	return res, nil
}

// MaxEpisodes bounds the episodes of one eval or sweep (seeds, times loads
// and agents for a sweep): each one's scorecard is held until the summary.
const MaxEpisodes = 100_000

// checkEpisodes checks the seeds and the parallelism of an eval or a
// sweep: at least one seed, none past the largest (seeds first,
// first+1, … would wrap to 0), no negative --parallel. A first seed of 0
// not given (set false) is 1; a parallelism of 0, one episode per core.
func checkEpisodes(first *uint64, set bool, seeds int, parallel *int) error {
	if seeds < 1 {
		return Usagef("--seeds must be at least 1")
	}
	if seeds > MaxEpisodes {
		return Usagef("--seeds %d: at most %d episodes in one run of the command (each one's scorecard is kept for the summary)", seeds, MaxEpisodes)
	}
	if *first == 0 && !set {
		*first = 1
	}
	if *first > math.MaxUint64-uint64(seeds-1) {
		return Usagef("--first-seed %d with --seeds %d: the last seed would pass %d", *first, seeds, uint64(math.MaxUint64))
	}
	if *parallel < 0 {
		return Usagef("--parallel %d: at least 0 (0: one per core)", *parallel)
	}
	if *parallel == 0 {
		*parallel = runtime.GOMAXPROCS(0)
	}
	return nil
}
