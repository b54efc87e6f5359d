package tests

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events/payload"
)

// TestNodeClientPlaysASeat: a seat is played by a Node.js program using the
// npm "nats" package (pinned), with the seat's own token, over loopback.
// The session finishes with no timeouts and the seat's work counted.
func TestNodeClientPlaysASeat(t *testing.T) {
	node, script, dir := nodeClient(t, "nats@2.29.3", "node_seat.js")

	ts := startServer(t)
	reply, err := ts.op.Create(requestCtx(t, time.Minute), wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote"})
	if err != nil {
		t.Fatal(err)
	}
	bob := reply.Seats["bob"]
	cmd := exec.Command(node, script, ts.url, bob.Token, bob.Subject)
	cmd.Env = append(cmd.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("the node client did not start: %s", stderr.String())
	}
	meta := ts.wait(t, reply.Session)
	if n := len(eventsOf(t, ts.log, reply.Session, payload.EvTurnTimeout)); n != 0 {
		t.Fatalf("%d turns timed out: %s", n, stderr.String())
	}
	turns, done := 0, 0
	for _, ev := range eventsOf(t, ts.log, reply.Session, "") {
		if ev.Actor != "bob" {
			continue
		}
		switch ev.Type {
		case payload.EvTurn:
			turns++
		case payload.EvTaskCompleted:
			done++
		}
	}
	if turns == 0 || done == 0 {
		t.Fatalf("bob (node) took %d turns and completed %d tasks", turns, done)
	}
	t.Logf("node client: %d turns, %d tasks completed; session %s ended with %d events", turns, done, reply.Session, meta.LastSeq)
}
