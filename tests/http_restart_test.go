package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// TestRestartKeepsHTTPSeats: a session created through the HTTP gateway of
// a real `corpsim serve --http`, its remote seat m00003 played greedily by
// an HTTP client (long-poll observe, act), is stopped by SIGTERM. A serve
// restarted on the same data and addresses resumes it and its gateway takes
// the seat back before it takes requests: the client goes on with the token
// it had (never refused), no turn times out, and the session finishes with
// the same log as an uninterrupted run of the same request. A session made
// over NATS with a remote seat is resumed but left to its own client.
func TestRestartKeepsHTTPSeats(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	dir := t.TempDir()
	src, err := os.ReadFile(longWorld(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	req := wire.CreateRequest{Source: string(src), Seed: 3, Agents: "greedy,m00003=remote"}

	data, addr, haddr := filepath.Join(dir, "data"), freeAddr(t), freeAddr(t)
	sp := startServeAt(t, addr, data, "--http", haddr)
	id, player := startHTTPPlayer(t, haddr, data, req)
	// A session created over NATS, its remote seat played by a NATS client
	// that reconnects by itself: resumed too, but not the gateway's to take.
	natsMade, err := sp.op.Create(requestCtx(t, time.Minute), wire.CreateRequest{Source: string(src), Seed: 4, Agents: "greedy,m00005=remote"})
	if err != nil {
		t.Fatal(err)
	}
	natsPlayer, err := client.Play(sp.url, natsMade.Seats["m00005"], &agents.Greedy{},
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer natsPlayer.Close()
	sp.waitFor(t, natsMade.Session, "100 events", time.Minute, func(st wire.ControlReply) bool { return st.Events >= 100 })
	sp.waitFor(t, id, "500 events", time.Minute, func(st wire.ControlReply) bool { return st.Events >= 500 })
	sp.stop(t, 20*time.Second)
	meta, stoppedAt := storedMeta(t, data, id)
	if meta.Status != events.StatusInterrupted {
		t.Fatalf("after SIGTERM the session is %s at %d, want interrupted", meta.Status, stoppedAt)
	}
	turnsBefore := player.turns()

	sp = startServeAt(t, addr, data, "--http", haddr)
	sp.waitFor(t, id, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	if !strings.Contains(sp.stdout.String(), "corpsim HTTP gateway took back the seats of 1 session(s): "+id+"\n") {
		t.Errorf("the restarted serve does not say its gateway took back the seats of %s, and of it alone (not %s, made over NATS):\n%s%s",
			id, natsMade.Session, sp.stdout.String(), sp.stderr.String())
	}
	status := player.wait(t, time.Minute)
	sp.stop(t, 20*time.Second)
	if status != "finished" {
		t.Errorf("the HTTP client was told the session is %q, want finished", status)
	}
	if refused := player.refusals(); len(refused) > 0 {
		t.Errorf("the gateway refused the seat's requests: %v", refused)
	}
	if after := player.turns() - turnsBefore; after == 0 {
		t.Errorf("the HTTP client played no turn after the restart")
	}

	// The uninterrupted run: the same request through another serve's gateway.
	refData, refHTTP := filepath.Join(dir, "ref"), freeAddr(t)
	rp := startServe(t, refData, "--http", refHTTP)
	ref, refPlayer := startHTTPPlayer(t, refHTTP, refData, req)
	rp.waitFor(t, ref, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	refPlayer.wait(t, time.Minute)
	rp.stop(t, 20*time.Second)

	l, rl := mustOpenStore(t, data), mustOpenStore(t, refData)
	defer l.Close()
	defer rl.Close()
	sameLogs(t, l, id, rl, ref, 1)
	if n := len(eventsOf(t, l, id, payload.EvTurnTimeout)); n != 0 {
		t.Errorf("%d turns timed out: the HTTP seat was not back when its session resumed", n)
	}
	t.Logf("stopped at event %d; the client played %d turns before and %d after the restart", stoppedAt, turnsBefore, player.turns()-turnsBefore)
}

// httpPlayer plays one seat greedily through the HTTP gateway until its
// session is over, riding out a server that goes away and comes back.
type httpPlayer struct {
	mu      sync.Mutex
	played  int
	refused []string // 4xx answers other than 409 (a turn already answered)
	status  string   // the session's status when the gateway said done
	done    chan struct{}
}

// startHTTPPlayer creates req through the gateway at haddr with the
// operator token of data, and plays its seat m00003.
func startHTTPPlayer(t *testing.T, haddr, data string, req wire.CreateRequest) (string, *httpPlayer) {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(data, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + haddr + "/v1/sessions"
	code, body := httpDo(t.Context(), "POST", base, strings.TrimSpace(string(tok)), req)
	if code != http.StatusCreated {
		t.Fatalf("create through the gateway: %d %s", code, body)
	}
	var reply wire.CreateReply
	if err := json.Unmarshal(body, &reply); err != nil {
		t.Fatal(err)
	}
	seat := reply.Seats["m00003"]
	p := &httpPlayer{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-p.done })
	go p.run(ctx, base+"/"+reply.Session+"/seats/m00003/", seat.Token)
	return reply.Session, p
}

func (p *httpPlayer) run(ctx context.Context, seatURL, token string) {
	defer close(p.done)
	greedy := &agents.Greedy{}
	for ctx.Err() == nil {
		code, body := httpDo(ctx, "GET", seatURL+"observation?wait=5s", token, nil)
		switch {
		case code == 0 || code >= 500: // the server is away, or restarting
			time.Sleep(50 * time.Millisecond)
			continue
		case code == http.StatusNoContent:
			continue
		case code != http.StatusOK:
			p.refuse(fmt.Sprintf("observe: %d %s", code, body))
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var done struct {
			Done   bool   `json:"done"`
			Status string `json:"status"`
		}
		if json.Unmarshal(body, &done) == nil && done.Done {
			p.mu.Lock()
			p.status = done.Status
			p.mu.Unlock()
			return
		}
		var obs org.Observation
		if err := json.Unmarshal(body, &obs); err != nil {
			p.refuse(fmt.Sprintf("observation: %v", err))
			return
		}
		acts, _ := greedy.Decide(ctx, obs)
		if acts == nil {
			acts = []org.Action{}
		}
		code, body = httpDo(ctx, "POST", seatURL+"act", token, org.Reply{Turn: obs.Turn, Actions: acts})
		switch {
		case code == http.StatusOK:
			p.mu.Lock()
			p.played++
			p.mu.Unlock()
		case code == 0 || code >= 500 || code == http.StatusConflict:
			// Away, or the turn went with the server that stopped: observe again.
		default:
			p.refuse(fmt.Sprintf("act: %d %s", code, body))
		}
	}
}

func (p *httpPlayer) refuse(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = append(p.refused, what)
}

func (p *httpPlayer) turns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.played
}

func (p *httpPlayer) refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refused)
}

// wait waits for the player to be told its session is over and returns the
// status it was told.
func (p *httpPlayer) wait(t *testing.T, limit time.Duration) string {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("the HTTP client was not told the session ended within %v", limit)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// httpDo sends a JSON request with a bearer token; code 0 means no answer.
func httpDo(ctx context.Context, method, url, token string, body any) (int, []byte) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(b)
	}
	rq, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, []byte(err.Error())
	}
	rq.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(rq)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
