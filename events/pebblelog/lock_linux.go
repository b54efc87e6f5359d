package pebblelog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// readLockFS returns the file system a read-only Open gives Pebble. On the
// OS file system it takes a shared lock on the LOCK file, opened for
// reading only, instead of Pebble's exclusive lock, which creates the file
// for writing (and so fails on a read-only folder). The lock is an open
// file description lock: it conflicts with Pebble's lock of a writer, in
// this process too, and lets any number of readers share the log.
func readLockFS(f vfs.FS) vfs.FS {
	if f != vfs.Default {
		return f
	}
	return sharedLockFS{f}
}

type sharedLockFS struct{ vfs.FS }

func (sharedLockFS) Lock(name string) (io.Closer, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		// No writer ever locked this folder; Pebble then finds no
		// database in it (or one copied without its LOCK file).
		return io.NopCloser(nil), nil
	}
	if err != nil {
		return nil, err
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s for reading: %w (a writer holds it)", name, err)
	}
	return f, nil
}
