package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// Shown is a past turn as its member was asked it: the observation it was
// given and the actions the log recorded as its answer.
type Shown struct {
	Seq         uint64 // the turn event's
	Observation org.Observation
	Recorded    []org.Action
}

// Recall calls show, in the log's order, with every turn session recorded
// up to event upto of the members omits names (each observation without the
// parts its member's omit leaves out, as the member was asked). It returns
// how many turns it showed.
//
// A session resumed, forked or handed to another worker is played by
// agents made anew: an agent that remembers what it was shown (a rate it
// estimates, what colleagues told it) would decide otherwise than the one
// it replaces. Recall gives it that past. Each turn's observation is the
// member's view of the state after the event the turn saw
// (payload.Turn.Seen), at the turn's time: all turns of a round see that
// state, and a view is the state's and its instant's alone. It reads the
// log twice: the turns first, then every event up to the last one seen,
// re-applied to an engine that keeps no timers (Config.ApplyOnly), with
// the views taken between.
func Recall(ctx context.Context, log Scanner, session string, upto uint64, base Config, omits map[string]org.Omit, show func(Shown) error) (int, error) {
	if len(omits) == 0 || upto == 0 {
		return 0, nil
	}
	type asked struct {
		seen, seq uint64
		at        clock.Time // the turn's: when it was asked
		member    string
		actions   []org.Action
	}
	var turns []asked
	errStop := errors.New("stop")
	err := log.Scan(ctx, session, 1, func(ev *events.Event) error {
		if ev.Seq > upto {
			return errStop
		}
		if ev.Type != payload.EvTurn {
			return nil
		}
		if _, ok := omits[ev.Actor]; !ok {
			return nil
		}
		t, err := payload.As[payload.Turn](ev, payload.Decode(ev)) // without reflection
		if err != nil {
			return &events.CorruptError{Session: session, Seq: ev.Seq, Err: err}
		}
		turns = append(turns, asked{seen: t.Seen, seq: ev.Seq, at: clock.Time(ev.Time), member: ev.Actor, actions: t.Actions})
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	if len(turns) == 0 {
		return 0, nil
	}
	// Turns in the order of what they saw, and in the log's order within
	// one state (a round's turns, recorded one after another).
	slices.SortStableFunc(turns, func(a, b asked) int { return cmp.Compare(a.seen, b.seen) })
	last := turns[len(turns)-1].seen
	base.ApplyOnly = true
	r := rebuilder{session: session, base: base}
	next := 0
	err = log.Scan(ctx, session, 1, func(ev *events.Event) error {
		if ev.Seq > last {
			return errStop
		}
		if err := r.apply(ev); err != nil {
			return err
		}
		for ; next < len(turns) && turns[next].seen == ev.Seq; next++ {
			t := turns[next]
			o := r.e.observeAt(t.member, omits[t.member], t.at)
			if err := show(Shown{Seq: t.seq, Observation: o, Recorded: t.actions}); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
	if err != nil && !errors.Is(err, errStop) {
		return next, err
	}
	if next < len(turns) {
		return next, fmt.Errorf("sim: session %s: the turn at seq %d saw event %d, which the log does not have", session, turns[next].seq, turns[next].seen)
	}
	return next, nil
}
