package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/events"
)

func TestNewID(t *testing.T) {
	entropy := func(key [32]byte, seq uint64) []byte {
		e := events.IDEntropy(key, seq)
		return e[:]
	}
	tests := []struct {
		name     string
		start    int64
		simTime  int64
		seq      uint64
		wantTime uint64
	}{
		{"start", 1_700_000_000_000, 0, 1, 1_700_000_000_000},
		{"later", 1_700_000_000_000, 90_000, 7, 1_700_000_090_000},
		{"before the epoch clamps to 0", 1000, -5000, 2, 0},
		{"past the ULID range clamps to max", int64(ulid.MaxTime()), 1, 3, ulid.MaxTime()},
		{"int64 overflow clamps to max", math.MaxInt64, math.MaxInt64, 4, ulid.MaxTime()},
		{"int64 underflow clamps to 0", math.MinInt64, math.MinInt64, 5, 0},
		{"max seq", 0, 0, math.MaxUint64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := events.NewID(testKey, tt.start, tt.simTime, tt.seq)
			if got := id.Time(); got != tt.wantTime {
				t.Errorf("Time: got %d, want %d", got, tt.wantTime)
			}
			if got, want := id.Entropy(), entropy(testKey, tt.seq); !bytes.Equal(got, want) {
				t.Errorf("Entropy: got %x, want %x", got, want)
			}
			if again := events.NewID(testKey, tt.start, tt.simTime, tt.seq); again != id {
				t.Errorf("second call: got %s, want %s", again, id)
			}
		})
	}
	t.Run("entropy is unique per seq and well spread", func(t *testing.T) {
		seen := map[[8]byte]bool{}
		var ones [80]int
		const n = 200_000
		for seq := uint64(1); seq <= n; seq++ {
			e := events.IDEntropy(testKey, seq)
			var first [8]byte
			copy(first[:], e[:8])
			if seen[first] {
				t.Fatalf("IDEntropy: seq %d repeats an earlier seq's entropy", seq)
			}
			seen[first] = true
			for i := range 80 {
				ones[i] += int(e[i/8]>>(7-i%8)) & 1
			}
		}
		for i, c := range ones {
			if c < n*45/100 || c > n*55/100 {
				t.Errorf("entropy bit %d is set in %d of %d IDs, want about half", i, c, n)
			}
		}
	})
	t.Run("distinct", func(t *testing.T) {
		other := testKey
		other[31] = 1
		a := events.NewID(testKey, 0, 0, 1)
		for _, b := range []ulid.ULID{events.NewID(testKey, 0, 0, 2), events.NewID(other, 0, 0, 1), events.NewID(testKey, 0, 1, 1)} {
			if a == b {
				t.Fatalf("NewID: got %s for different inputs, want distinct IDs", a)
			}
		}
	})
}

func TestEventJSON(t *testing.T) {
	id := events.NewID(testKey, 1_700_000_000_000, 0, 1)
	tests := []struct {
		name string
		e    events.Event
		want string
	}{
		{"full", events.Event{ID: id, Session: "s1", Seq: 2, Time: 60, Type: "task.claimed", Actor: "alice", Cause: 1,
			Payload: json.RawMessage(`{"task":"t1"}`)},
			`{"id":"` + id.String() + `","session":"s1","seq":2,"time":60,"type":"task.claimed","actor":"alice","cause":1,"payload":{"task":"t1"}}`},
		{"omitted", events.Event{ID: id, Session: "s1", Seq: 1, Type: "tick"},
			`{"id":"` + id.String() + `","session":"s1","seq":1,"time":0,"type":"tick"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("Marshal:\ngot  %s\nwant %s", b, tt.want)
			}
			if p, err := json.Marshal(&tt.e); err != nil || string(p) != tt.want {
				t.Fatalf("Marshal(pointer): got %s, %v; want %s", p, err, tt.want)
			}
			var got events.Event
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(got, tt.e) {
				t.Fatalf("Unmarshal:\ngot  %+v\nwant %+v", got, tt.e)
			}
		})
	}
	t.Run("null payload", func(t *testing.T) {
		var got events.Event
		if err := json.Unmarshal([]byte(`{"id":"`+id.String()+`","seq":1,"type":"t","payload":null}`), &got); err != nil {
			t.Fatal(err)
		}
		if got.Payload != nil {
			t.Fatalf("Payload: got %q, want nil", got.Payload)
		}
	})
	for _, bad := range []string{`{"id":"nope","seq":1}`, `{"id":"` + strings.Repeat("Z", 26) + `"}`, `{"seq":"x"}`, `[]`} {
		t.Run("bad "+bad, func(t *testing.T) {
			var got events.Event
			if err := json.Unmarshal([]byte(bad), &got); err == nil {
				t.Fatalf("Unmarshal(%s): got nil error, want one", bad)
			}
		})
	}
}

func TestValidateBatch(t *testing.T) {
	ok := func(seq uint64) events.Event {
		return events.Event{ID: events.NewID(testKey, 0, 0, seq), Seq: seq, Type: "t", Payload: json.RawMessage(` {"a":1} `)}
	}
	tests := []struct {
		name    string
		last    uint64
		batch   []events.Event
		wantErr string // "" for valid
	}{
		{"valid", 4, []events.Event{ok(5), ok(6)}, ""},
		{"session set", 0, []events.Event{func() events.Event { e := ok(1); e.Session = "s"; return e }()}, ""},
		{"cause earlier", 4, []events.Event{func() events.Event { e := ok(5); e.Cause = 4; return e }()}, ""},
		{"empty", 0, nil, "empty batch"},
		{"gap", 4, []events.Event{ok(5), ok(7)}, "event 1 has seq 7, want 6"},
		{"wrong start", 4, []events.Event{ok(4)}, "event 0 has seq 4, want 5"},
		{"overflow", math.MaxUint64, []events.Event{ok(0)}, "overflow"},
		{"other session", 0, []events.Event{func() events.Event { e := ok(1); e.Session = "t"; return e }()}, `names session "t"`},
		{"zero id", 0, []events.Event{{Seq: 1, Type: "t"}}, "zero ID"},
		{"empty type", 0, []events.Event{func() events.Event { e := ok(1); e.Type = ""; return e }()}, "empty type"},
		{"bad utf-8 type", 0, []events.Event{func() events.Event { e := ok(1); e.Type = "\xc3"; return e }()}, "type is not valid UTF-8"},
		{"self cause", 0, []events.Event{func() events.Event { e := ok(1); e.Cause = 1; return e }()}, "cause 1"},
		{"payload string", 0, []events.Event{func() events.Event { e := ok(1); e.Payload = json.RawMessage(`"x"`); return e }()}, "not a JSON object"},
		{"payload invalid", 0, []events.Event{func() events.Event { e := ok(1); e.Payload = json.RawMessage(`{`); return e }()}, "not a JSON object"},
		{"payload two objects", 0, []events.Event{func() events.Event { e := ok(1); e.Payload = json.RawMessage(`{}{}`); return e }()}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := events.ValidateBatch("s", tt.last, tt.batch)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateBatch: got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, events.ErrBadBatch) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateBatch: got %v, want an ErrBadBatch containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidSessionID(t *testing.T) {
	tests := []struct {
		id    string
		valid bool
	}{
		{"s1", true},
		{"A-b_9", true},
		{strings.Repeat("x", 64), true},
		{"", false},
		{strings.Repeat("x", 65), false},
		{"a/b", false},
		{"a.b", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.id), func(t *testing.T) {
			err := events.ValidSessionID(tt.id)
			if got := err == nil; got != tt.valid {
				t.Fatalf("ValidSessionID(%q): got %v, want valid=%v", tt.id, err, tt.valid)
			}
			if err != nil && !errors.Is(err, events.ErrBadSession) {
				t.Fatalf("ValidSessionID(%q): got %v, want an error wrapping ErrBadSession", tt.id, err)
			}
		})
	}
}

func TestSessionMetaValidate(t *testing.T) {
	tests := []struct {
		name  string
		m     events.SessionMeta
		valid bool
	}{
		{"plain", events.SessionMeta{ID: "s", Status: events.StatusRunning}, true},
		{"fork", events.SessionMeta{ID: "f", Parent: "s", ForkSeq: 9, Status: events.StatusFinished}, true},
		{"fork at zero", events.SessionMeta{ID: "f", Parent: "s", Status: events.StatusFailed}, true},
		{"bad id", events.SessionMeta{ID: "s/", Status: events.StatusRunning}, false},
		{"no status", events.SessionMeta{ID: "s"}, false},
		{"unknown status", events.SessionMeta{ID: "s", Status: "done"}, false},
		{"fork seq alone", events.SessionMeta{ID: "s", ForkSeq: 1, Status: events.StatusInterrupted}, false},
		{"bad parent", events.SessionMeta{ID: "s", Parent: "..", Status: events.StatusRunning}, false},
		{"own parent", events.SessionMeta{ID: "s", Parent: "s", Status: events.StatusRunning}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate()
			if got := err == nil; got != tt.valid {
				t.Fatalf("Validate: got %v, want valid=%v", err, tt.valid)
			}
			if err != nil && !errors.Is(err, events.ErrBadSession) {
				t.Fatalf("Validate: got %v, want an error wrapping ErrBadSession", err)
			}
		})
	}
}

func TestMetaCodec(t *testing.T) {
	m := events.SessionMeta{
		ID: "s1", World: "startup", WorldHash: strings.Repeat("0f", 32), Seed: math.MaxUint64,
		Agents:  map[string]string{"zed": "llm", "amy": "greedy"},
		Created: "2025-06-01T12:00:00Z", Parent: "s0", ForkSeq: 12, Status: events.StatusFinished,
		LastSeq: 99, StateHash: "abc",
	}
	b, err := events.EncodeMeta(&m)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"id":"s1","world":"startup","world_hash":"` + "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f" +
		`","seed":18446744073709551615,"agents":{"amy":"greedy","zed":"llm"},"created":"2025-06-01T12:00:00Z",` +
		`"parent":"s0","fork_seq":12,"status":"finished","last_seq":99,"state_hash":"abc"}`
	if got := string(b[:len(b)-4]); got != wantJSON {
		t.Fatalf("EncodeMeta JSON:\ngot  %s\nwant %s", got, wantJSON)
	}
	var got events.SessionMeta
	if err := events.DecodeMeta(b, &got); err != nil {
		t.Fatalf("DecodeMeta: %v", err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("DecodeMeta:\ngot  %+v\nwant %+v", got, m)
	}
	for i := range 8 * len(b) {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		if err := events.DecodeMeta(c, &got); !errors.Is(err, events.ErrCorrupt) {
			t.Fatalf("DecodeMeta with bit %d flipped: got %v, want an error wrapping ErrCorrupt", i, err)
		}
	}
	for n := range len(b) {
		if err := events.DecodeMeta(b[:n], &got); !errors.Is(err, events.ErrCorrupt) {
			t.Fatalf("DecodeMeta of %d of %d bytes: got %v, want an error wrapping ErrCorrupt", n, len(b), err)
		}
	}
}

func TestSessionMetaClone(t *testing.T) {
	m := events.SessionMeta{ID: "s", Agents: map[string]string{"a": "x"}}
	c := m.Clone()
	c.Agents["a"] = "y"
	if m.Agents["a"] != "x" {
		t.Fatalf("original Agents[a] after mutating the clone: got %q, want %q", m.Agents["a"], "x")
	}
	if n := (&events.SessionMeta{}).Clone(); n.Agents != nil {
		t.Fatalf("Clone of nil Agents: got %v, want nil", n.Agents)
	}
}

func TestCorruptError(t *testing.T) {
	var decodeErr error
	{
		var e events.Event
		decodeErr = events.Decode([]byte{9}, &e)
	}
	var cp events.Checkpoint
	checkpointErr := events.DecodeCheckpoint([]byte{9}, &cp)
	tests := []struct {
		name string
		err  *events.CorruptError
		want string
	}{
		{"event", &events.CorruptError{Session: "s1", Seq: 7, Err: decodeErr},
			"events: corrupt event in session s1 at seq 7: truncated: 1 bytes, need at least 27"},
		{"meta", &events.CorruptError{Session: "s1", Err: errors.New("bad json")},
			"events: corrupt metadata of session s1: bad json"},
		{"no reason", &events.CorruptError{Session: "s1", Seq: 1},
			"events: corrupt event in session s1 at seq 1: unknown reason"},
		{"checkpoint", &events.CorruptError{Session: "s1", Seq: 7, Kind: events.CorruptCheckpoint, Err: checkpointErr},
			"events: corrupt checkpoint of session s1 at seq 7: truncated checkpoint: 1 bytes, need at least 7"},
		{"checkpoint of unknown seq", &events.CorruptError{Session: "s1", Kind: events.CorruptCheckpoint, Err: errors.New("malformed key")},
			"events: corrupt checkpoint of session s1: malformed key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Fatalf("Error: got %q, want %q", got, tt.want)
			}
			wrapped := fmt.Errorf("replay: %w", tt.err)
			if !errors.Is(wrapped, events.ErrCorrupt) {
				t.Fatal("errors.Is(wrapped, ErrCorrupt): got false, want true")
			}
			var ce *events.CorruptError
			if !errors.As(wrapped, &ce) || ce != tt.err {
				t.Fatal("errors.As(wrapped, *CorruptError): did not find it")
			}
			if errors.Is(wrapped, events.ErrConflict) {
				t.Fatal("errors.Is(wrapped, ErrConflict): got true, want false")
			}
		})
	}
}
