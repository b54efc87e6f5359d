package pebblelog

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
)

// fullFile is a file on a disk another writer fills: its next fails
// writes take only room bytes each and fail with ENOSPC.
type fullFile struct {
	vfs.File
	fails, room int
	data        []byte
}

func (f *fullFile) Write(p []byte) (int, error) {
	if f.fails > 0 {
		f.fails--
		n := min(f.room, len(p))
		f.data = append(f.data, p[:n]...)
		return n, syscall.ENOSPC
	}
	f.data = append(f.data, p...)
	return len(p), nil
}

// A write of the WAL that meets a full disk deletes the ballast and
// writes the rest of its bytes in the room it held (Pebble stops the
// database at a failed WAL write); on a disk that stays full, it fails as
// the disk did. Only WAL files are wrapped.
func TestWALWriteUsesBallast(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create(BallastName, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	sp := &space{fs: fs, reserve: 4 << 20, log: hclog.NewNullLogger(), ballast: true, walWait: -1, known: true}

	full := &fullFile{fails: 1, room: 3}
	w := walFile{File: full, space: sp}
	if n, err := w.Write([]byte("0123456789")); n != 10 || err != nil || string(full.data) != "0123456789" {
		t.Fatalf("a WAL write on a full disk with the ballast: wrote %d (%q), %v; want all of it", n, full.data, err)
	}
	if _, err := fs.Stat(BallastName); sp.ballast || !sp.released || err == nil {
		t.Fatalf("after the write: ballast %v, released %v, file %v; want it deleted", sp.ballast, sp.released, err)
	}
	if sp.known {
		t.Fatal("after a WAL write met a full disk, the Log's next write would not ask the disk's free space afresh")
	}

	// The ballast gone (here by the write before; as often by a session's
	// end recorded on the same full disk), the write tries once more.
	full.fails = 1
	if n, err := w.Write([]byte("abcdef")); n != 6 || err != nil {
		t.Fatalf("a WAL write meeting a full disk once, the ballast gone: wrote %d, %v; want all of it", n, err)
	}
	full.fails = 2
	if n, err := w.Write([]byte("abcdef")); n != 6 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a WAL write on a disk that stays full: wrote %d, %v; want 3+3 and ENOSPC", n, err)
	}

	room := roomFS{FS: fs, space: sp}
	for name, wal := range map[string]bool{"000004.log": true, "000005.sst": false, "MANIFEST-000001": true, "OPTIONS-000003": false} {
		f, err := room.Create(name, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(walFile); ok != wal {
			t.Errorf("%s: wrapped %v, want %v", name, ok, wal)
		}
		f.Close()
	}
	if f, err := room.ReuseForWrite("000004.log", "000006.log", vfs.WriteCategoryUnspecified); err != nil {
		t.Fatal(err)
	} else if _, ok := f.(walFile); !ok {
		t.Errorf("a recycled WAL file is not wrapped")
	}
}

// A write of the WAL that meets a disk that stays full waits for room (for
// walWait if positive, else until the Log closes), trying again every
// FullDiskPoll; once the disk has room, it writes the rest of its bytes,
// each once. It gives up at walWait, or at once when the Log closes.
func TestWALWriteWaitsForRoom(t *testing.T) {
	stop := make(chan struct{})
	sp := &space{fs: vfs.NewMem(), log: hclog.NewNullLogger(), walStop: stop} // walWait 0: until the Log closes
	full := &fullFile{fails: 5, room: 2}
	w := walFile{File: full, space: sp, name: "000004.log"}
	start := time.Now()
	if n, err := w.Write([]byte("0123456789abcdef")); n != 16 || err != nil || string(full.data) != "0123456789abcdef" {
		t.Fatalf("a WAL write on a disk full for 5 tries: wrote %d (%q), %v; want all of it, once", n, full.data, err)
	}
	if waited := time.Since(start); waited < 3*FullDiskPoll {
		t.Fatalf("it waited %v; want at least 3 polls of %v", waited, FullDiskPoll)
	}

	sp.walWait = 3 * FullDiskPoll
	full.fails = 1 << 30
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "FullDiskWait") {
		t.Fatalf("a WAL write on a disk full for longer than the wait: %v; want ENOSPC naming FullDiskWait", err)
	}

	sp.walWait = 0
	go func() { time.Sleep(2 * FullDiskPoll); close(stop) }()
	if _, err := w.Write([]byte("y")); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a WAL write waiting when the log closes: %v; want ENOSPC, the log closed", err)
	}

	sp.walWait = -1 // Options.FullDiskWait < 0
	full.fails = 1
	full.room = 0
	if n, err := (walFile{File: full, space: sp}).Write([]byte("z")); n != 1 || err != nil {
		t.Fatalf("no wait, the disk full once: %d, %v; want the one retry to write it", n, err)
	}
	full.fails = 2
	if _, err := (walFile{File: full, space: sp}).Write([]byte("z")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("no wait, the disk full twice: %v; want ENOSPC at once", err)
	}
}
