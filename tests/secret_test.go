package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/sim/app"
)

// corpsim run with --secret-file (or $CORPSIM_SECRET) keys the session's
// draws on a real Pebble log: the same secret and seed make the same
// session, the file's final line break is not part of the secret, another
// secret or none makes another; the keyed session replays, verifies and
// forks with another seed without the secret; eval takes it too; an empty
// or missing secret file is refused by name before anything runs.
func TestSecretKeysTheSession(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--world", "meetings", "--seed", "3", "--agents", "diligent", "--data", data}
	keyed := cliResult(t, append(args, "--secret-file", file)...)
	again := cliResult(t, append(args, "--secret-file", file)...)
	plain := cliResult(t, args...)
	t.Setenv(cli.SecretEnv, "s3cret")
	fromEnv := cliResult(t, args...)
	t.Setenv(cli.SecretEnv, "another")
	other := cliResult(t, args...)
	t.Setenv(cli.SecretEnv, "")
	if keyed.StateHash != again.StateHash || keyed.StateHash != fromEnv.StateHash {
		t.Fatalf("one secret and seed made sessions %s, %s and (from $%s) %s", keyed.StateHash, again.StateHash, cli.SecretEnv, fromEnv.StateHash)
	}
	if keyed.StateHash == plain.StateHash || keyed.StateHash == other.StateHash {
		t.Fatalf("the keyed session %s is the unkeyed one (%s) or another secret's (%s)", keyed.StateHash, plain.StateHash, other.StateHash)
	}
	// The final line break alone is not the secret's: CRLF is one; a
	// second line break is part of it (every trailing CR and LF was
	// dropped, so that such secrets collided).
	for text, same := range map[string]bool{"s3cret\r\n": true, "s3cret\n\n": false} { // order: each case is its own
		f := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := cliResult(t, append(args, "--secret-file", f)...); (r.StateHash == keyed.StateHash) != same {
			t.Errorf("secret file %q: session %s, %q's %s; want them the same: %v", text, r.StateHash, "s3cret\n", keyed.StateHash, same)
		}
	}
	if !keyed.Keyed || !fromEnv.Keyed || plain.Keyed {
		t.Fatalf("results' keyed: %v (--secret-file), %v ($%s), %v (none)", keyed.Keyed, fromEnv.Keyed, cli.SecretEnv, plain.Keyed)
	}
	evs := storedEvents(t, data, keyed.Session)
	if first := string(evs[0].Payload); !strings.Contains(first, `"format":9`) || !strings.Contains(first, `"draw_key":"`) || strings.Contains(first, "s3cret") {
		t.Fatalf("the keyed session.started (format 9, a draw key, never the secret): %.300s", first)
	}
	if first := string(storedEvents(t, data, plain.Session)[0].Payload); !strings.Contains(first, `"format":9`) || strings.Contains(first, "draw_key") {
		t.Fatalf("the unkeyed session.started (format 9, no key): %.300s", first)
	}
	// Training data does not carry the key.
	if out := mustCLI(t, "export", keyed.Session, "--format", "jsonl", "--data", data); strings.Contains(out, "draw_key\"") || !strings.Contains(out, `"draw_key_withheld":true`) {
		t.Fatalf("export --format jsonl of the keyed session: %.400s", out)
	}
	if out := mustCLI(t, "replay", keyed.Session, "--data", data); !strings.Contains(out, "state hash matches") {
		t.Fatalf("replay of the keyed session: %s", out)
	}
	fork := cliResult(t, "fork", keyed.Session, "--at", "15", "--seed", "9", "--agents", "diligent", "--data", data)
	if !fork.Keyed {
		t.Error("the keyed session's fork does not say it is keyed")
	}
	if out := mustCLI(t, "verify", fork.Session, "--data", data); !strings.Contains(out, ": ok (state hash "+fork.StateHash+")") {
		t.Fatalf("verify of the keyed session's fork: %s", out)
	}
	if out := mustCLI(t, "eval", "--world", "meetings", "--agents", "oracle", "--seeds", "2", "--secret-file", file); !strings.Contains(out, "team score") || !strings.Contains(out, "draws keyed by a secret") {
		t.Fatalf("eval --secret-file: %s", out)
	}

	// The longest secret, ended by a line break, is taken (the size was
	// checked before the line break was dropped).
	long := filepath.Join(t.TempDir(), "long")
	if err := os.WriteFile(long, []byte(strings.Repeat("k", 4096)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runCLI(t, "run", "--world", "meetings", "--ephemeral", "--secret-file", long); code != 0 {
		t.Errorf("a 4,096-byte secret and its line break: exit %d, %s", code, errs)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{empty: "--secret-file " + empty + " is empty", filepath.Join(data, "none"): "--secret-file: open "} { // order: each case is its own
		_, errs, code := runCLI(t, "run", "--world", "meetings", "--ephemeral", "--secret-file", f)
		if code != cli.ExitUsage || !strings.Contains(errs, want) {
			t.Errorf("run --secret-file %s: exit %d, %q; want %d saying %q", f, code, errs, cli.ExitUsage, want)
		}
	}
}

// A fork that goes on with another seed keeps its session's hidden truth
// — the records it started with, its colleagues' hidden rules — and the
// oracle is told that truth: on billing-support it gets every outcome
// right in the fork as in its parent, keyed or not (it scored 0, with
// two thirds of its outcomes wrong, when it read records drawn for the
// fork's seed).
func TestOracleForkedWithAnotherSeed(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, keyed := range [][]string{nil, {"--secret-file", file}} {
		root := cliResult(t, append([]string{"run", "--world", "billing-support", "--seed", "1", "--agents", "oracle", "--data", data}, keyed...)...)
		fork := cliResult(t, "fork", root.Session, "--at", "1", "--seed", "9", "--agents", "oracle", "--data", data)
		for name, r := range map[string]*app.RunResult{"session": root, "fork": fork} { // order: each result is its own
			if s := r.Score; s.OutcomeMax == 0 || s.Outcome != s.OutcomeMax {
				t.Errorf("keyed %v: the oracle's %s got %g of %g outcomes right", keyed != nil, name, s.Outcome, s.OutcomeMax)
			}
		}
	}
}
