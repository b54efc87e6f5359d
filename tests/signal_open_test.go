package tests

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalWhileOpeningTheStore: a command whose store cannot be opened
// (Pebble blocks replaying a WAL: here a named pipe that has a writer and
// no data, as a disk that never answers) still honours SIGTERM and
// SIGINT: it exits, non-zero, saying it stopped while opening the store.
// Before, the signal was caught and ignored while Pebble's Open ran. The
// 60 s bound only keeps the test from hanging.
func TestSignalWhileOpeningTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real corpsim processes")
	}
	data, s, _ := faultSession(t)
	wal := filepath.Join(data, "999999.log")
	if err := syscall.Mkfifo(wal, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tt := range []struct {
		args []string
		sig  syscall.Signal
	}{
		{[]string{"sessions", "--data", data}, syscall.SIGTERM},
		{[]string{"verify", s, "--data", data}, syscall.SIGINT},
		{[]string{"run", "--world", "startup", "--data", data}, syscall.SIGTERM},
		{[]string{"serve", "--data", data, "--listen", freeAddr(t)}, syscall.SIGTERM},
	} {
		t.Run(tt.args[0], func(t *testing.T) {
			p := startCorpsim(t, t.TempDir(), tt.args...)
			// Once the pipe has a reader, the command is inside Pebble's
			// Open; this end, kept open and silent, holds it there.
			var w *os.File
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				f, err := os.OpenFile(wal, os.O_WRONLY|syscall.O_NONBLOCK, 0)
				if err == nil {
					w = f
					break
				}
				if !errors.Is(err, syscall.ENXIO) {
					t.Fatal(err)
				}
				if !p.running() || time.Now().After(deadline) {
					t.Fatalf("corpsim %s never read the WAL (running: %v)\n%s", tt.args[0], p.running(), p.stderr.String())
				}
			}
			defer w.Close()
			if err := p.cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			code := p.wait(t, 60*time.Second)
			if code == 0 || code == -1 {
				t.Errorf("exit code %d after %v, want a non-zero exit of its own", code, tt.sig)
			}
			if out := p.stderr.String(); !strings.Contains(out, "stopped while opening the store "+data) {
				t.Errorf("stderr does not say it stopped while opening the store:\n%s", out)
			}
		})
	}
}
