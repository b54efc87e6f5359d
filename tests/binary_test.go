package tests

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// corpsimBinary builds the real command once per test run.
func corpsimBinary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "corpsim-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "corpsim")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/corpsim/corpsim/cmd/corpsim").CombinedOutput()
		if err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		tb.Fatalf("build corpsim: %v\n%s", binErr, binPath)
	}
	return binPath
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// requestCtx bounds a test's requests to a server it started: a request
// the server never answers fails the test after limit (a generous bound:
// never a wall-clock assertion) instead of holding it to go test's
// -timeout, where its failure report would be lost.
func requestCtx(tb testing.TB, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	tb.Cleanup(cancel)
	return ctx
}
