package org_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/sim/workers"
)

// TestRetiredDigestIsTheChainOfEveryTicket plays the bench desk for 6,000
// tickets, keeping the retired tickets aside, and holds the retired
// digest, chained by batches on the driver's sequencer (a workers.Chain),
// to the chain of every retired ticket's record hashed one by one in
// retirement order: at the end, and at snapshots taken mid-batch along the
// way (which wait for the batches in flight). The same session played
// without those snapshots, and without a sequencer, ends with the same
// state hash.
func TestRetiredDigestIsTheChainOfEveryTicket(t *testing.T) {
	w, _ := simtest.DeskWorld(t, 6000)
	play := func(look bool, seq func() org.Sequencer) (hash string, looks int) {
		e, err := sim.New(sim.Config{World: w, Seed: 3, Session: "s", NewSequencer: seq})
		if err != nil {
			t.Fatal(err)
		}
		st := e.State()
		st.KeepRetired()
		e.Start()
		batches := 0
		err = sim.Play(e, func([]events.Event) bool {
			if batches++; look && batches%97 == 0 {
				r := st.Retired()
				if want := chainOf(st.RetiredKept()); r.N != len(st.RetiredKept()) || r.Digest != want {
					t.Fatalf("at seq %d: %d retired, digest %s; the chain of the %d kept: %s", st.LastSeq, r.N, r.Digest, len(st.RetiredKept()), want)
				}
				looks++
			}
			return true
		}, simtest.Mixed(3, 1), 0)
		if err != nil {
			t.Fatal(err)
		}
		r := st.Retired()
		if r.N < 5000 {
			t.Fatalf("%d tickets retired: too few for batches of the chain", r.N)
		}
		if want := chainOf(st.RetiredKept()); r.Digest != want {
			t.Fatalf("at the end: digest %s; the chain of the %d kept: %s", r.Digest, r.N, want)
		}
		return e.StateHash(), looks
	}
	chain := func() org.Sequencer { return workers.NewChain() }
	looked, looks := play(true, chain)
	if looks < 20 {
		t.Fatalf("%d looks mid-session: too few", looks)
	}
	if plain, _ := play(false, chain); plain != looked {
		t.Fatalf("state hash %s with snapshots along the way, %s without", looked, plain)
	}
	if at, _ := play(false, nil); at != looked {
		t.Fatalf("state hash %s chained on the sequencer, %s hashed at once", looked, at)
	}
}

// chainOf is the retired digest of tickets retired in this order, hashed
// one by one.
func chainOf(kept [][]byte) string {
	var d [32]byte
	for _, rec := range kept {
		d = sha256.Sum256(append(d[:], rec...))
	}
	return hex.EncodeToString(d[:])
}
