package pebblelog

import (
	"errors"
	"syscall"
	"testing"

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
	sp := &space{fs: fs, reserve: 4 << 20, log: hclog.NewNullLogger(), ballast: true}

	full := &fullFile{fails: 1, room: 3}
	w := walFile{File: full, space: sp}
	if n, err := w.Write([]byte("0123456789")); n != 10 || err != nil || string(full.data) != "0123456789" {
		t.Fatalf("a WAL write on a full disk with the ballast: wrote %d (%q), %v; want all of it", n, full.data, err)
	}
	if _, err := fs.Stat(BallastName); sp.ballast || !sp.released || err == nil {
		t.Fatalf("after the write: ballast %v, released %v, file %v; want it deleted", sp.ballast, sp.released, err)
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
	for name, wal := range map[string]bool{"000004.log": true, "000005.sst": false, "MANIFEST-000001": false} {
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
