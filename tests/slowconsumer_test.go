package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/server"
)

// TestSlowConsumerIsToldAndCatchesUp: an operator follows a session's event
// feed reading one event every 20ms with a pending limit of 8 messages. Its
// client drops what does not fit and tells it so (nats.ErrSlowConsumer on
// its asynchronous error handler) — the driver neither blocks for it nor
// drops anything from the log. Told, the watcher reads what it missed from
// the history responder and ends with every event of the log. (dave's
// remote agent holds its turns while the watcher catches up, because the
// history responder serves a running session only.)
func TestSlowConsumerIsToldAndCatchesUp(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	reply, err := ts.op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,dave=remote", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	session := reply.Session

	told := make(chan struct{})
	var tellOnce sync.Once
	var notices atomic.Int64
	nc, err := nats.Connect(ts.url, nats.Token(ts.operator), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrSlowConsumer) {
			notices.Add(1)
			tellOnce.Do(func() { close(told) })
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	got := map[uint64]events.Event{}
	var slow atomic.Bool
	slow.Store(true)
	sub, err := nc.Subscribe(wire.EventsSubject(session), func(msg *nats.Msg) {
		var ev events.Event
		if err := json.Unmarshal(msg.Data, &ev); err != nil {
			t.Errorf("feed: %v", err)
			return
		}
		if slow.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		got[ev.Seq] = ev
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(8, 64<<10); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	caughtUp := make(chan struct{})
	var held atomic.Int64
	gate := agentFunc(func(o org.Observation) []org.Action {
		select {
		case <-told:
			select {
			case <-caughtUp:
			default:
				held.Add(1)
				select {
				case <-caughtUp:
				case <-time.After(time.Minute):
				}
			}
		default:
		}
		acts, _ := (&agents.Greedy{}).Decide(ctx, o)
		return acts
	})
	p, err := client.Play(ts.url, reply.Seats["dave"], gate)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := ts.op.Control(ctx, session, wire.OpStart); err != nil {
		t.Fatal(err)
	}

	select {
	case <-told:
	case <-time.After(2 * time.Minute):
		t.Fatal("the slow watcher was never told it dropped events")
	}
	// Keep up from now on, then read the history from the start.
	slow.Store(false)
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	var fromHistory int
	for from := uint64(1); ; {
		req, _ := json.Marshal(wire.HistoryRequest{From: from})
		msg, err := nc.Request(wire.HistorySubject(session), req, 10*time.Second)
		if err != nil {
			t.Fatalf("history from %d: %v", from, err)
		}
		var resp wire.HistoryResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Error != "" {
			t.Fatalf("history from %d: %v %s", from, err, resp.Error)
		}
		mu.Lock()
		for _, ev := range resp.Events {
			if _, ok := got[ev.Seq]; !ok {
				fromHistory++
			}
			got[ev.Seq] = ev
		}
		mu.Unlock()
		if len(resp.Events) == 0 || resp.Events[len(resp.Events)-1].Seq >= resp.Last {
			break
		}
		from = resp.Events[len(resp.Events)-1].Seq + 1
	}
	close(caughtUp)

	meta := ts.wait(t, session)
	// The rest arrives live; wait for the end of the session on the feed.
	for deadline := time.Now().Add(time.Minute); ; {
		mu.Lock()
		_, ended := got[meta.LastSeq]
		mu.Unlock()
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never saw event %d (session.ended)", meta.LastSeq)
		}
		time.Sleep(10 * time.Millisecond)
	}
	dropped, _ := sub.Dropped()
	stored := readAll(t, ts.log, session)
	if uint64(len(stored)) != meta.LastSeq {
		t.Fatalf("the log holds %d events; the session ended at seq %d", len(stored), meta.LastSeq)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(stored) {
		t.Fatalf("the watcher has %d events, the log %d", len(got), len(stored))
	}
	for _, ev := range stored {
		g := got[ev.Seq]
		if g.ID != ev.ID || g.Type != ev.Type || g.Time != ev.Time || g.Actor != ev.Actor {
			t.Fatalf("seq %d: watcher has %s %s, log %s %s", ev.Seq, g.Type, g.ID, ev.Type, ev.ID)
		}
	}
	if dropped == 0 || notices.Load() == 0 {
		t.Fatalf("dropped %d messages with %d notices; want some of each", dropped, notices.Load())
	}
	if r := driver.Verify(ctx, ts.log, meta); !r.OK {
		t.Fatalf("session does not verify: %v", r.Problems)
	}
	t.Logf("%d events; the slow watcher's client dropped %d feed messages and told it %d times; it read %d from the history (dave held %d turns meanwhile) and has them all",
		len(stored), dropped, notices.Load(), fromHistory, held.Load())
}

// serverBus runs the service on a nats-server the test configures itself
// (natsserver does not expose the write deadline).
type serverBus struct{ ns *natsd.Server }

func (b serverBus) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect("", append([]nats.Option{nats.Name(name), nats.InProcessServer(b.ns)}, opts...)...)
}

func (b serverBus) Interest(subject string) bool {
	return b.ns.GlobalAccount().SubscriptionInterest(subject)
}

// noticeLog keeps the server's log lines.
type noticeLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *noticeLog) add(format string, v ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
	l.mu.Unlock()
}
func (l *noticeLog) Noticef(format string, v ...any) { l.add(format, v...) }
func (l *noticeLog) Warnf(format string, v ...any)   { l.add(format, v...) }
func (l *noticeLog) Fatalf(format string, v ...any)  { l.add(format, v...) }
func (l *noticeLog) Errorf(format string, v ...any)  { l.add(format, v...) }
func (l *noticeLog) Debugf(format string, v ...any)  {}
func (l *noticeLog) Tracef(format string, v ...any)  {}

func (l *noticeLog) find(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// TestSlowConsumerDisconnectedByServer: a subscriber of the event feed
// that stops reading its connection altogether. The server's write to it
// blocks past the write deadline, so the server disconnects it and logs
// why; the session meanwhile runs to its end, its log complete.
func TestSlowConsumerDisconnectedByServer(t *testing.T) {
	logs := &noticeLog{}
	ns, err := natsd.NewServer(&natsd.Options{ServerName: "slow", DontListen: true, NoSigs: true, WriteDeadline: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ns.SetLogger(logs, false, false)
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	l := memlog.New()
	svc, err := server.New(server.Config{Log: l, Bus: serverBus{ns}, Logger: testLogger(t), CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx := context.Background()
	reply, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy", Wait: true})
	if err != nil {
		t.Fatal(err)
	}

	// A raw client: it connects, subscribes to the feed, and never reads again.
	conn, err := ns.InProcessConn()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO") {
		t.Fatalf("server said %q, %v", line, err)
	}
	fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1,\"name\":\"stalled watcher\"}\r\nSUB %s 1\r\nPING\r\n", wire.EventsSubject(reply.Session))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "PONG") {
			break
		}
	}

	started := time.Now()
	nc, err := serverBus{ns}.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request(wire.ControlSubject(reply.Session), []byte(`{"op":"start"}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	meta, err := svc.Wait(wctx, reply.Session)
	if err != nil || meta.Status != events.StatusFinished {
		t.Fatalf("session: %v, status %s", err, meta.Status)
	}
	took := time.Since(started)

	var why string
	for deadline := time.Now().Add(time.Minute); why == ""; time.Sleep(20 * time.Millisecond) {
		if why = logs.find("Slow Consumer"); why == "" && time.Now().After(deadline) {
			t.Fatal("the server logged no slow consumer")
		}
	}
	// The stalled connection is closed: reading it now ends (after whatever
	// the server managed to hand over before it gave up).
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := r.WriteTo(discard{})
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the stalled connection is still open after the server reported %q", why)
	}
	vz, _ := ns.Varz(nil)
	if vz.SlowConsumers == 0 {
		t.Fatal("the server counts no slow consumer")
	}
	if stored := readAll(t, l, reply.Session); uint64(len(stored)) != meta.LastSeq {
		t.Fatalf("the log holds %d events; the session ended at seq %d", len(stored), meta.LastSeq)
	}
	if rep := driver.Verify(ctx, l, meta); !rep.OK {
		t.Fatalf("session does not verify: %v", rep.Problems)
	}
	t.Logf("session of %d events finished in %s; the server: %q; the stalled watcher got %d bytes before it was cut off", meta.LastSeq, took.Round(time.Millisecond), why, n)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
