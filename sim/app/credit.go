package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/analyze"
)

// CreditOptions describe a counterfactual credit assignment of a stored
// session.
type CreditOptions struct {
	Session  string
	Baseline string // built-in agent that plays a seat in its counterfactual; "" means idle
	Shapley  int    // permutations of a sampled Shapley estimate; 0 for none
	Seed     uint64 // seed of the permutations
	// Members are the seats to credit (nil: every seat): one fork each, for
	// a session of thousands of seats where a fork per seat takes hours.
	// A Shapley estimate needs every seat, so it cannot be given with them.
	Members []string
	// Progress, when set, is told after each fork how many are done of
	// how many (the Shapley estimate's, which are sampled, not counted
	// ahead: total counts the marginal forks only).
	Progress func(done, total int)
}

// SeatCredit is one seat's counterfactual credit.
type SeatCredit struct {
	Member      string  `json:"member"`
	Agent       string  `json:"agent"`        // its agent in the session
	FirstAction uint64  `json:"first_action"` // seq of its first turn that acted
	Fork        string  `json:"fork"`         // the fork where the baseline played it from there
	ForkScore   float64 `json:"fork_score"`
	// Marginal is the session's team score minus the fork's: what the
	// seat's own play added, the other seats as in the session.
	Marginal float64  `json:"marginal"`
	Shapley  *float64 `json:"shapley,omitempty"` // the sampled Shapley estimate, with --shapley
}

// CreditFork is one fork credit made: the seats the baseline played in it.
type CreditFork struct {
	Session  string   `json:"session"`
	At       uint64   `json:"at"`       // the parent's last event it shares
	Baseline []string `json:"baseline"` // seats played by the baseline from At on
	Score    float64  `json:"score"`
}

// CreditResult is what corpsim credit reports.
type CreditResult struct {
	Session  string       `json:"session"`
	World    string       `json:"world"`
	Score    float64      `json:"score"` // the session's team score
	Baseline string       `json:"baseline"`
	Seats    []SeatCredit `json:"seats"` // by member ID
	// Shapley is the permutations sampled (0: no estimate) and ShapleySeed
	// their seed; Empty is the score with every seat played by the
	// baseline from the earliest first action (with --shapley).
	Shapley     int          `json:"shapley,omitempty"`
	ShapleySeed uint64       `json:"shapley_seed,omitempty"`
	Empty       *float64     `json:"empty_score,omitempty"`
	Forks       []CreditFork `json:"forks"` // every fork made, in the order made; each is kept in the data folder
}

// Credit forks stored session o.Session of the log in ro.Data once per
// seat (of o.Members, when given), at the seat's first action, with that seat played by the baseline
// and every other seat by its agent in the session (the built-in agents
// decide again from there, seeded as in the session), plays each fork to
// its end and reports each seat's marginal contribution: the session's
// team score minus the fork's. With Shapley > 0 it also estimates Shapley
// values from that many sampled permutations of the seats (seeded by
// Seed): each coalition not in the session is a fork at the earliest first
// action of the seats it leaves to the baseline. Forks are kept as
// sessions (Forks lists them) for corpsim diff. Only sessions whose seats
// are all built-in agents can be replayed so; others are refused.
func Credit(ctx context.Context, ro RunOptions, o CreditOptions) (*CreditResult, error) {
	if o.Baseline == "" {
		o.Baseline = "idle"
	}
	if _, err := agents.New(o.Baseline, agents.Options{}); err != nil {
		return nil, Usagef("--baseline: %v", err)
	}
	if o.Shapley < 0 {
		return nil, Usagef("--shapley must be 0 or more, got %d", o.Shapley)
	}
	log, meta, err := OpenSession(ctx, ro.Data, o.Session, ro.Logger)
	if err != nil {
		return nil, err
	}
	var scanErr error
	first, err := analyze.FirstActions(func(yield func(*events.Event) bool) {
		scanErr = log.Scan(ctx, meta.ID, 1, func(ev *events.Event) error {
			if !yield(ev) {
				return errStop
			}
			return nil
		})
	})
	log.Close()
	if err == nil && scanErr != nil && !errors.Is(scanErr, errStop) {
		err = scanErr
	}
	if err != nil {
		return nil, err
	}
	if meta.Status != events.StatusFinished {
		return nil, fmt.Errorf("session %s is %s: credit compares finished sessions (resume it first)", meta.ID, meta.Status)
	}
	seats := slices.Sorted(maps.Keys(meta.Agents))
	for _, m := range seats {
		if _, err := agents.New(meta.Agents[m], agents.Options{}); err != nil {
			return nil, Usagef("seat %s is played by %q, which credit cannot ask again: only sessions of built-in agents can be forked for credit", m, meta.Agents[m])
		}
	}
	credited := seats
	if len(o.Members) > 0 {
		if o.Shapley > 0 {
			return nil, Usagef("--shapley estimates every seat's value and needs a fork of every seat; --members credits only some")
		}
		credited = nil
		for _, m := range o.Members {
			if _, ok := meta.Agents[m]; !ok {
				return nil, Usagef("--members: session %s has no seat %q (its %d seats: %s)", meta.ID, m, len(seats), firstOf(seats, 10))
			}
			if !slices.Contains(credited, m) {
				credited = append(credited, m)
			}
		}
		slices.Sort(credited)
	}
	parent, err := Score(ctx, ro.Data, meta.ID, ro.Logger)
	if err != nil {
		return nil, err
	}
	res := &CreditResult{Session: meta.ID, World: meta.World, Score: parent.Score.TeamScore, Baseline: o.Baseline, Forks: []CreditFork{}}

	if ro.Bus == nil {
		srv, err := natsserver.Start(natsserver.Options{Logger: ro.Logger})
		if err != nil {
			return nil, err
		}
		defer srv.Shutdown()
		ro.Bus = srv
	}
	// at is where a coalition's fork starts: before the first action of
	// the earliest of the seats the baseline plays (a seat that never had
	// a turn: from the start).
	at := func(out []string) uint64 {
		a := uint64(0)
		for _, m := range out {
			f := first[m]
			if f < 2 {
				f = 2
			}
			if a == 0 || f-1 < a {
				a = f - 1
			}
		}
		return a
	}
	all := analyze.Coalition(seats)
	forkOf := map[string]string{} // coalition -> its fork
	value := func(in analyze.Coalition) (float64, error) {
		if in.Key() == all.Key() {
			return res.Score, nil
		}
		var out []string
		spec := make([]string, 0, len(seats))
		for _, m := range seats {
			agent := meta.Agents[m]
			if !slices.Contains(in, m) {
				agent = o.Baseline
				out = append(out, m)
			}
			spec = append(spec, m+"="+agent)
		}
		r := ro
		r.Agents = strings.Join(spec, ",")
		fm, fr, err := Fork(ctx, r, ForkOptions{Parent: meta.ID, At: at(out)})
		if err != nil {
			return 0, fmt.Errorf("fork of %s at %d with %s played by %s: %w", meta.ID, at(out), strings.Join(out, ", "), o.Baseline, err)
		}
		if err := fr.Err(); err != nil {
			return 0, err
		}
		res.Forks = append(res.Forks, CreditFork{Session: fm.ID, At: at(out), Baseline: out, Score: fr.Score.TeamScore})
		forkOf[in.Key()] = fm.ID
		if o.Progress != nil {
			o.Progress(len(res.Forks), len(credited))
		}
		return fr.Score.TeamScore, nil
	}
	// Each seat's marginal fork: every seat but it as in the session. The
	// Shapley estimate asks the same coalitions again from its cache.
	cache := map[string]float64{}
	cached := func(c analyze.Coalition) (float64, error) {
		if x, ok := cache[c.Key()]; ok {
			return x, nil
		}
		x, err := value(c)
		if err == nil {
			cache[c.Key()] = x
		}
		return x, err
	}
	for _, m := range credited {
		var in analyze.Coalition
		for _, s := range seats {
			if s != m {
				in = append(in, s)
			}
		}
		score, err := cached(in)
		if err != nil {
			return nil, err
		}
		res.Seats = append(res.Seats, SeatCredit{Member: m, Agent: meta.Agents[m], FirstAction: first[m], Fork: forkOf[in.Key()], ForkScore: score,
			Marginal: round6(res.Score - score)})
	}
	if o.Shapley > 0 {
		sh, err := analyze.ShapleyEstimate(seats, o.Shapley, o.Seed, cached)
		if err != nil {
			return nil, err
		}
		for i := range res.Seats {
			x := sh[res.Seats[i].Member]
			res.Seats[i].Shapley = &x
		}
		empty, err := cached(nil)
		if err != nil {
			return nil, err
		}
		res.Shapley, res.ShapleySeed, res.Empty = o.Shapley, o.Seed, &empty
	}
	return res, nil
}

var errStop = errors.New("app: stop")

// firstOf lists the first n of names, and how many more there are.
func firstOf(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
