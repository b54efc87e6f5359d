package tests

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

var update = flag.Bool("update", false, "TestGolden: record the golden logs in testdata/golden again from today's code (review the diff: a refresh is a change of the engine's output)")

// goldenDir holds the golden logs, one gzip-compressed JSON Lines file per
// session, and goldenSums the figures of each.
const (
	goldenDir  = "testdata/golden"
	goldenSums = "SUMS"
)

// A goldenCase is one recorded session: a world (shipped, or a file in
// testdata/worlds), the built-in agent of every seat, and the seed.
type goldenCase struct {
	world  string
	file   string // testdata/worlds/<file>, for a test world; "" for a shipped one
	agent  string
	seed   uint64
	format int // the log format recorded (sim.Config.LogFormat); 0 for the current one
}

func (c goldenCase) name() string {
	n := fmt.Sprintf("%s-%s-%d", c.world, c.agent, c.seed)
	if c.format != 0 {
		n += fmt.Sprintf("-format%d", c.format)
	}
	return n
}

// goldenCases are the shipped worlds of format 1 with greedy and planner
// agents and seeds 1 and 2 (support-desk-bench, 200,000 tickets, aside),
// the same-instant test world, where an NPC and agents decide at one
// instant, and the content worlds of format 2 — records, facts, replies,
// decisions, reopened cases and meetings — with greedy (which gets content
// wrong) and diligent (which asks, reads and books legitimately), seed 1;
// a desk of simulated colleagues (npc-desk), and four of them recorded in
// log formats 2, 3, 4, 5 and 6 as well (their files end in -format2 to
// -format6).
func goldenCases() []goldenCase {
	var out []goldenCase
	for _, w := range []string{"startup", "procurement", "product-launch", "support-desk", "portfolio"} {
		for _, a := range []string{"greedy", "planner"} {
			for _, s := range []uint64{1, 2} {
				out = append(out, goldenCase{world: w, agent: a, seed: s})
			}
		}
	}
	out = append(out, goldenCase{world: "same-instant", file: "same-instant.yaml", agent: "greedy", seed: 1},
		goldenCase{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1})
	for _, w := range []string{"billing-support", "access-requests", "meetings"} {
		for _, a := range []string{"greedy", "diligent"} {
			out = append(out, goldenCase{world: w, agent: a, seed: 1})
		}
	}
	// Formats 2 to 7 as the builds before formats 3 to 9 wrote them, byte
	// for byte: a session resumed or forked goes on in its format.
	for _, c := range []goldenCase{
		{world: "support-desk", agent: "greedy", seed: 1},
		{world: "same-instant", file: "same-instant.yaml", agent: "greedy", seed: 1},
		{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1},
		{world: "billing-support", agent: "diligent", seed: 1},
	} {
		for _, f := range []int{2, 3, 4, 5, 6, 7} {
			c.format = f
			out = append(out, c)
		}
	}
	// Cheaters who hedge their replies, judged right in format 5 (its file
	// was recorded by the build before format 6, with today's cheater) and
	// wrong in format 6; and who write outside their cases' scope, whose
	// writes format 7 keeps out of what later cases expect.
	out = append(out, goldenCase{world: "billing-support", agent: "cheater", seed: 1},
		goldenCase{world: "billing-support", agent: "cheater", seed: 1, format: 5},
		goldenCase{world: "billing-support", agent: "cheater", seed: 1, format: 6})
	return out
}

// TestGolden runs every golden case again with today's code — in process,
// without a log or a bus, its built-in agents asked directly — and compares
// its log byte for byte with the one recorded in testdata/golden: every
// event as a JSON line (ID, seq, time, type, actor, cause, and the payload's
// bytes as the engine encoded them; the session ID, random in a real run, is
// left out), and the SHA-256 of the events' binary encodings (events.Encode)
// recorded in testdata/golden/SUMS, which catches a change the JSON would
// hide. Each recorded log must also replay, with driver.Verify on an
// in-memory log, to the state hash its session.ended records.
//
// `go test ./tests -run TestGolden -update` records them again. A refresh is
// a change of what the engine writes: review its diff (SUMS says which
// sessions changed, and how many events each has).
func TestGolden(t *testing.T) {
	sums := readGoldenSums(t)
	cases := goldenCases()
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			evs := playGoldenCase(t, c)
			got := goldenLines(evs)
			sum := binarySum(evs)
			file := filepath.Join(goldenDir, c.name()+".jsonl.gz")
			if *update {
				writeGolden(t, file, got)
				sums.set(c.name(), goldenSum{events: len(evs), stateHash: endStateHash(t, evs), binary: sum})
			}
			want := readGolden(t, file)
			if diff := diffLines(want, got); diff != "" {
				t.Errorf("the log differs from %s (go test ./tests -run TestGolden -update records it again):\n%s", file, diff)
			}
			recorded, ok := sums.get(c.name())
			switch {
			case !ok:
				t.Errorf("%s has no line for %s", goldenSums, c.name())
			case recorded.binary != sum:
				t.Errorf("SHA-256 of the binary encodings: got %s, want %s (%s)", sum, recorded.binary, goldenSums)
			}
			checkGoldenReplay(t, c.name(), want, recorded)
			checkTurnOrder(t, got)
			if c.world == "same-instant" {
				checkSameInstant(t, got)
			}
		})
	}
	if *update {
		sums.write(t, cases)
	}
	t.Run("files", func(t *testing.T) {
		// Every file in testdata/golden is a case's (or SUMS): a log left
		// from a case that is gone would otherwise be kept and never read.
		names := map[string]bool{goldenSums: true}
		for _, c := range cases {
			names[c.name()+".jsonl.gz"] = true
		}
		entries, err := os.ReadDir(goldenDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if names[e.Name()] {
				continue
			}
			if *update {
				if err := os.Remove(filepath.Join(goldenDir, e.Name())); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s/%s belongs to no golden case: remove it (or run -update)", goldenDir, e.Name())
		}
	})
}

// playGoldenCase runs c to its end in process and returns its events.
func playGoldenCase(tb testing.TB, c goldenCase) []events.Event {
	tb.Helper()
	var (
		w   *worlds.World
		src []byte
		err error
	)
	if c.file != "" {
		if src, err = os.ReadFile(filepath.Join("testdata/worlds", c.file)); err == nil {
			w, err = worlds.Load(c.file, src)
		}
	} else if src, err = worlds.Source(c.world); err == nil {
		w, err = worlds.Load(c.world+".yaml", src) // as corpsim run loads a shipped world
	}
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: c.seed, Session: "golden", LogFormat: c.format})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	return playOn(tb, e, w, c)
}

// playOn plays engine e of world w to its end with c's agents, and returns
// the events it makes from now on.
func playOn(tb testing.TB, e *sim.Engine, w *worlds.World, c goldenCase) []events.Event {
	tb.Helper()
	var err error
	seats := map[string]agents.Agent{}
	var out []events.Event
	keep := func(b []events.Event) bool { out = append(out, b...); return true }
	decide := func(t sim.Turn) (sim.Answer, bool) {
		a := seats[t.Member]
		if a == nil {
			if a, err = agents.New(c.agent, agents.Options{Seed: c.seed, Member: t.Member, World: w}); err != nil {
				tb.Fatal(err)
			}
			seats[t.Member] = a
		}
		// As the agents' host answers: what the agent returned, even with
		// an error, and no actions rather than none at all.
		acts, _ := a.Decide(context.Background(), t.Observation)
		if acts == nil {
			acts = []org.Action{}
		}
		return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Actions: acts}, true
	}
	if err := sim.Play(e, keep, decide, 0); err != nil {
		tb.Fatal(err)
	}
	return out
}

// goldenLine is one event of a golden log.
type goldenLine struct {
	Seq     uint64          `json:"seq"`
	ID      string          `json:"id"`
	At      int64           `json:"at"`
	Type    string          `json:"type"`
	Actor   string          `json:"actor"`
	Cause   uint64          `json:"cause"`
	Payload json.RawMessage `json:"payload"`
}

// goldenLines are the events as golden lines. The payload is written as
// the engine encoded it, byte for byte (encoding/json would compact and
// check it again).
func goldenLines(evs []events.Event) []string {
	out := make([]string, len(evs))
	var b []byte
	for i := range evs {
		ev := &evs[i]
		b = append(b[:0], `{"seq":`...)
		b = strconv.AppendUint(b, ev.Seq, 10)
		b = append(b, `,"id":"`...)
		b = append(b, ev.ID.String()...)
		b = append(b, `","at":`...)
		b = strconv.AppendInt(b, ev.Time, 10)
		b = append(b, `,"type":`...)
		b = appendJSONString(b, ev.Type)
		b = append(b, `,"actor":`...)
		b = appendJSONString(b, ev.Actor)
		b = append(b, `,"cause":`...)
		b = strconv.AppendUint(b, ev.Cause, 10)
		b = append(b, `,"payload":`...)
		if len(ev.Payload) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, ev.Payload...)
		}
		b = append(b, '}')
		out[i] = string(b)
	}
	return out
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// parseGolden decodes golden lines back into events (Session left empty).
func parseGolden(tb testing.TB, lines []string) []events.Event {
	tb.Helper()
	out := make([]events.Event, len(lines))
	for i, l := range lines {
		var g goldenLine
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			tb.Fatalf("golden line %d: %v", i+1, err)
		}
		id, err := ulid.ParseStrict(g.ID)
		if err != nil {
			tb.Fatalf("golden line %d: %v", i+1, err)
		}
		ev := events.Event{ID: id, Seq: g.Seq, Time: g.At, Type: g.Type, Actor: g.Actor, Cause: g.Cause}
		if !bytes.Equal(g.Payload, []byte("null")) {
			ev.Payload = g.Payload
		}
		out[i] = ev
	}
	return out
}

// binarySum is the hex SHA-256 of the events' binary encodings, in order.
func binarySum(evs []events.Event) string {
	h := sha256.New()
	var b []byte
	for i := range evs {
		b = events.AppendEncode(b[:0], &evs[i])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// endStateHash is the state hash the log's last event, session.ended, records.
func endStateHash(tb testing.TB, evs []events.Event) string {
	tb.Helper()
	if len(evs) == 0 || evs[len(evs)-1].Type != payload.EvSessionEnded {
		tb.Fatal("the log does not end with session.ended")
	}
	var p struct {
		StateHash string `json:"state_hash"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].Payload, &p); err != nil || p.StateHash == "" {
		tb.Fatalf("session.ended records no state hash: %s (%v)", evs[len(evs)-1].Payload, err)
	}
	return p.StateHash
}

// checkGoldenReplay replays a recorded log: its events, stored in an
// in-memory log, must pass driver.Verify (replayed from event 1 to the
// state hash session.ended records), and agree with SUMS.
func checkGoldenReplay(t *testing.T, name string, lines []string, recorded goldenSum) {
	t.Helper()
	evs := parseGolden(t, lines)
	end := endStateHash(t, evs)
	if recorded.binary != "" {
		if got := binarySum(evs); got != recorded.binary {
			t.Errorf("the recorded log's binary encodings hash to %s, but %s records %s", got, goldenSums, recorded.binary)
		}
		if recorded.events != len(evs) || recorded.stateHash != end {
			t.Errorf("the recorded log has %d events ending in state %s, but %s records %d and %s",
				len(evs), end, goldenSums, recorded.events, recorded.stateHash)
		}
	}
	ctx := context.Background()
	log := memlog.New()
	meta := events.SessionMeta{ID: "golden-" + name, World: name, Status: events.StatusFinished, StateHash: end}
	if err := log.CreateSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		evs[i].Session = meta.ID
	}
	if err := log.Append(ctx, meta.ID, 0, evs); err != nil {
		t.Fatal(err)
	}
	r := driver.Verify(ctx, log, meta)
	if !r.OK {
		t.Errorf("the recorded log does not verify: %s", strings.Join(r.Problems, "; "))
	}
	if r.StateHash != end || r.Events != uint64(len(evs)) {
		t.Errorf("replay: got %d events and state hash %s, want %d and %s", r.Events, r.StateHash, len(evs), end)
	}
}

// stepTurn is what the checks below read of a turn event.
type stepTurn struct {
	seq   uint64
	at    int64
	seen  uint64
	actor string
}

// stepTurns groups a log's turn events by step: the turns taken at one
// instant, which observed the same state (the same "seen").
func stepTurns(tb testing.TB, lines []string) [][]stepTurn {
	tb.Helper()
	var out [][]stepTurn
	for _, ev := range parseGolden(tb, lines) {
		// A decision is a turn, or (format 3) a simulated colleague's
		// ticket.served or member.waiting with the seq it had seen.
		if ev.Type != payload.EvTurn && ev.Type != payload.EvTicketServed && ev.Type != payload.EvMemberWaiting {
			continue
		}
		var p struct {
			Seen uint64 `json:"seen"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			tb.Fatalf("%s at seq %d: %v", ev.Type, ev.Seq, err)
		}
		if ev.Type == payload.EvMemberWaiting && p.Seen == 0 {
			continue // the wait of a turn
		}
		tu := stepTurn{seq: ev.Seq, at: ev.Time, seen: p.Seen, actor: ev.Actor}
		if n := len(out); n > 0 && out[n-1][0].at == tu.at && out[n-1][0].seen == tu.seen {
			out[n-1] = append(out[n-1], tu)
			continue
		}
		out = append(out, []stepTurn{tu})
	}
	return out
}

// checkTurnOrder checks that the turns of one step were taken in member-ID
// order, whoever answered first and whether NPC or agent.
func checkTurnOrder(t *testing.T, lines []string) {
	t.Helper()
	for _, step := range stepTurns(t, lines) {
		if !slices.IsSortedFunc(step, func(a, b stepTurn) int { return strings.Compare(a.actor, b.actor) }) {
			var who []string
			for _, tu := range step {
				who = append(who, fmt.Sprintf("%s (seq %d)", tu.actor, tu.seq))
			}
			t.Errorf("the turns of the step at %d ms were taken in the order %s, want member-ID order", step[0].at, strings.Join(who, ", "))
			return
		}
	}
}

// checkSameInstant checks that the same-instant world does what it is for:
// some step has an NPC and an agent deciding together, with an NPC whose ID
// sorts before an agent's (so that applying the agents' answers first would
// change the log).
func checkSameInstant(t *testing.T, lines []string) {
	t.Helper()
	src, err := os.ReadFile("testdata/worlds/same-instant.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("same-instant.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	npc := map[string]bool{}
	for _, m := range w.Members {
		npc[m.ID] = m.NPC != nil
	}
	n := 0
	for _, step := range stepTurns(t, lines) {
		firstNPC, lastAgent := "", ""
		for _, tu := range step {
			if npc[tu.actor] && firstNPC == "" {
				firstNPC = tu.actor
			}
			if !npc[tu.actor] {
				lastAgent = tu.actor
			}
		}
		if firstNPC != "" && lastAgent != "" && firstNPC < lastAgent {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no step of the same-instant session has an NPC and an agent deciding at one instant")
	}
	t.Logf("%d steps where an NPC and agents decide at the same instant", n)
}

// diffLines describes how got differs from want: the first differing
// event and how many differ; "" when they are equal.
func diffLines(want, got []string) string {
	first, n := -1, 0
	for i := range max(len(want), len(got)) {
		if i < len(want) && i < len(got) && want[i] == got[i] {
			continue
		}
		if first < 0 {
			first = i
		}
		n++
	}
	if first < 0 {
		return ""
	}
	line := func(ls []string, i int) string {
		if i < len(ls) {
			return ls[i]
		}
		return "(none: the log has ended)"
	}
	typ := func(ls []string, i int) string {
		var g goldenLine
		if i < len(ls) && json.Unmarshal([]byte(ls[i]), &g) == nil {
			return g.Type
		}
		return "-"
	}
	return fmt.Sprintf("%d of %d events differ (got %d events, want %d); the first is seq %d (type: got %s, want %s)\nwant: %s\n got: %s",
		n, max(len(want), len(got)), len(got), len(want), first+1, typ(got, first), typ(want, first), line(want, first), line(got, first))
}

func readGolden(tb testing.TB, file string) []string {
	tb.Helper()
	f, err := os.Open(file)
	if err != nil {
		tb.Fatalf("%v (go test ./tests -run TestGolden -update records it)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	var out []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20) // session.started holds the world file
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return out
}

func writeGolden(tb testing.TB, file string, lines []string) {
	tb.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression) // no name, no time: the same log, the same file
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range lines {
		zw.Write([]byte(l))
		zw.Write([]byte{'\n'})
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// goldenSum is a golden log's line in SUMS.
type goldenSum struct {
	events    int
	stateHash string // recorded in session.ended
	binary    string // hex SHA-256 of the events' binary encodings
}

type goldenSumFile map[string]goldenSum

// readGoldenSums reads SUMS; under -update a missing file is an empty one.
func readGoldenSums(tb testing.TB) goldenSumFile {
	tb.Helper()
	out := goldenSumFile{}
	b, err := os.ReadFile(filepath.Join(goldenDir, goldenSums))
	if err != nil {
		if *update && os.IsNotExist(err) {
			return out
		}
		tb.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		n := -1
		if len(f) == 4 {
			n, _ = strconv.Atoi(f[1])
		}
		if n < 0 {
			tb.Fatalf("%s line %d: want name, events, state hash and SHA-256, got %q", goldenSums, i+1, l)
		}
		out[f[0]] = goldenSum{events: n, stateHash: f[2], binary: f[3]}
	}
	return out
}

func (s goldenSumFile) get(name string) (goldenSum, bool) { g, ok := s[name]; return g, ok }
func (s goldenSumFile) set(name string, g goldenSum)      { s[name] = g }

// write writes SUMS: the cases' lines, in the cases' order.
func (s goldenSumFile) write(tb testing.TB, cases []goldenCase) {
	tb.Helper()
	var b strings.Builder
	b.WriteString("# The golden logs of TestGolden (tests/golden_test.go); `go test ./tests -run TestGolden -update` rewrites them.\n")
	b.WriteString("# name, events, the state hash session.ended records, SHA-256 of the events' binary encodings (events.Encode)\n")
	for _, c := range cases {
		if g, ok := s[c.name()]; ok {
			fmt.Fprintf(&b, "%s %d %s %s\n", c.name(), g.events, g.stateHash, g.binary)
		}
	}
	if err := os.WriteFile(filepath.Join(goldenDir, goldenSums), []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}
