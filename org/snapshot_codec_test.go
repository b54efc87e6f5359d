package org

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

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
				spec := &worlds.Task{ID: randString(r), Title: randString(r), Value: randFloat(r), Effort: clock.Duration(r.Int64N(1 << 30))}
				switch r.IntN(4) {
				case 0:
					spec.Info = &worlds.Info{From: randString(r), Topic: randString(r)}
				case 1:
					spec.Deps = []string{randString(r)}
				}
				s.list = append(s.list, &Task{made: true, Spec: spec, ID: spec.ID, Kind: KindTicket, ord: len(s.list) + i})
			}
			for _, tk := range s.Tasks() {
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
			// Each task as encoding/json encodes its fields by reflection
			// (with a made task's definition as the Def field)…
			for _, tk := range s.Tasks() {
				want, err := json.Marshal(tk.reflected())
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := tk.appendJSON(nil); !ok || !bytes.Equal(got, want) {
					t.Fatalf("%s round %d: task %s encodes by hand as\n%s\nby reflection as\n%s", name, round, tk.ID, got, want)
				}
			}
			// …and the whole snapshot as encoding/json encodes it.
			want, err := json.Marshal(s.snap())
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Snapshot(); !bytes.Equal(got, want) {
				k := 0
				for k < len(got) && k < len(want) && got[k] == want[k] {
					k++
				}
				t.Fatalf("%s round %d: Snapshot differs from json.Marshal at %d\n got %.300s\nwant %.300s", name, round, k, got[max(k-100, 0):], want[max(k-100, 0):])
			}
			if got := s.Hash(); got != sha256.Sum256(want) {
				t.Fatalf("%s round %d: Hash is not the SHA-256 of the snapshot", name, round)
			}
			for _, tk := range s.Tasks() {
				if tk.Def != nil {
					t.Fatalf("%s round %d: task %s keeps a second copy of its definition", name, round, tk.ID)
				}
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
		spec := &worlds.Task{ID: randString(r) + strconv.Itoa(i), Title: randString(r), Value: randFloat(r)}
		s.list = append(s.list, &Task{made: true, Spec: spec, ID: spec.ID, Kind: KindTicket, Queue: randString(r), ord: i})
	}
	if got, want := s.Hash(), sha256.Sum256(s.Snapshot()); got != want {
		t.Fatal("Hash of 3,000 tasks is not the SHA-256 of the snapshot")
	}
	s.Tasks()[2999].Spec.Info = &worlds.Info{From: "x"}
	if got, want := s.Hash(), sha256.Sum256(s.Snapshot()); got != want {
		t.Fatal("Hash with a ticket that needs information is not the SHA-256 of the snapshot")
	}
	s.Tasks()[2999].Value = math.NaN() // the last block falls back to encoding/json, which refuses it
	if _, err := hashSnapshot(s.snap()); err == nil {
		t.Fatal("a NaN value hashed")
	}
	s.list = nil
	if got, want := s.Hash(), sha256.Sum256(s.Snapshot()); got != want {
		t.Fatal("Hash without tasks is not the SHA-256 of the snapshot")
	}
}

// A snapshot keeps a ticket's definition under the keys it always had, the
// Go field names of the world's task struct, whatever that struct becomes:
// the state hashes recorded in existing logs depend on these bytes.
func TestTicketDefKeepsItsKeys(t *testing.T) {
	spec := &worlds.Task{ID: "t-1", Title: "Refund", Role: "support", Effort: 5, Value: 1.5, Purchase: 7, Chain: "c", Skill: "s", Priority: 2,
		Info: &worlds.Info{From: "ops", Topic: "order"}}
	want := `{"ID":"t-1","Title":"Refund","Role":"support","Effort":5,"Deps":null,"Value":1.5,"Purchase":7,"Chain":"c","Skill":"s","Priority":2,"Info":{"From":"ops","Topic":"order"}}`
	def := ticketDefOf(spec)
	if got := string(appendDef(nil, spec)); got != want {
		t.Errorf("appendDef:\n got %s\nwant %s", got, want)
	}
	if got, _ := json.Marshal(def); string(got) != want {
		t.Errorf("json.Marshal:\n got %s\nwant %s", got, want)
	}
	if back := def.task(); !reflect.DeepEqual(back, spec) {
		t.Errorf("task(): got %+v, want %+v", back, spec)
	}
}

var tricky = []string{"", "t-1", "a\"b", `back\slash`, "<html>&", "tab\tnew\nline", "\x00\x1f", "é ü 日本", "\u2028\u2029", "bad\xffutf8", "emoji 🙂"}

var floats = []float64{0, 1, -1, 0.5, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, -2.5e-10, 123456789.125, math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64}

func randString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return tricky[r.IntN(len(tricky))]
	}
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(0x20 + r.IntN(0x5f))
	}
	return string(b)
}

func randFloat(r *rand.Rand) float64 {
	if r.IntN(2) == 0 {
		return floats[r.IntN(len(floats))]
	}
	return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(50)-25))
}

// Every ticket allocates a Task and its Spec; a session of 200,000 tickets
// makes 200,000 of each. The Task is kept in the runtime's 384-byte size
// class (the next is 416): a field added without room fails this test, to
// be placed in padding or weighed.
func TestTaskStaysInItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Task{}); n > 384 {
		t.Fatalf("a Task is %d bytes, over the 384-byte size class", n)
	}
}
