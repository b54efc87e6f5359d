package logcore_test

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/internal/logcore"
)

func TestFindCheckpoint(t *testing.T) {
	// r: 1..20 with checkpoints 2, 5, 9, 12; p forks r at 10 and stores 3,
	// 9 (shadowing r's) and 15; f forks p at 15 and stores 14.
	stored := map[string][]uint64{"r": {2, 5, 9, 12}, "p": {3, 9, 15}, "f": {14}}
	root := events.SessionMeta{ID: "r"}
	p := events.SessionMeta{ID: "p", Parent: "r", ForkSeq: 10}
	f := events.SessionMeta{ID: "f", Parent: "p", ForkSeq: 15}
	z := events.SessionMeta{ID: "z", Parent: "r"} // fork at zero
	tests := []struct {
		name       string
		chain      []events.SessionMeta
		atOrBefore uint64
		want       string // "session@seq" or "" for none
		seeks      string // the seeks made, in order
	}{
		{"root exact", []events.SessionMeta{root}, 5, "r@5", "r<=5"},
		{"root between", []events.SessionMeta{root}, 11, "r@9", "r<=11"},
		{"root max", []events.SessionMeta{root}, math.MaxUint64, "r@12", fmt.Sprintf("r<=%d", uint64(math.MaxUint64))},
		{"root before first", []events.SessionMeta{root}, 1, "", "r<=1"},
		{"root zero", []events.SessionMeta{root}, 0, "", ""},
		{"own after fork point", []events.SessionMeta{p, root}, 20, "p@15", "p<=20"},
		{"own shadows parent at same seq", []events.SessionMeta{p, root}, 12, "p@9", "p<=12 r<=10"},
		{"parent newer than own in prefix", []events.SessionMeta{p, root}, 6, "r@5", "p<=6 r<=6"},
		{"own older, parent newer", []events.SessionMeta{p, root}, 4, "p@3", "p<=4 r<=4"},
		{"parent only", []events.SessionMeta{p, root}, 2, "r@2", "p<=2 r<=2"},
		{"none", []events.SessionMeta{p, root}, 1, "", "p<=1 r<=1"},
		{"two levels, parent newer", []events.SessionMeta{f, p, root}, 100, "p@15", "f<=100 p<=15"},
		{"two levels, own", []events.SessionMeta{f, p, root}, 14, "f@14", "f<=14"},
		{"two levels, grandparent", []events.SessionMeta{f, p, root}, 8, "r@5", "f<=8 p<=8 r<=8"},
		{"fork at zero", []events.SessionMeta{z, root}, 100, "", "z<=100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seeks []string
			seek := func(session string, atOrBefore uint64) (uint64, []byte, bool, error) {
				seeks = append(seeks, fmt.Sprintf("%s<=%d", session, atOrBefore))
				seqs := stored[session]
				i := sort.Search(len(seqs), func(i int) bool { return seqs[i] > atOrBefore })
				if i == 0 {
					return 0, nil, false, nil
				}
				return seqs[i-1], []byte(session), true, nil
			}
			found, ok, err := logcore.FindCheckpoint(tt.chain, tt.atOrBefore, seek)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if ok {
				got = fmt.Sprintf("%s@%d", found.Session, found.Seq)
				if string(found.Stored) != found.Session {
					t.Fatalf("Stored: got %q, want the bytes seek returned for %s", found.Stored, found.Session)
				}
			}
			if got != tt.want {
				t.Fatalf("FindCheckpoint(%d): got %q, want %q", tt.atOrBefore, got, tt.want)
			}
			if s := strings.Join(seeks, " "); s != tt.seeks {
				t.Fatalf("seeks: got %q, want %q", s, tt.seeks)
			}
		})
	}
	t.Run("seek error", func(t *testing.T) {
		boom := errors.New("boom")
		_, _, err := logcore.FindCheckpoint([]events.SessionMeta{p, root}, 5, func(string, uint64) (uint64, []byte, bool, error) {
			return 0, nil, false, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want %v", err, boom)
		}
	})
}

func TestDecodeCheckpoint(t *testing.T) {
	good := events.EncodeCheckpoint(&events.Checkpoint{Seq: 7, StateHash: "ab", Data: []byte("d")})
	if cp, err := logcore.DecodeCheckpoint("s", 7, "", good, true); err != nil || string(cp.Data) != "d" {
		t.Fatalf("DecodeCheckpoint: got %+v, %v", cp, err)
	}
	if cp, err := logcore.DecodeCheckpoint("s", 7, "", good, false); err != nil || cp.Data != nil || cp.StateHash != "ab" {
		t.Fatalf("DecodeCheckpoint without data: got %+v, %v", cp, err)
	}
	_, err := logcore.DecodeCheckpoint("s", 8, "k", good, true)
	var ce *events.CorruptError
	if !errors.As(err, &ce) || ce.Kind != events.CorruptCheckpoint || ce.Session != "s" || ce.Seq != 8 || ce.Key != "k" ||
		!strings.Contains(err.Error(), "stored checkpoint has seq 7") {
		t.Fatalf("DecodeCheckpoint under another seq: got %v", err)
	}
}
