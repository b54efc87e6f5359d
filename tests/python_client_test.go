package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/sim/simtest"
)

// lockedBuffer collects a process's output while it runs.
type lockedBuffer = simtest.Buffer

// TestPythonClientTrains runs the Python example training loop
// (agents/httpgw/python/example_train.py, standard library only) against a
// real `corpsim serve --http` process: two episodes (a session and its
// reset) stepped to their end, each episode's return equal to the score
// `corpsim score` recomputes from the log once the server has stopped.
func TestPythonClientTrains(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the Python client's end-to-end test needs it")
	}
	bin := corpsimBinary(t)
	data := t.TempDir()
	natsAddr, httpAddr := freeAddr(t), freeAddr(t)
	token := natsserver.NewToken()
	var stdout, stderr lockedBuffer
	srv := exec.Command(bin, "serve", "--listen", natsAddr, "--http", httpAddr, "--data", data, "--operator-token", token)
	srv.Stdout, srv.Stderr = &stdout, &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Process.Kill()
			<-exited
		}
	}()

	base := "http://" + httpAddr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("corpsim serve exited: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HTTP gateway did not come up on %s\nstderr:\n%s", httpAddr, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script := filepath.Join("..", "agents", "httpgw", "python", "example_train.py")
	train := exec.CommandContext(ctx, py, script, "--url", base, "--token", token, "--episodes", "2", "--epsilon", "0.3")
	train.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // leave no __pycache__ in the source tree
	var trainErr bytes.Buffer
	train.Stderr = &trainErr
	out, err := train.Output()
	if err != nil {
		t.Fatalf("example_train.py: %v\nstdout:\n%s\nstderr:\n%s\nserver stderr:\n%s", err, out, trainErr.String(), stderr.String())
	}
	t.Logf("example_train.py:\n%s", out)
	type episode struct {
		Episode int      `json:"episode"`
		Session string   `json:"session"`
		Return  float64  `json:"return"`
		Score   *float64 `json:"score"`
		Steps   int      `json:"steps"`
		Status  string   `json:"status"`
	}
	var eps []episode
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var e episode
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("output line %q is not JSON: %v", sc.Text(), err)
		}
		if e.Session != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) != 2 {
		t.Fatalf("got %d episodes, want 2", len(eps))
	}
	for _, e := range eps {
		if e.Status != "finished" || e.Steps == 0 || e.Score == nil || math.Abs(*e.Score-e.Return) > 1e-6 {
			t.Fatalf("episode %+v: want finished, with a return equal to the final score", e)
		}
	}

	// Stop the server with SIGTERM: it exits cleanly and unlocks the data folder.
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("corpsim serve exited with %v after SIGTERM\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("corpsim serve did not exit within 30s of SIGTERM\nstderr:\n%s", stderr.String())
	}

	// corpsim score recomputes each session's score from its log with the rubric.
	for i, e := range eps {
		out, err := exec.Command(bin, "score", e.Session, "--data", data, "--json").Output()
		if err != nil {
			t.Fatalf("corpsim score %s: %v\n%s", e.Session, err, out)
		}
		var res struct {
			Parent  string `json:"parent"`
			ForkSeq uint64 `json:"fork_seq"`
			Score   struct {
				TeamScore float64 `json:"team_score"`
			} `json:"score"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("corpsim score --json: %v in\n%s", err, out)
		}
		if math.Abs(res.Score.TeamScore-e.Return) > 1e-6 {
			t.Fatalf("episode %d (%s): return %.6f, corpsim score says %.6f", e.Episode, e.Session, e.Return, res.Score.TeamScore)
		}
		if i > 0 && (res.Parent != eps[0].Session || res.ForkSeq != 1) {
			t.Fatalf("episode %d (%s) is a fork of %s@%d, want a reset of %s", e.Episode, e.Session, res.Parent, res.ForkSeq, eps[0].Session)
		}
	}
}
