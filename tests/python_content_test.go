package tests

import (
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
)

// TestPythonClientPlaysContent runs the Python content example
// (agents/httpgw/python/example_content.py, standard library only) against
// a real `corpsim serve --http` on billing-support: it reads invoices with
// get and writes refunds with update over HTTP, and `corpsim score`
// recomputes from the log an outcome score at its maximum.
func TestPythonClientPlaysContent(t *testing.T) {
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
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HTTP gateway did not come up on %s\nstderr:\n%s", httpAddr, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script := filepath.Join("..", "agents", "httpgw", "python", "example_content.py")
	play := exec.CommandContext(ctx, py, script, "--url", base, "--token", token)
	play.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := play.Output()
	if err != nil {
		t.Fatalf("example_content.py: %v\n%s\nserver stderr:\n%s", err, out, stderr.String())
	}
	var res struct {
		Session       string `json:"session"`
		Status        string `json:"status"`
		Reads, Writes int
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if res.Status != "finished" || res.Reads == 0 || res.Writes == 0 {
		t.Fatalf("got %+v; want a finished session with reads and writes", res)
	}
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Fatal("corpsim serve did not exit within 30s of SIGTERM")
	}
	b, err := exec.Command(bin, "score", res.Session, "--data", data, "--json").Output()
	if err != nil {
		t.Fatalf("corpsim score: %v\n%s", err, b)
	}
	var sc struct {
		Score struct {
			Outcome       float64 `json:"outcome"`
			OutcomeMax    float64 `json:"outcome_max"`
			WrongOutcomes int     `json:"wrong_outcomes"`
		} `json:"score"`
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	// Every step it completed has its outcome right (a case still open at
	// the horizon scores 0 without being wrong).
	if sc.Score.OutcomeMax == 0 || sc.Score.Outcome < 0.9*sc.Score.OutcomeMax || sc.Score.Outcome != math.Trunc(sc.Score.Outcome) || sc.Score.WrongOutcomes != 0 {
		t.Fatalf("outcome %v of %v, %d wrong; want every completed outcome right, and nearly all completed", sc.Score.Outcome, sc.Score.OutcomeMax, sc.Score.WrongOutcomes)
	}
	t.Logf("python client: %d reads, %d writes, outcome %v of %v", res.Reads, res.Writes, sc.Score.Outcome, sc.Score.OutcomeMax)
}
