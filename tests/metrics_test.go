package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// serveProc is a real `corpsim serve` started by a test, with an operator
// connected to it. Its output may be read while it runs.
type serveProc struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{} // closed when the process has exited
	url, data      string
	op             *client.Operator
}

// startServe starts `corpsim serve --data data --listen ADDR args…` and
// connects as the operator (the token it keeps in data).
func startServe(tb testing.TB, data string, args ...string) *serveProc {
	tb.Helper()
	return startServeAt(tb, freeAddr(tb), data, args...)
}

// startServeAt is startServe with the NATS server listening on addr.
func startServeAt(tb testing.TB, addr, data string, args ...string) *serveProc {
	tb.Helper()
	sp := &serveProc{url: "nats://" + addr, data: data, done: make(chan struct{}),
		cmd: exec.Command(corpsimBinary(tb), append([]string{"serve", "--data", data, "--listen", addr}, args...)...)}
	sp.cmd.Dir = tb.TempDir()
	sp.cmd.Stdout, sp.cmd.Stderr = &sp.stdout, &sp.stderr
	if err := sp.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		_ = sp.cmd.Wait()
		close(sp.done)
	}()
	tb.Cleanup(func() {
		if sp.running() {
			_ = sp.cmd.Process.Kill()
		}
		<-sp.done
	})
	// It says so on stdout once it takes requests (and has resumed what it resumes).
	for start := time.Now(); !strings.Contains(sp.stdout.String(), "corpsim serving on"); time.Sleep(10 * time.Millisecond) {
		if !sp.running() || time.Since(start) > time.Minute {
			tb.Fatalf("corpsim serve did not start\n%s%s", sp.stdout.String(), sp.stderr.String())
		}
	}
	tok, _ := os.ReadFile(filepath.Join(data, "operator.token"))
	op, err := client.Dial(sp.url, strings.TrimSpace(string(tok)))
	if err != nil {
		tb.Fatalf("cannot reach corpsim serve at %s: %v\n%s", sp.url, err, sp.stderr.String())
	}
	sp.op = op
	tb.Cleanup(op.Close)
	return sp
}

func (sp *serveProc) running() bool {
	select {
	case <-sp.done:
		return false
	default:
		return true
	}
}

// status asks the server where a session stands: on its control subject
// while it runs, else from the server's list of sessions (a session that
// ended no longer answers control messages).
func (sp *serveProc) status(session string) (wire.ControlReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sp.op.Control(ctx, session, wire.OpStatus)
	if err == nil {
		return st, nil
	}
	msg, lerr := sp.op.Conn().RequestWithContext(ctx, wire.ListSubject, nil)
	if lerr != nil {
		return st, err
	}
	var metas []events.SessionMeta
	if json.Unmarshal(msg.Data, &metas) != nil {
		return st, err
	}
	for _, m := range metas {
		if m.ID == session && m.Status != events.StatusRunning {
			return wire.ControlReply{Session: session, Status: string(m.Status), Events: m.LastSeq}, nil
		}
	}
	return st, err
}

// waitFor polls the session's status until ok says so. Errors (a
// restarted server that has not resumed the session yet) are retried.
func (sp *serveProc) waitFor(tb testing.TB, session, what string, limit time.Duration, ok func(wire.ControlReply) bool) wire.ControlReply {
	tb.Helper()
	for deadline := time.Now().Add(limit); ; {
		st, err := sp.status(session)
		if err == nil && ok(st) {
			return st
		}
		if !sp.running() || time.Now().After(deadline) {
			tb.Fatalf("session %s: %s did not happen within %s (status %s, %d events, error %v)\n%s", session, what, limit, st.Status, st.Events, err, sp.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and wants exit code 0 within limit; it returns how long that took.
func (sp *serveProc) stop(tb testing.TB, limit time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	if err := sp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-sp.done:
	case <-time.After(limit):
		_ = sp.cmd.Process.Kill()
		<-sp.done
		tb.Fatalf("serve did not exit within %s of SIGTERM\n%s", limit, sp.stderr.String())
	}
	if code := sp.cmd.ProcessState.ExitCode(); code != 0 {
		tb.Fatalf("serve exited %d after SIGTERM, want 0\n%s", code, sp.stderr.String())
	}
	return time.Since(start)
}

// scrape is one parsed /metrics page: each sample by its name and labels as
// printed (`corpsim_seats{kind="remote"}`), and each family's type.
type scrape struct {
	samples map[string]float64
	types   map[string]string
}

// scrapeClient bounds a scrape, its failure report too: a server that
// never answers fails the test rather than holding it.
var scrapeClient = &http.Client{Timeout: 30 * time.Second}

func scrapeMetrics(tb testing.TB, url string) scrape {
	tb.Helper()
	resp, err := scrapeClient.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		tb.Fatalf("GET %s: content type %q, want the text exposition format", url, ct)
	}
	s := scrape{samples: map[string]float64{}, types: map[string]string{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			s.types[f[2]] = f[3]
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			tb.Fatalf("metrics line %q: %v", line, err)
		}
		s.samples[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// get returns a sample, failing if it is missing.
func (s scrape) get(tb testing.TB, key string) float64 {
	tb.Helper()
	v, ok := s.samples[key]
	if !ok {
		tb.Fatalf("no sample %s in the scrape", key)
	}
	return v
}

// want checks a sample's value.
func (s scrape) want(tb testing.TB, key string, want float64) {
	tb.Helper()
	if got := s.get(tb, key); got != want {
		tb.Errorf("%s = %v, want %v", key, got, want)
	}
}

// misbehavingSeat plays a remote seat badly: it leaves its first three
// turns unanswered (each a turn.timeout), then sends a reply that is not
// JSON, an action of an unknown type and a claim of a task that does not
// exist (three action.rejected), and then plays greedy.
type misbehavingSeat struct {
	mu    sync.Mutex
	turns int
}

func (m *misbehavingSeat) handle(msg *nats.Msg) {
	var obs org.Observation
	if err := json.Unmarshal(msg.Data, &obs); err != nil {
		return
	}
	m.mu.Lock()
	n := m.turns
	m.turns++
	m.mu.Unlock()
	var reply []byte
	switch n {
	case 0, 1, 2:
		return // no answer: the turn times out
	case 3:
		reply = []byte("this is not JSON")
	case 4:
		reply = fmt.Appendf(nil, `{"turn":%d,"actions":[{"type":"teleport"}]}`, obs.Turn)
	case 5:
		reply = fmt.Appendf(nil, `{"turn":%d,"actions":[{"type":"claim","task":"no-such-task"}]}`, obs.Turn)
	default:
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), obs)
		reply, _ = json.Marshal(org.Reply{Turn: obs.Turn, Actions: acts})
	}
	_ = msg.Respond(reply)
}

// TestMetrics runs a real `corpsim serve --metrics ADDR --http ADDR` with a
// session of the startup world: greedy built-in agents and bob, a remote
// seat that times out three turns and sends three replies the engine
// rejects. It scrapes /metrics (on both listeners) while the session waits
// to start and after it finished, and checks every documented series: the
// gauges by status and kind, events appended equal to the session's event
// count, rejections by kind and rule and timeouts equal to what the log
// records, both latency histograms, and the Go and process collectors.
func TestMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data := t.TempDir()
	maddr, haddr := freeAddr(t), freeAddr(t)
	sp := startServe(t, data, "--metrics", maddr, "--http", haddr)
	metricsURL := "http://" + maddr + "/metrics"

	ctx := context.Background()
	reply, err := sp.op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote", Wait: true, TurnTimeout: "300ms"})
	if err != nil {
		t.Fatal(err)
	}
	bob := reply.Seats["bob"]
	nc, err := nats.Connect(sp.url, nats.Token(bob.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	seat := &misbehavingSeat{}
	if _, err := nc.Subscribe(bob.Subject, seat.handle); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	// Waiting for its start, the session counts as running, with its seats.
	before := scrapeMetrics(t, metricsURL)
	before.want(t, `corpsim_sessions{status="running"}`, 1)
	before.want(t, `corpsim_sessions{status="finished"}`, 0)
	before.want(t, `corpsim_seats{kind="builtin"}`, 4)
	before.want(t, `corpsim_seats{kind="remote"}`, 1)
	before.want(t, `corpsim_seats{kind="llm"}`, 0)
	before.want(t, `corpsim_events_appended_total`, 0)

	if _, err := sp.op.Control(ctx, reply.Session, wire.OpStart); err != nil {
		t.Fatal(err)
	}
	st := sp.waitFor(t, reply.Session, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })

	// The session reports finished a moment before the server marks it
	// ended (its gauges move then): wait for that, bounded.
	after := scrapeMetrics(t, metricsURL)
	for deadline := time.Now().Add(30 * time.Second); after.samples[`corpsim_sessions{status="finished"}`] != 1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		after = scrapeMetrics(t, metricsURL)
	}
	viaHTTP := scrapeMetrics(t, "http://"+haddr+"/metrics")
	for name, typ := range map[string]string{
		"corpsim_sessions": "gauge", "corpsim_seats": "gauge",
		"corpsim_events_appended_total": "counter", "corpsim_append_duration_seconds": "histogram",
		"corpsim_turn_duration_seconds": "histogram", "corpsim_actions_rejected_total": "counter",
		"corpsim_turn_timeouts_total": "counter", "go_goroutines": "gauge", "process_resident_memory_bytes": "gauge",
	} {
		for where, s := range map[string]scrape{"--metrics": after, "--http": viaHTTP} {
			if got := s.types[name]; got != typ {
				t.Errorf("%s on the %s listener: type %q, want %s", name, where, got, typ)
			}
		}
	}
	after.want(t, `corpsim_sessions{status="running"}`, 0)
	after.want(t, `corpsim_sessions{status="paused"}`, 0)
	after.want(t, `corpsim_sessions{status="finished"}`, 1)
	after.want(t, `corpsim_sessions{status="failed"}`, 0)
	for _, k := range []string{"builtin", "remote", "llm"} {
		after.want(t, `corpsim_seats{kind="`+k+`"}`, 0)
	}
	after.want(t, `corpsim_events_appended_total`, float64(st.Events))
	after.want(t, `corpsim_turn_timeouts_total`, 3)
	after.want(t, `corpsim_turn_duration_seconds_count{outcome="unanswered"}`, 3)
	if n := after.get(t, `corpsim_turn_duration_seconds_count{outcome="answered"}`); n < 10 {
		t.Errorf("%v answered turns observed, want the session's turns", n)
	}
	if sum := after.get(t, `corpsim_turn_duration_seconds_sum{outcome="unanswered"}`); sum < 3*0.3 {
		t.Errorf("three timed-out turns took %vs in all, want at least 3×300ms", sum)
	}
	batches := after.get(t, `corpsim_append_duration_seconds_count`)
	if batches < 1 || batches > float64(st.Events) || after.get(t, `corpsim_append_duration_seconds_sum`) <= 0 {
		t.Errorf("append histogram: %v batches for %d events, sum %v", batches, st.Events, after.samples[`corpsim_append_duration_seconds_sum`])
	}
	if after.get(t, `corpsim_append_duration_seconds_bucket{le="+Inf"}`) != batches {
		t.Error("append histogram's +Inf bucket differs from its count")
	}
	if after.get(t, "go_goroutines") < 1 || after.get(t, "process_resident_memory_bytes") <= 0 {
		t.Error("Go or process collector reports nothing")
	}
	if got := viaHTTP.get(t, `corpsim_events_appended_total`); got != float64(st.Events) {
		t.Errorf("on the --http listener, events appended = %v, want %d", got, st.Events)
	}

	// The rejections by kind and rule, and the timeouts, are what the log records.
	sp.stop(t, 30*time.Second)
	l := mustOpenStore(t, data)
	defer l.Close()
	wantRejected := map[string]float64{}
	for _, ev := range eventsOf(t, l, reply.Session, payload.EvActionRejected) {
		p := payloadOf[payload.ActionRejected](t, ev)
		wantRejected[`corpsim_actions_rejected_total{kind="`+p.Kind+`",rule="`+p.Rule+`"}`]++
	}
	if len(wantRejected) < 2 {
		t.Fatalf("the log records rejections of %d kinds, want the seat's malformed reply and refused actions: %v", len(wantRejected), wantRejected)
	}
	gotRejected := map[string]float64{}
	for k, v := range after.samples {
		if strings.HasPrefix(k, "corpsim_actions_rejected_total{") {
			gotRejected[k] = v
		}
	}
	if fmt.Sprint(gotRejected) != fmt.Sprint(wantRejected) {
		t.Errorf("rejections: metrics say %v, the log %v", gotRejected, wantRejected)
	}
	if n := len(eventsOf(t, l, reply.Session, payload.EvTurnTimeout)); n != 3 {
		t.Errorf("the log records %d turn timeouts, want 3", n)
	}
	t.Logf("%d events in %v batches; rejections %v", st.Events, batches, gotRejected)
}
