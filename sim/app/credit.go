package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/workers"
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
	// Parallel is how many forks are played at once (0: one per core).
	// Each is a whole session: a 2,000-seat one holds its state per fork.
	// The Shapley estimate's forks are played one at a time, and so are
	// all when RunOptions gives Seats, LLM or Progress (the caller's, made
	// for one session at a time). A fork that fails stops the others: those
	// under way are kept in the data folder, interrupted.
	Parallel int
	// Progress, when set, is told after each fork how many are done of
	// how many (the Shapley estimate's, which are sampled, not counted
	// ahead: total counts the marginal forks only).
	Progress func(done, total int)
}

// SeatCredit is one seat's counterfactual credit.
type SeatCredit struct {
	Member      string  `json:"member"`
	Agent       string  `json:"agent"`        // its agent in the session
	FirstAction uint64  `json:"first_action"` // seq of its first turn that acted (in a fork, after its fork point); 0 if it had no turn
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
	Forks       []CreditFork `json:"forks"` // every fork made: the seats' own in their order, then the Shapley estimate's as made; each is kept in the data folder
}

// Credit forks stored session o.Session of the log in ro.Data once per
// seat (of o.Members, when given), at the seat's first action, with that seat played by the baseline
// and every other seat by its agent in the session (the built-in agents
// decide again from there, seeded as in the session), plays each fork to
// its end (o.Parallel of them at once) and reports each seat's marginal contribution: the session's
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
	// A fork's seats are credited from its fork point on (its parent's
	// agents played the events before): their first actions are counted
	// from there.
	var scanErr error
	from := uint64(1)
	if meta.Parent != "" {
		from = meta.ForkSeq + 1
	}
	first, err := analyze.FirstActions(func(yield func(*events.Event) bool) {
		scanErr = log.Scan(ctx, meta.ID, from, func(ev *events.Event) error {
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
	// a turn: from the start), and for a session that is itself a fork
	// not before its fork point: its parent's agents played up to there,
	// not the seats credited, so the others are replayed as in the session
	// only from there.
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
		if meta.Parent != "" {
			a = max(a, meta.ForkSeq)
		}
		return a
	}
	// One store for every fork, so that they can be played at once.
	store, err := OpenLog(ctx, ro.Data, false, ro.Logger)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ro.Log = store
	// play forks the session with the seats not in coalition in played by
	// the baseline, and plays the fork to its end.
	play := func(ctx context.Context, in analyze.Coalition) (CreditFork, error) {
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
			return CreditFork{}, fmt.Errorf("fork of %s at %d with %s played by %s: %w", meta.ID, at(out), strings.Join(out, ", "), o.Baseline, err)
		}
		if err := fr.Err(); err != nil {
			return CreditFork{}, err
		}
		return CreditFork{Session: fm.ID, At: at(out), Baseline: out, Score: fr.Score.TeamScore}, nil
	}
	all := analyze.Coalition(seats)
	cache := map[string]float64{} // coalition -> its score
	made := func(in analyze.Coalition, f CreditFork) {
		res.Forks = append(res.Forks, f)
		cache[in.Key()] = f.Score
	}
	// Each seat's marginal fork, every seat but it as in the session, is
	// played beside the others (o.Parallel at once); they are listed in
	// the seats' order whatever order they end in.
	ins := make([]analyze.Coalition, len(credited))
	for i, m := range credited {
		for _, s := range seats {
			if s != m {
				ins[i] = append(ins[i], s)
			}
		}
	}
	parallel := o.Parallel
	if ro.Seats != nil || ro.LLM != nil || ro.Progress != nil {
		parallel = 1 // agents or a callback of the caller's, made for one session at a time
	}
	forks, err := playAll(ctx, ins, parallel, play, func(done int) {
		if o.Progress != nil {
			o.Progress(done, len(credited))
		}
	})
	if err != nil {
		return nil, err
	}
	for i, m := range credited {
		made(ins[i], forks[i])
		res.Seats = append(res.Seats, SeatCredit{Member: m, Agent: meta.Agents[m], FirstAction: first[m], Fork: forks[i].Session, ForkScore: forks[i].Score,
			Marginal: round6(res.Score - forks[i].Score)})
	}
	// The Shapley estimate asks for coalitions one at a time, the
	// marginal ones again from the cache.
	cached := func(in analyze.Coalition) (float64, error) {
		if in.Key() == all.Key() {
			return res.Score, nil
		}
		if x, ok := cache[in.Key()]; ok {
			return x, nil
		}
		f, err := play(ctx, in)
		if err != nil {
			return 0, err
		}
		made(in, f)
		if o.Progress != nil {
			o.Progress(len(res.Forks), len(credited))
		}
		return f.Score, nil
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

// playAll plays the forks of coalitions ins, up to parallel at once (0:
// one per core), and returns them in the order of ins; done is told how
// many have ended after each one does. The first error stops the forks
// not yet begun and cancels those under way, and is returned.
func playAll(ctx context.Context, ins []analyze.Coalition, parallel int, play func(context.Context, analyze.Coalition) (CreditFork, error), done func(int)) ([]CreditFork, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	forks := make([]CreditFork, len(ins))
	var (
		mu    sync.Mutex
		ended int
		first error
	)
	workers.ParallelN(parallel, len(ins), func(i int) {
		if ctx.Err() != nil {
			return
		}
		f, err := play(ctx, ins[i])
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = err
			cancel()
		}
		forks[i] = f
		ended++
		if err == nil {
			done(ended)
		}
	})
	if first == nil {
		first = ctx.Err()
	}
	if first != nil {
		return nil, first
	}
	return forks, nil
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
