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

// The binary record a format-5 state chains a retiring ticket into its
// digest by commits to every field the ticket's snapshot lists: changing
// any one of the Task's or its definition's fields changes the record, and
// strings are length-prefixed, so that moving bytes from one to the next
// does too.
func TestRecordCoversEveryField(t *testing.T) {
	base := func() *Task {
		return &Task{made: true, Spec: &worlds.Task{ID: "t-1", Title: "Ticket", Role: "server", Effort: 3600, Value: 1.5,
			Skill: "s", Priority: 2, NPC: "n"}, ID: "t-1", Kind: KindTicket, Queue: "desk", Team: "desk",
			Created: 10, Deadline: 20, Effort: 3600, Value: 1.5, Priority: 2, Arrival: "a", Status: StatusDone,
			Assignee: "s01", Spent: 3600, DoneAt: 30, DoneBy: "s01", DoneSeq: 7}
	}
	want := base().appendRecord(nil)
	// mutate sets field f of v (a struct) to a value different from its own.
	mutate := func(f reflect.Value) bool {
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Int, reflect.Int64:
			f.SetInt(f.Int() + 1)
		case reflect.Uint64:
			f.SetUint(f.Uint() + 1)
		case reflect.Float64:
			f.SetFloat(f.Float() + 0.25)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf("d")))
		case reflect.Pointer:
			if !f.IsNil() {
				return false // the definition: its fields are mutated one by one
			}
			f.Set(reflect.New(f.Type().Elem()))
		default:
			return false
		}
		return true
	}
	for _, target := range []string{"task", "def"} {
		typ := reflect.TypeOf(Task{})
		if target == "def" {
			typ = reflect.TypeOf(worlds.Task{})
		}
		for i := range typ.NumField() {
			sf := typ.Field(i)
			if !sf.IsExported() || sf.Name == "Def" {
				continue // unexported fields are no part of the snapshot; Def is its decoding carrier
			}
			task := base()
			v := reflect.ValueOf(task).Elem()
			if target == "def" {
				v = reflect.ValueOf(task.Spec).Elem()
			}
			if !mutate(v.Field(i)) {
				continue
			}
			if got := task.appendRecord(nil); bytes.Equal(got, want) {
				t.Errorf("%s.%s changed and the record did not", target, sf.Name)
			}
		}
	}
	a, b := base(), base()
	a.Queue, a.Team = "desk", "xdesk"
	b.Queue, b.Team = "deskx", "desk"
	if bytes.Equal(a.appendRecord(nil), b.appendRecord(nil)) {
		t.Error("bytes moved from one string to the next left the record unchanged")
	}
	unmade := base()
	unmade.made = false
	if bytes.Equal(unmade.appendRecord(nil), want) {
		t.Error("a task whose snapshot lists no def has the record of one that does")
	}
}
