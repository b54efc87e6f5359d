package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/corpsim/corpsim/sim/server"
)

// TestSoak runs the real binary's corpsim soak for a bounded while
// (CORPSIM_SOAK_DURATION, default 30s) with every fault kind, and wants no
// event lost: every session's log gapless, every finished session verifying
// to its recorded state hash. With -short it is skipped, unless
// CORPSIM_SOAK_DURATION asks for it.
func TestSoak(t *testing.T) {
	v := os.Getenv("CORPSIM_SOAK_DURATION")
	if testing.Short() && v == "" {
		t.Skip("a 30s soak of the real binary (set CORPSIM_SOAK_DURATION to run it with -short)")
	}
	dur := 30 * time.Second
	if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CORPSIM_SOAK_DURATION=%q: not a positive duration", v)
		}
		dur = d
	}
	bin := corpsimBinary(t)
	// A liveness bound only: the soak's own duration, its grace period for
	// the sessions still running, and the checks afterwards.
	ctx, cancel := context.WithTimeout(context.Background(), dur+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "soak", "--duration", dur.String(), "--sessions", "4", "--seed", "11", "--json",
		"--data", t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("corpsim soak --duration %s --sessions 4 --seed 11 --json:\n%s", dur, stdout.String())
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("corpsim soak: %v", err)
	}
	var rep server.SoakReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	if rep.Lost != 0 || rep.Gaps != 0 || rep.Unverified != 0 {
		t.Errorf("lost %d events (gaps %d, sessions failing verify %d): %v", rep.Lost, rep.Gaps, rep.Unverified, rep.Problems)
	}
	if rep.Finished == 0 {
		t.Error("no session finished")
	}
	if rep.Failed != 0 {
		t.Errorf("%d sessions failed", rep.Failed)
	}
	if rep.EventsAppended == 0 {
		t.Error("no events appended")
	}
	for _, k := range server.FaultKinds {
		if rep.Faults[k] == 0 {
			t.Errorf("no %s fault injected (faults: %v)", k, rep.Faults)
		}
	}
	// What the faults must have left in the log, and on the watchers' side.
	if rep.Rejected == 0 || rep.Timeouts == 0 {
		t.Errorf("%d rejected actions and %d turn timeouts recorded; want some of each", rep.Rejected, rep.Timeouts)
	}
	if rep.Reconnects == 0 || rep.SlowNotices == 0 {
		t.Errorf("%d reconnects, %d slow-consumer notices; want some of each", rep.Reconnects, rep.SlowNotices)
	}
}
