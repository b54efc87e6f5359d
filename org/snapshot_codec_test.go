package org

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/worlds"
)

// The hand-written snapshot must be exactly json.Marshal's: the state hash
// of old logs and checkpoints depends on it.
func TestSnapshotMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, name := range worlds.Names() {
		w, err := worlds.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 20 {
			s := New(w)
			for i := range r.IntN(30) {
				def := &worlds.Task{ID: randString(r), Title: randString(r), Value: randFloat(r), Effort: clock.Duration(r.Int64N(1 << 30))}
				if r.IntN(4) == 0 {
					def.Info = &worlds.Info{}
				}
				s.Tasks = append(s.Tasks, &Task{Def: def, Spec: def, ID: def.ID, Kind: KindTicket, ord: len(s.Tasks) + i})
			}
			for _, tk := range s.Tasks {
				if r.IntN(2) == 0 {
					continue
				}
				tk.Status, tk.Assignee, tk.Value = randString(r), randString(r), randFloat(r)
				tk.Hidden, tk.Breached = r.IntN(2) == 0, r.IntN(2) == 0
				tk.Priority, tk.Arrival, tk.Request, tk.DoneBy = r.IntN(5)-2, randString(r), randString(r), randString(r)
				tk.Spent, tk.WorkUntil, tk.Stint = clock.Duration(r.Int64N(99)), clock.Time(r.Int64N(3)), clock.Duration(r.Int64N(3))
				tk.DoneAt, tk.DoneSeq, tk.Created, tk.Deadline = clock.Time(r.Int64N(3)), r.Uint64N(3), clock.Time(r.Int64N(1<<40)), clock.Time(r.Int64N(2))
				tk.Project, tk.Queue, tk.Team = randString(r), randString(r), randString(r)
			}
			if round%5 == 0 && len(s.Members) > 0 {
				s.Members[0].ID = `"tasks":null` // a string cannot fool the splice
			}
			want, err := json.Marshal(s.snap())
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Snapshot(); !bytes.Equal(got, want) {
				t.Fatalf("%s round %d: Snapshot differs from json.Marshal\n got %.300s\nwant %.300s", name, round, got, want)
			}
			if got := s.Hash(); got != sha256.Sum256(want) {
				t.Fatalf("%s round %d: Hash is not the SHA-256 of the snapshot", name, round)
			}
		}
	}
}

// Hash streams the tasks into the digest a block at a time; across many
// blocks, with and without a task that only encoding/json may encode, it
// is still the digest of the whole snapshot.
func TestHashOfManyTasksIsSnapshotDigest(t *testing.T) {
	w, err := worlds.Shipped("support-desk")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	s := New(w)
	for i := range 3000 {
		def := &worlds.Task{ID: randString(r) + strconv.Itoa(i), Title: randString(r), Value: randFloat(r)}
		s.Tasks = append(s.Tasks, &Task{Def: def, Spec: def, ID: def.ID, Kind: KindTicket, Queue: randString(r), ord: i})
	}
	if got, want := s.Hash(), sha256.Sum256(s.Snapshot()); got != want {
		t.Fatal("Hash of 3,000 tasks is not the SHA-256 of the snapshot")
	}
	s.Tasks[2999].Def.Info = &worlds.Info{} // the last block falls back to encoding/json
	if got, want := s.Hash(), sha256.Sum256(s.Snapshot()); got != want {
		t.Fatal("Hash with a fallback task is not the SHA-256 of the snapshot")
	}
	s.Tasks = nil
	if got, want := s.Hash(), sha256.Sum256(s.Snapshot()); got != want {
		t.Fatal("Hash without tasks is not the SHA-256 of the snapshot")
	}
}
