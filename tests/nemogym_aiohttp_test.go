package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// aiohttpPython returns a python3 that imports aiohttp (Debian's
// python3-aiohttp, what NeMo Gym's clients are built on). Without one the
// test skips, unless CORPSIM_REQUIRE_AIOHTTP is set (CI sets it and
// installs the package).
func aiohttpPython(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if py, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, py)
	}
	for _, py := range candidates {
		if exec.Command(py, "-c", "import aiohttp").Run() == nil {
			return py
		}
	}
	if os.Getenv("CORPSIM_REQUIRE_AIOHTTP") != "" {
		t.Fatal("no python3 imports aiohttp, and CORPSIM_REQUIRE_AIOHTTP is set (apt-get install -y python3-aiohttp)")
	}
	t.Skip("no python3 imports aiohttp (apt-get install -y python3-aiohttp; set CORPSIM_REQUIRE_AIOHTTP=1 to fail instead)")
	return ""
}

// TestNemoGymAiohttpRollouts: rollouts made as NeMo Gym's own agents make
// them, by a client corpsim did not write: aiohttp with no cookie jar, the
// cookies passed by hand on every call (tests/testdata/nemo_rollout.py).
// simple_agent's flow (seed_session, tool calls, each answer's cookies
// replacing the last, verify) and gymnasium_agent's (reset, step, close)
// each play bob to the session's end with a plain policy; verify's reward
// and the steps' rewards equal the team score `corpsim score` recomputes
// from the log, and verify's member component bob's delivered value. One
// step sends 17 calls, one more than a turn takes: every output says the
// turn was refused whole. A call without the session's cookie, or with a
// forged one, reaches none. The routes that hold no session answer as
// NeMo Gym's base resources server does: /aggregate_metrics (the last call
// of its rollout collection, through simple_agent) the statistics of the
// replies it is sent, checked against Python's statistics module, and
// /reverify_mode "unsupported".
func TestNemoGymAiohttpRollouts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	py := aiohttpPython(t)
	data, haddr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "nemo_rollout.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, py, script, "http://"+haddr+"/nemo", "startup", "3", "bob")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nemo_rollout.py: %v\nstdout:\n%s\nstderr:\n%s\nserver stderr:\n%s", err, out, stderr.String(), sp.stderr.String())
	}
	type rollout struct {
		Flow         string  `json:"flow"`
		Session      string  `json:"session"`
		Reward       float64 `json:"reward"`
		MemberReward float64 `json:"member_reward"`
		Rewards      float64 `json:"rewards"`
		Calls        int     `json:"calls"`
		Steps        int     `json:"steps"`
		OverLimit    int     `json:"over_limit"` // the calls of the step of 17, each refused
		Status       string  `json:"status"`
		Terminated   bool    `json:"terminated"`
		// The aggregate line: the routes without a session.
		ReverifyMode string  `json:"reverify_mode"`
		Checked      int     `json:"checked"`
		MeanReward   float64 `json:"mean_reward"`
	}
	var got []rollout
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var r rollout
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("nemo_rollout.py printed %q: %v", sc.Text(), err)
		}
		got = append(got, r)
	}
	if len(got) != 3 || got[0].Flow != "simple" || got[1].Flow != "gymnasium" || got[2].Flow != "aggregate" {
		t.Fatalf("nemo_rollout.py printed %s; want the simple and the gymnasium flows, then the aggregate", out)
	}
	sp.stop(t, 20*time.Second)
	simple, gym, agg := got[0], got[1], got[2]
	// The script checked every statistic against its own; the mean reward
	// is the verified rollout's and the two it made up (1.5 and -2).
	if agg.ReverifyMode != "unsupported" || agg.Checked < 30 || math.Abs(agg.MeanReward-(simple.Reward+1.5-2)/3) > 1e-9 {
		t.Errorf("aggregate_metrics and reverify_mode: %+v (simple reward %g)", agg, simple.Reward)
	}
	res := scoreOf(t, data, simple.Session)
	if simple.Status != "finished" || res.Score.TeamScore <= 0 || math.Abs(simple.Reward-res.Score.TeamScore) > 1e-6 {
		t.Errorf("simple_agent's rollout: %+v; corpsim score says %g", simple, res.Score.TeamScore)
	}
	if bob := deliveredBy(res, "bob"); bob <= 0 || math.Abs(simple.MemberReward-bob) > 1e-6 {
		t.Errorf("verify's member component %g; bob delivered %g", simple.MemberReward, bob)
	}
	res = scoreOf(t, data, gym.Session)
	if gym.OverLimit != 17 {
		t.Errorf("gymnasium_agent's step of 17 calls: %d outputs refused; want all 17", gym.OverLimit)
	}
	if !gym.Terminated || gym.Status != "finished" || res.Score.TeamScore <= 0 || math.Abs(gym.Rewards-res.Score.TeamScore) > 1e-6 {
		t.Errorf("gymnasium_agent's rollout: %+v; corpsim score says %g", gym, res.Score.TeamScore)
	}
	t.Logf("simple: %d calls, reward %.2f (bob %.2f); gymnasium: %d steps, rewards %.2f", simple.Calls, simple.Reward, simple.MemberReward, gym.Steps, gym.Rewards)
}
