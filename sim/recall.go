package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
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
// the views taken between. RecallFrom starts from a checkpoint that kept
// what the agents remembered.
func Recall(ctx context.Context, log Scanner, session string, upto uint64, base Config, omits map[string]org.Omit, show func(Shown) error) (int, error) {
	return recall(ctx, log, session, nil, upto, base, omits, nil, show)
}

// ErrNoMemory is RecallFrom's error when it cannot recall from the
// checkpoint it is given: the checkpoint keeps no memory of the agents,
// take refused it (ErrNoMemory from take), or a turn after the
// checkpoint saw a state before it. Nothing was shown and take was not
// called, or refused: Recall from the first event shows the same past.
var ErrNoMemory = errors.New("sim: the agents cannot be recalled from this checkpoint")

// RecallFrom is Recall from checkpoint cp of session (taken at or before
// upto): take is given what the agents remembered at cp (the memory
// CheckpointWith kept), then show is called with the turns after cp.Seq
// only, on states rebuilt from the checkpoint. It costs the events since
// the checkpoint, where Recall costs every event up to upto. It returns
// an error wrapping ErrNoMemory, before take or show is called, when it
// cannot (see ErrNoMemory), and take's own ErrNoMemory when take refuses
// the memory.
func RecallFrom(ctx context.Context, log Scanner, session string, cp events.Checkpoint, upto uint64, base Config, omits map[string]org.Omit,
	take func(memory json.RawMessage) error, show func(Shown) error) (int, error) {
	if cp.Seq == 0 || cp.Seq > upto {
		return 0, fmt.Errorf("%w: the checkpoint at seq %d is not one up to seq %d", ErrNoMemory, cp.Seq, upto)
	}
	return recall(ctx, log, session, &cp, upto, base, omits, take, show)
}

// recall is Recall, from checkpoint cp when it is not nil (RecallFrom).
func recall(ctx context.Context, log Scanner, session string, cp *events.Checkpoint, upto uint64, base Config, omits map[string]org.Omit,
	take func(memory json.RawMessage) error, show func(Shown) error) (int, error) {
	if len(omits) == 0 || upto == 0 {
		return 0, nil
	}
	type asked struct {
		seen, seq uint64
		at        clock.Time // the turn's: when it was asked
		member    string
		actions   []org.Action
	}
	from := uint64(1)
	if cp != nil {
		// Its snapshot names the field whenever it kept a memory (the
		// name may also be found elsewhere in it): a checkpoint without
		// one is not restored for nothing.
		if !bytes.Contains(cp.Data, []byte(`"memory":`)) {
			return 0, fmt.Errorf("%w: the checkpoint at seq %d keeps no memory of the agents", ErrNoMemory, cp.Seq)
		}
		from = cp.Seq + 1
	}
	var turns []asked
	errStop := errors.New("stop")
	err := log.Scan(ctx, session, from, func(ev *events.Event) error {
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
		if cp != nil && t.Seen < cp.Seq {
			return fmt.Errorf("%w: the turn at seq %d saw event %d, before the checkpoint at %d", ErrNoMemory, ev.Seq, t.Seen, cp.Seq)
		}
		turns = append(turns, asked{seen: t.Seen, seq: ev.Seq, at: clock.Time(ev.Time), member: ev.Actor, actions: t.Actions})
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	// Turns in the order of what they saw, and in the log's order within
	// one state (a round's turns, recorded one after another).
	slices.SortStableFunc(turns, func(a, b asked) int { return cmp.Compare(a.seen, b.seen) })
	base.ApplyOnly = true
	r := rebuilder{session: session, base: base}
	if cp != nil {
		if err := r.restore(ctx, log, *cp); err != nil {
			// A checkpoint only saves work: the first event is always there.
			return 0, fmt.Errorf("%w: %w", ErrNoMemory, err)
		}
		mem := r.e.Memory()
		if len(mem) == 0 {
			return 0, fmt.Errorf("%w: the checkpoint at seq %d keeps no memory of the agents", ErrNoMemory, cp.Seq)
		}
		if err := take(mem); err != nil {
			return 0, err
		}
	}
	if len(turns) == 0 {
		return 0, nil
	}
	next := 0
	showSeen := func(seq uint64) error {
		for ; next < len(turns) && turns[next].seen == seq; next++ {
			t := turns[next]
			o := r.e.observeAt(t.member, omits[t.member], t.at)
			if err := show(Shown{Seq: t.seq, Observation: o, Recorded: t.actions}); err != nil {
				return err
			}
		}
		return nil
	}
	if cp != nil {
		// The turns asked when the checkpoint was taken saw its state.
		if err := showSeen(cp.Seq); err != nil {
			return next, err
		}
	}
	last := turns[len(turns)-1].seen
	if next < len(turns) {
		err = log.Scan(ctx, session, from, func(ev *events.Event) error {
			if ev.Seq > last {
				return errStop
			}
			if err := r.apply(ev); err != nil {
				return err
			}
			if err := showSeen(ev.Seq); err != nil {
				return err
			}
			return ctx.Err()
		})
		if err != nil && !errors.Is(err, errStop) {
			return next, err
		}
	}
	if next < len(turns) {
		return next, fmt.Errorf("sim: session %s: the turn at seq %d saw event %d, which the log does not have", session, turns[next].seq, turns[next].seen)
	}
	return next, nil
}
