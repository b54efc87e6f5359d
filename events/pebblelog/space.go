package pebblelog

import (
	"fmt"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultMinFreeSpace is the free disk space Options.MinFreeSpace means
// when it is 0: room for Pebble to flush its memtables (two of 4 MiB at
// most) and rotate its WAL, with a margin.
const DefaultMinFreeSpace = 16 << 20

// space keeps the Log's writes away from a full disk. Pebble does not
// expect to meet one: a failed WAL write stops the database (see
// ErrFailed), a failed WAL rotation panics, and a failed flush is retried
// without end. So the Log refuses an Append or a checkpoint, with an error
// wrapping syscall.ENOSPC, once the disk's free space falls below the
// reserve, and keeps the last quarter of it for metadata updates (a
// session recorded interrupted) and half of it for flushes. Pebble then
// meets a full disk only if another writer fills it faster.
//
// Free space is asked of the file system (statfs) again when the bytes
// written since the last look could have eaten a sixteenth of the
// headroom, every 256 writes, and for every metadata write and flush; a
// file system that cannot tell
// (vfs.NewMem without TestingSetDiskUsage) is never refused.
type space struct {
	fs      vfs.FS
	dir     string
	reserve uint64 // 0: no check

	mu      sync.Mutex
	known   bool   // free is from a statfs
	free    uint64 // free bytes at the last look
	written uint64 // bytes written since
	writes  int
}

// need reports whether a write of n bytes may go ahead while keeping
// share/4 of the reserve free (4: all of it, for events; 1: a quarter, for
// metadata). A rare write (metadata, a flush) asks for the free space
// afresh.
func (s *space) need(n uint64, share uint64, what string, rare bool) error {
	if s.reserve == 0 {
		return nil
	}
	keep := s.reserve * share / 4
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	s.written += n
	headroom := uint64(0)
	if s.free > keep {
		headroom = s.free - keep
	}
	if rare || !s.known || s.writes%256 == 0 || s.written*16 >= headroom {
		u, err := s.fs.GetDiskUsage(s.dir)
		if err != nil {
			s.reserve = 0 // cannot tell: never refuse
			return nil
		}
		s.known, s.free, s.written = true, u.AvailBytes, 0
	}
	if s.free < keep+n {
		s.known = false // look again next time: space may have been freed
		return fmt.Errorf("%w: %s refused with %d bytes free on the log's disk (the log keeps %d free; Options.MinFreeSpace)",
			syscall.ENOSPC, what, s.free, keep)
	}
	return nil
}

// spaceMargin is the free space a read-write Open wants beyond the size of
// the WALs it may replay: room for the MANIFEST, OPTIONS and a new WAL.
const spaceMargin = 1 << 20

// checkOpenSpace refuses a read-write open of dir when its disk has less
// free space than the WALs in it plus spaceMargin: opening replays the
// WALs into tables, and Pebble retries a flush that fails for space at
// once and without end, so the Open would never return. A file system
// that cannot tell its free space passes.
func checkOpenSpace(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return nil // no folder yet, or unreadable: Open reports it
	}
	usage, err := fs.GetDiskUsage(dir)
	if err != nil {
		return nil
	}
	need := uint64(spaceMargin)
	for _, name := range names {
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		if fi, err := fs.Stat(fs.PathJoin(dir, name)); err == nil {
			need += uint64(fi.Size())
		}
	}
	if usage.AvailBytes < need {
		return fmt.Errorf("%w: %d bytes free, replaying the WAL needs about %d; free some space or open read-only",
			syscall.ENOSPC, usage.AvailBytes, need)
	}
	return nil
}
