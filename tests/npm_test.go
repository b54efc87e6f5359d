package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// nodeClient installs a pinned npm package (a protocol client corpsim did
// not write) into a folder of the test's and copies the testdata script
// beside it, where an ES module finds its packages (CommonJS scripts find
// them through NODE_PATH, which the caller may set to DIR/node_modules).
// It returns node, the copied script and the folder; it skips the test
// when node or npm is missing (.ci/run installs them).
func nodeClient(t *testing.T, pkg, script string) (node, copied, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; .ci/run installs nodejs and npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed; .ci/run installs nodejs and npm")
	}
	dir = t.TempDir()
	if out, err := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", dir, pkg).CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", pkg, err, out)
	}
	_, file, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(file), "testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	copied = filepath.Join(dir, script)
	if err := os.WriteFile(copied, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, copied, dir
}
