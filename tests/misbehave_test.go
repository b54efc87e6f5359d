package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/server"
)

// misbehaveWorld gives the well-behaved core team (alice, bob, carol) and
// dora their own roles, queues and projects, and each misbehaving member a
// one-person team with a role, queue and project of its own: nobody's work
// depends on a misbehaving member's, and no approval crosses teams.
const misbehaveWorld = `version: 1
name: misbehave
description: A core team whose work is independent of four one-person teams.
start: 2026-01-05T09:00:00Z
horizon: 5d
calendar:
  hours: "09:00-17:00"
  workdays: [mon, tue, wed, thu, fri]
roles:
  - {id: lead}
  - {id: eng}
  - {id: roamer}
  - {id: flooder}
  - {id: garbler}
  - {id: hanger}
teams:
  - {id: core, budget: 5000}
  - {id: dteam}
  - {id: fteam}
  - {id: gteam}
  - {id: hteam}
members:
  - {id: alice, role: lead, team: core}
  - {id: bob, role: eng, team: core}
  - {id: carol, role: eng, team: core}
  - {id: dora, role: roamer, team: dteam}
  - {id: fred, role: flooder, team: fteam}
  - {id: gary, role: garbler, team: gteam}
  - {id: hank, role: hanger, team: hteam}
queues:
  - {id: backlog, served_by: [lead, eng]}
  - {id: dq, served_by: [roamer]}
  - {id: fq, served_by: [flooder]}
  - {id: gq, served_by: [garbler]}
  - {id: hq, served_by: [hanger]}
approvals:
  - id: purchases
    steps:
      - {role: lead, above: 500}
projects:
  - id: core
    team: core
    queue: backlog
    value: 10
    deadline: 4d
    tasks:
      - {id: spec, role: lead, effort: 4h, value: 5}
      - {id: api, role: eng, effort: 1d, deps: [spec], value: 10}
      - {id: ui, role: eng, effort: 1d, deps: [spec], value: 8}
      - {id: kit, role: eng, effort: 2h, purchase: 800, deps: [spec]}
      - {id: ship, role: lead, effort: 4h, deps: [api, ui, kit], value: 6}
  - id: roam
    team: dteam
    queue: dq
    value: 4
    deadline: 4d
    tasks:
      - {id: d1, role: roamer, effort: 4h}
      - {id: d2, role: roamer, effort: 1d, deps: [d1]}
      - {id: d3, role: roamer, effort: 4h, deps: [d2]}
  - {id: flood, team: fteam, queue: fq, deadline: 4d, tasks: [{id: f1, role: flooder, effort: 4h}]}
  - {id: garbage, team: gteam, queue: gq, deadline: 4d, tasks: [{id: g1, role: garbler, effort: 4h}]}
  - {id: hang, team: hteam, queue: hq, deadline: 4d, tasks: [{id: h1, role: hanger, effort: 4h}]}
`

// pebbleServer is the service on a Pebble log in a data folder, behind an
// embedded NATS server listening on loopback with per-seat credentials.
type pebbleServer struct {
	url, data string
	log       *pebblelog.Log
	bus       *natsserver.Server
	svc       *server.Service
	op        *client.Operator
	once      sync.Once
}

func startPebbleServer(tb testing.TB, data string, turnTimeout time.Duration) *pebbleServer {
	tb.Helper()
	addr := freeAddr(tb)
	opToken := natsserver.NewToken()
	auth := natsserver.NewAuth(opToken)
	bus, err := natsserver.Start(natsserver.Options{Listen: addr, Auth: auth})
	if err != nil {
		tb.Fatal(err)
	}
	l, err := pebblelog.Open(data, pebblelog.Options{})
	if err != nil {
		bus.Shutdown()
		tb.Fatal(err)
	}
	svc, err := server.New(server.Config{Log: l, Bus: bus, Auth: auth, Logger: testLogger(tb), TurnTimeout: turnTimeout})
	if err != nil {
		tb.Fatal(err)
	}
	op, err := client.Dial("nats://"+addr, opToken)
	if err != nil {
		tb.Fatal(err)
	}
	s := &pebbleServer{url: "nats://" + addr, data: data, log: l, bus: bus, svc: svc, op: op}
	tb.Cleanup(s.close)
	return s
}

// close stops everything and releases the data folder, so the command line can open it.
func (s *pebbleServer) close() {
	s.once.Do(func() {
		s.op.Close()
		s.svc.Close()
		s.bus.Shutdown()
		s.log.Close()
	})
}

func (s *pebbleServer) create(tb testing.TB, req wire.CreateRequest) wire.CreateReply {
	tb.Helper()
	reply, err := s.op.Create(requestCtx(tb, time.Minute), req)
	if err != nil {
		tb.Fatal(err)
	}
	return reply
}

// seatConn connects with a seat's token; every asynchronous error (a
// refused publish, a slow consumer) is counted in errs.
func seatConn(tb testing.TB, url string, seat wire.Seat, errs *errorCounts) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect(url, nats.Name("misbehaving "+seat.Member), nats.Token(seat.Token),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs.add(err) }))
	if err != nil {
		tb.Fatalf("seat %s: %v", seat.Member, err)
	}
	return nc
}

type errorCounts struct {
	mu     sync.Mutex
	denied int // permissions violations: publishes the server refused
	other  []string
}

func (e *errorCounts) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		e.denied++
		return
	}
	e.other = append(e.other, err.Error())
}

func (e *errorCounts) deniedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.denied
}

// askedTurn reads the turn number of an observation.
func askedTurn(data []byte) uint64 {
	var o struct {
		Turn uint64 `json:"turn"`
	}
	_ = json.Unmarshal(data, &o)
	return o.Turn
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// flooder answers its first turns with too many actions, then with a reply
// far over the size limit, then with sixteen claims of tasks that do not
// exist, and sends each of those replies twenty times; later turns it
// answers with nothing (it waits).
func flooder(tb testing.TB, nc *nats.Conn, seat wire.Seat) {
	_, err := nc.Subscribe(seat.Subject, func(msg *nats.Msg) {
		turn := askedTurn(msg.Data)
		var reply []byte
		switch turn {
		case 1:
			acts := make([]org.Action, org.MaxActions+1)
			for i := range acts {
				acts[i] = org.Action{Type: org.ActWait}
			}
			reply = mustJSON(org.Reply{Turn: turn, Actions: acts})
		case 2:
			reply = mustJSON(org.Reply{Turn: turn, Actions: []org.Action{{Type: org.ActMessage, To: "alice", Text: strings.Repeat("spam ", 20000)}}})
		case 3:
			acts := make([]org.Action, org.MaxActions)
			for i := range acts {
				acts[i] = org.Action{Type: org.ActClaim, Task: fmt.Sprintf("no-such-task-%d", i)}
			}
			reply = mustJSON(org.Reply{Turn: turn, Actions: acts})
		default:
			_ = msg.Respond(mustJSON(org.Reply{Turn: turn, Actions: []org.Action{}}))
			return
		}
		for range 20 {
			_ = nc.Publish(msg.Reply, reply)
		}
		_ = nc.Flush()
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// garbageReplies are what the garbler sends at turns 1, 2, …; %d is the turn asked.
var garbageReplies = []string{
	`this is not JSON`,
	`{"turn":1,"actions":[{"type":"complete","task":"g1"}]}`, // answers an older turn
	`{"turn":99,"actions":[]}`,                               // a turn not yet asked
	`{"turn":%d,"actions":[],"sneaky":true}`,                 // an unknown field
	`{"turn":%d,"actions":[{"type":"teleport"}]}`,            // an unknown action
	`{"turn":%d,"actions":[]} {"turn":%d}`,                   // trailing data
}

func garbler(tb testing.TB, nc *nats.Conn, seat wire.Seat) {
	_, err := nc.Subscribe(seat.Subject, func(msg *nats.Msg) {
		turn := askedTurn(msg.Data)
		reply := fmt.Sprintf(`{"turn":%d,"actions":[]}`, turn)
		if int(turn) <= len(garbageReplies) {
			reply = strings.ReplaceAll(garbageReplies[turn-1], "%d", fmt.Sprint(turn))
		}
		_ = msg.Respond([]byte(reply))
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// hanger receives its turns and never answers; hung is closed at the first.
func hanger(tb testing.TB, nc *nats.Conn, seat wire.Seat, hung chan struct{}, asked *atomic.Int64) {
	_, err := nc.Subscribe(seat.Subject, func(*nats.Msg) {
		if asked.Add(1) == 1 {
			close(hung)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// roamer plays a seat with the greedy agent but drops its connection after
// answering the turns in dropAfter, stays away for a while, and comes back
// on a new connection with the same credentials. Back, it sends its last
// reply again to the request it answered before the drop (a late
// duplicate, which must not apply twice).
type roamer struct {
	tb        testing.TB
	url       string
	seat      wire.Seat
	agent     agents.Agent
	dropAfter map[uint64]bool
	away      time.Duration
	errs      *errorCounts

	mu       sync.Mutex
	conns    []*nats.Conn
	drops    int
	answered map[uint64]int // turn -> connection (index in conns) that answered it
	resent   int
	wg       sync.WaitGroup
}

func (r *roamer) connect() error {
	nc, err := nats.Connect(r.url, nats.Name("roamer "+r.seat.Member), nats.Token(r.seat.Token),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { r.errs.add(err) }))
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.conns = append(r.conns, nc)
	idx := len(r.conns) - 1
	r.mu.Unlock()
	if _, err := nc.Subscribe(r.seat.Subject, func(msg *nats.Msg) { r.handle(nc, idx, msg) }); err != nil {
		return err
	}
	return nc.Flush()
}

func (r *roamer) handle(nc *nats.Conn, idx int, msg *nats.Msg) {
	var obs org.Observation
	if err := json.Unmarshal(msg.Data, &obs); err != nil {
		r.tb.Errorf("roamer: observation: %v", err)
		return
	}
	acts, _ := r.agent.Decide(context.Background(), obs)
	if acts == nil {
		acts = []org.Action{}
	}
	reply := mustJSON(org.Reply{Turn: obs.Turn, Actions: acts})
	r.mu.Lock()
	r.answered[obs.Turn] = idx
	r.mu.Unlock()
	if !r.dropAfter[obs.Turn] {
		_ = msg.Respond(reply)
		return
	}
	// Unsubscribe before answering: once the driver has the answer, the
	// seat has no responder, so its next turn finds nobody until it is back.
	_ = msg.Sub.Unsubscribe()
	_ = nc.Publish(msg.Reply, reply)
	_ = nc.Flush()
	r.mu.Lock()
	r.drops++
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		nc.Close()
		time.Sleep(r.away)
		if err := r.connect(); err != nil {
			r.tb.Errorf("roamer: reconnect: %v", err)
			return
		}
		r.mu.Lock()
		back := r.conns[len(r.conns)-1]
		r.resent++
		r.mu.Unlock()
		_ = back.Publish(msg.Reply, reply) // the late duplicate
		_ = back.Flush()
	}()
}

func (r *roamer) close() {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, nc := range r.conns {
		nc.Close()
	}
}

// cliJSON runs the command line in process and decodes its JSON output.
func cliJSON(tb testing.TB, v any, args ...string) {
	tb.Helper()
	out, errs, code := runCLI(tb, args...)
	if code != cli.ExitOK {
		tb.Fatalf("corpsim %s: exit %d: %s%s", strings.Join(args, " "), code, errs, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		tb.Fatalf("corpsim %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

type completion struct {
	Task, By string
	At       int64
}

func completions(tb testing.TB, l events.Log, session string, who map[string]bool) []completion {
	tb.Helper()
	var out []completion
	for _, ev := range eventsOf(tb, l, session, payload.EvTaskCompleted) {
		if who[ev.Actor] {
			out = append(out, completion{payloadOf[payload.TaskCompleted](tb, ev).Task, ev.Actor, ev.Time})
		}
	}
	return out
}

// TestMisbehavingAgents: one session of the misbehave world with the core
// team played by the built-in greedy agent and four remote agents on their
// own connections: fred floods (oversized action lists, an oversized
// reply, each sent twenty times), gary sends garbage (not JSON, stale and
// future turn numbers, unknown fields and actions, trailing data), hank
// never answers, and dora (greedy) drops her connection twice and comes back.
// The core team's outcomes (tasks, times, per-member credit from corpsim
// score --json) and dora's equal those of a reference run where fred, gary
// and hank are idle seats and dora is the built-in greedy agent; every
// misbehaviour is in the log; and a second session run while hank hangs
// finishes without waiting for him.
func TestMisbehavingAgents(t *testing.T) {
	data := t.TempDir()
	ts := startPebbleServer(t, data, 20*time.Second)
	const seed = 3
	const budget = 15 * time.Second
	ctx := requestCtx(t, 10*time.Minute)

	ref := ts.create(t, wire.CreateRequest{Source: misbehaveWorld, Seed: seed, Agents: "greedy,fred=idle,gary=idle,hank=idle"})
	if _, err := ts.svc.Wait(ctx, ref.Session); err != nil {
		t.Fatal(err)
	}

	reply := ts.create(t, wire.CreateRequest{Source: misbehaveWorld, Seed: seed, TurnTimeout: budget.String(),
		Agents: "greedy,dora=remote,fred=remote,gary=remote,hank=remote"})
	var fredErrs, garyErrs, hankErrs, doraErrs errorCounts
	fredConn := seatConn(t, ts.url, reply.Seats["fred"], &fredErrs)
	defer fredConn.Close()
	flooder(t, fredConn, reply.Seats["fred"])
	garyConn := seatConn(t, ts.url, reply.Seats["gary"], &garyErrs)
	defer garyConn.Close()
	garbler(t, garyConn, reply.Seats["gary"])
	hankConn := seatConn(t, ts.url, reply.Seats["hank"], &hankErrs)
	defer hankConn.Close()
	hung := make(chan struct{})
	var hankAsked atomic.Int64
	hanger(t, hankConn, reply.Seats["hank"], hung, &hankAsked)
	greedy, err := agents.New("greedy", agents.Options{Seed: seed, Member: "dora"})
	if err != nil {
		t.Fatal(err)
	}
	dora := &roamer{tb: t, url: ts.url, seat: reply.Seats["dora"], agent: greedy, dropAfter: map[uint64]bool{2: true, 4: true},
		away: time.Second, errs: &doraErrs, answered: map[uint64]int{}}
	if err := dora.connect(); err != nil {
		t.Fatal(err)
	}
	defer dora.close()

	// While hank hangs, another session runs on the same server, on its
	// own, and finishes: nothing waits for hank but his own session.
	select {
	case <-hung:
	case <-time.After(2 * time.Minute):
		t.Fatal("hank was never asked")
	}
	hangStart := time.Now()
	other := ts.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy"})
	otherMeta, err := ts.svc.Wait(ctx, other.Session)
	if err != nil || otherMeta.Status != events.StatusFinished {
		t.Fatalf("the other session: %v, status %s", err, otherMeta.Status)
	}
	otherTook := time.Since(hangStart)
	if n := len(eventsOf(t, ts.log, reply.Session, payload.EvTurnTimeout)); n != 0 {
		t.Fatalf("the other session finished only after hank's turn had timed out (%d timeouts recorded)", n)
	}
	t.Logf("while hank hung, the startup session ran %d events and finished in %s", otherMeta.LastSeq, otherTook.Round(time.Millisecond))

	meta, err := ts.svc.Wait(ctx, reply.Session)
	if err != nil || meta.Status != events.StatusFinished {
		t.Fatalf("the misbehaving session: %v, status %s", err, meta.Status)
	}
	dora.close()
	// The late duplicates dora sent after coming back were refused by the
	// server (a new connection has no reply to give); give the refusals a moment to arrive.
	for deadline := time.Now().Add(5 * time.Second); doraErrs.deniedCount() < dora.resent && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}

	// Every misbehaviour is in the log.
	rejected := map[string][]string{}
	for _, ev := range eventsOf(t, ts.log, reply.Session, payload.EvActionRejected) {
		rejected[ev.Actor] = append(rejected[ev.Actor], payloadOf[payload.ActionRejected](t, ev).Reason)
	}
	want := map[string][]string{
		"fred": {"reply has 17 actions; the limit is 16", "bytes; the limit is 65536", `no task "no-such-task-0"`, `no task "no-such-task-15"`},
		"gary": {"malformed reply: invalid character", "reply answers turn 1, but turn 2 was asked", "reply answers turn 99, but turn 3 was asked",
			`unknown field "sneaky"`, `unknown action type "teleport"`, "trailing data"},
	}
	for member, reasons := range want {
		all := strings.Join(rejected[member], "\n")
		for _, r := range reasons {
			if !strings.Contains(all, r) {
				t.Errorf("%s: no rejection saying %q; got:\n%s", member, r, all)
			}
		}
	}
	if n := len(rejected["fred"]); n != 2+org.MaxActions {
		t.Errorf("fred: got %d rejections, want %d (each reply applied once, however often it was sent)", n, 2+org.MaxActions)
	}
	timeouts := map[string]int{}
	for _, ev := range eventsOf(t, ts.log, reply.Session, payload.EvTurnTimeout) {
		timeouts[ev.Actor]++
	}
	if timeouts["hank"] == 0 || len(timeouts) != 1 {
		t.Errorf("turn.timeout events by member: %v; want hank's only", timeouts)
	}
	if fredErrs.deniedCount() == 0 {
		t.Error("the server refused none of fred's repeated replies")
	}

	// Dora continued her seat: every turn of hers was answered, numbered
	// without gaps or repeats, on three connections.
	var doraTurns []uint64
	for _, ev := range eventsOf(t, ts.log, reply.Session, payload.EvTurn) {
		if ev.Actor == "dora" {
			doraTurns = append(doraTurns, payloadOf[payload.Turn](t, ev).Turn)
		}
	}
	for i, n := range doraTurns {
		if n != uint64(i+1) {
			t.Fatalf("dora's turns: %v; want 1, 2, 3, …", doraTurns)
		}
	}
	dora.mu.Lock()
	if dora.drops != 2 || len(dora.conns) != 3 || dora.answered[3] != 1 || dora.answered[5] != 2 {
		t.Errorf("dora: %d drops, %d connections, turn 3 answered on connection %d and turn 5 on %d; want 2, 3, 1, 2",
			dora.drops, len(dora.conns), dora.answered[3], dora.answered[5])
	}
	resent := dora.resent
	dora.mu.Unlock()
	t.Logf("fred: %d rejections, %d repeated replies refused by the server; gary: %d rejections; hank: asked %d times, %d timeouts; dora: %d turns, 2 drops, %d late duplicates (%d refused)",
		len(rejected["fred"]), fredErrs.deniedCount(), len(rejected["gary"]), hankAsked.Load(), timeouts["hank"], len(doraTurns), resent, doraErrs.deniedCount())

	// The well-behaved members' outcomes equal the reference run's.
	good := map[string]bool{"alice": true, "bob": true, "carol": true, "dora": true}
	gotDone, wantDone := completions(t, ts.log, reply.Session, good), completions(t, ts.log, ref.Session, good)
	if len(wantDone) != 8 || !reflect.DeepEqual(gotDone, wantDone) {
		t.Errorf("completions:\n got  %v\n want %v (8 tasks)", gotDone, wantDone)
	}
	ts.close()
	var got, wantRes app.RunResult
	cliJSON(t, &got, "score", reply.Session, "--data", data, "--json")
	cliJSON(t, &wantRes, "score", ref.Session, "--data", data, "--json")
	credit := func(s policies.Scorecard) map[string]policies.MemberCredit {
		out := map[string]policies.MemberCredit{}
		for _, m := range s.Members {
			if good[m.Member] {
				out[m.Member] = m
			}
		}
		return out
	}
	if g, w := credit(got.Score), credit(wantRes.Score); len(w) != 4 || !reflect.DeepEqual(g, w) {
		t.Errorf("per-member credit:\n got  %+v\n want %+v", g, w)
	}
	for _, id := range []string{reply.Session, ref.Session, other.Session} {
		var v struct {
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
		}
		cliJSON(t, &v, "verify", id, "--data", data, "--json")
		if !v.OK {
			t.Errorf("session %s does not verify: %v", id, v.Problems)
		}
	}
	t.Logf("misbehaving session: %d events (reference %d); team score %.2f vs %.2f (fred, gary and hank deliver nothing either way)",
		got.Events, wantRes.Events, got.Score.TeamScore, wantRes.Score.TeamScore)
}

// memberTurns returns a member's turns in the log, in order: turn number ->
// the actions applied (nil for a timeout); it fails on a turn number that
// comes twice or out of order.
func memberTurns(tb testing.TB, l events.Log, session, member string) (turns [][]org.Action, timeouts int) {
	tb.Helper()
	for _, ev := range readAll(tb, l, session) {
		if ev.Actor != member {
			continue
		}
		var n uint64
		var acts []org.Action
		switch ev.Type {
		case payload.EvTurn:
			p := payloadOf[payload.Turn](tb, ev)
			n, acts = p.Turn, p.Actions
			if acts == nil {
				acts = []org.Action{}
			}
		case payload.EvTurnTimeout:
			n = payloadOf[payload.TurnTimeout](tb, ev).Turn
			timeouts++
		default:
			continue
		}
		if n != uint64(len(turns)+1) {
			tb.Fatalf("%s: turn %d recorded after %d turns (seq %d)", member, n, len(turns), ev.Seq)
		}
		turns = append(turns, acts)
	}
	return turns, timeouts
}

// TestMisbehaveLateReplyAfterReconnect: on a bus without per-seat limits
// (so late replies do reach the driver's connection), bob's agent takes
// turn 1's request and never answers it, drops its connection, and comes
// back on a new one. Turn 1 is recorded as timed out. At turn 2 it first
// sends its answer to turn 1 to that request's inbox, then answers turn 2
// three times. Turn 1's late answer is applied nowhere, and turn 2's once.
func TestMisbehaveLateReplyAfterReconnect(t *testing.T) {
	bus, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Shutdown()
	l := memlog.New()
	svc, err := server.New(server.Config{Log: l, Bus: bus, Logger: testLogger(t), CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx := requestCtx(t, 10*time.Minute)
	reply, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote", Wait: true, TurnTimeout: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	subject := wire.TurnSubject(reply.Session, "bob")
	late := `{"turn":1,"actions":[{"type":"message","to":"alice","text":"LATE turn 1"}]}`
	first, err := bus.Connect("bob")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan string, 1)
	if _, err := first.Subscribe(subject, func(msg *nats.Msg) {
		held <- msg.Reply // never answered
	}); err != nil {
		t.Fatal(err)
	}
	if err := first.Flush(); err != nil {
		t.Fatal(err)
	}
	ctl, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if _, err := ctl.Request(wire.ControlSubject(reply.Session), []byte(`{"op":"start"}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var inbox1 string
	select {
	case inbox1 = <-held:
	case <-time.After(time.Minute):
		t.Fatal("bob was never asked")
	}
	first.Close()

	second, err := bus.Connect("bob again")
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	greedy := &agents.Greedy{}
	sent := map[uint64][]org.Action{}
	var mu sync.Mutex
	if _, err := second.Subscribe(subject, func(msg *nats.Msg) {
		var obs org.Observation
		if err := json.Unmarshal(msg.Data, &obs); err != nil {
			t.Errorf("observation: %v", err)
			return
		}
		acts, _ := greedy.Decide(ctx, obs)
		if acts == nil {
			acts = []org.Action{}
		}
		mu.Lock()
		sent[obs.Turn] = acts
		mu.Unlock()
		b := mustJSON(org.Reply{Turn: obs.Turn, Actions: acts})
		if obs.Turn == 2 {
			_ = second.Publish(inbox1, []byte(late))
			for range 3 {
				_ = second.Publish(msg.Reply, b)
			}
			return
		}
		_ = msg.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	if err := second.Flush(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	meta, err := svc.Wait(wctx, reply.Session)
	if err != nil || meta.Status != events.StatusFinished {
		t.Fatalf("session: %v, status %s", err, meta.Status)
	}
	turns, timeouts := memberTurns(t, l, reply.Session, "bob")
	if timeouts != 1 || turns[0] != nil {
		t.Fatalf("bob: %d timeouts, turn 1 %v; want turn 1 timed out and no other", timeouts, turns[0])
	}
	mu.Lock()
	defer mu.Unlock()
	for i, acts := range turns[1:] {
		n := uint64(i + 2)
		if !reflect.DeepEqual(acts, sent[n]) {
			t.Fatalf("bob's turn %d applied %v; he sent %v", n, acts, sent[n])
		}
	}
	for _, ev := range readAll(t, l, reply.Session) {
		if strings.Contains(string(ev.Payload), "LATE turn 1") {
			t.Fatalf("the late answer to turn 1 was applied: seq %d %s", ev.Seq, ev.Type)
		}
	}
	if r := driver.Verify(ctx, l, meta); !r.OK {
		t.Fatalf("does not verify: %v", r.Problems)
	}
	t.Logf("bob: turn 1 timed out, %d turns answered after he came back, each applied once; the late answer to turn 1 went nowhere", len(turns)-1)
}

// cutProxy forwards TCP connections to target and can cut them all at once,
// as a network failure would.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cuts   int
}

func startCutProxy(tb testing.TB, target string) *cutProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	tb.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *cutProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.cuts++
}

// TestMisbehaveNetworkDropReconnects: bob's agent reaches the server through
// a TCP proxy that cuts every connection shortly after his turns 2, 4 and 6,
// as a network failure would; his NATS client reconnects on its own and
// subscribes again, and he continues his seat. Each turn's actions are
// applied at most once, exactly as he sent them for that turn. Here the
// driver's next request is usually already on its way when the connection
// breaks: it is lost with the connection, his answer to it goes out on the
// new connection, which the server refuses (a new connection has no request
// to answer), and the turn is recorded as timed out — never answered twice.
// (A seat that is away when it is asked is asked again until the turn
// budget is spent: dora in TestMisbehavingAgents.)
func TestMisbehaveNetworkDropReconnects(t *testing.T) {
	ts := startServer(t)
	proxy := startCutProxy(t, strings.TrimPrefix(ts.url, "nats://"))
	ctx := requestCtx(t, 10*time.Minute)
	reply, err := ts.op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote", TurnTimeout: "3s"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sent := map[uint64][]org.Action{}
	greedy := &agents.Greedy{}
	var cutting sync.WaitGroup
	bob := agentFunc(func(o org.Observation) []org.Action {
		cutting.Wait() // one cut at a time (this turn's answer may then go out on the new connection, refused: a timeout)
		acts, _ := greedy.Decide(ctx, o)
		if acts == nil {
			acts = []org.Action{}
		}
		mu.Lock()
		sent[o.Turn] = acts
		mu.Unlock()
		if o.Turn == 2 || o.Turn == 4 || o.Turn == 6 {
			cutting.Add(1)
			go func() { defer cutting.Done(); time.Sleep(20 * time.Millisecond); proxy.cut() }()
		}
		return acts
	})
	var reconnects atomic.Int64
	p, err := client.Play(proxy.url(), reply.Seats["bob"], bob, nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1),
		nats.ReconnectJitter(0, 0), nats.ReconnectHandler(func(*nats.Conn) { reconnects.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	meta := ts.wait(t, reply.Session)
	turns, timeouts := memberTurns(t, ts.log, reply.Session, "bob")
	mu.Lock()
	defer mu.Unlock()
	for i, acts := range turns {
		n := uint64(i + 1)
		if acts == nil {
			continue // timed out: nothing applied
		}
		if !reflect.DeepEqual(acts, sent[n]) {
			t.Fatalf("bob's turn %d applied %v; he sent %v", n, acts, sent[n])
		}
	}
	if reconnects.Load() != 3 || len(turns) < 7 {
		t.Fatalf("%d reconnects, %d turns; want bob back three times and playing past turn 6", reconnects.Load(), len(turns))
	}
	if timeouts > 3 {
		t.Fatalf("%d of bob's turns timed out; at most the three in flight at a cut may", timeouts)
	}
	if r := driver.Verify(ctx, ts.log, meta); !r.OK {
		t.Fatalf("does not verify: %v", r.Problems)
	}
	t.Logf("bob: %d turns over %d cuts and %d reconnects; %d timed out (a request in flight at a cut), every other applied once as sent", len(turns), proxy.cuts, reconnects.Load(), timeouts)
}
