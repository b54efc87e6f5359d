package pebblelog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
)

// DefaultMinFreeSpace is the free disk space Options.MinFreeSpace means
// when it is 0: 96 MiB, room for Pebble to flush its memtables (two of
// MemTableSize at most) and rotate its WAL (a new WAL file takes about a
// memtable's size at once), with a margin. Between the Append that is
// refused and the flush at Close, a rotation and a flush took 31 MiB of
// a 4-reserve disk (TestDiskFullTmpfs): the flushes' half of the reserve
// must hold that.
const DefaultMinFreeSpace = 6 * MemTableSize

// BallastName is the file in which a read-write Log holds back disk space
// for a full disk: a quarter of Options.MinFreeSpace (24 MiB by default),
// written at Open when there is room. When another writer fills the disk
// and a metadata update (a session recorded interrupted) finds no room,
// or a flush of Pebble's fails for it, the Log deletes the file and the
// update, or Pebble's next try of the flush, uses the space it held (a
// flush that fails again waits for room: see roomFS); the file is
// written again once the disk has room. The folder's other
// users (Pebble) ignore it; deleting it by hand is harmless.
const BallastName = "pebblelog-ballast"

// space keeps the Log's writes away from a full disk. Pebble does not
// expect to meet one: a failed WAL write stops the database (see
// ErrFailed), a failed WAL rotation panics, and a failed flush or
// compaction is retried at once and without end. So the Log refuses an Append or a checkpoint, with an error
// wrapping syscall.ENOSPC, once the disk's free space falls below the
// reserve, and keeps the last quarter of it for metadata updates (a
// session recorded interrupted) and half of it for flushes. Pebble then
// meets a full disk only if another writer fills it faster; the ballast
// (BallastName) holds the metadata's quarter back for that case, and
// Pebble's tables then wait for room (see roomFS) instead of failing
// again as fast as Pebble can retry them.
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
	log     hclog.Logger

	mu      sync.Mutex
	known   bool   // free is from a statfs
	free    uint64 // free bytes at the last look
	written uint64 // bytes written since
	writes  int
	// ballast is true while BallastName holds its bytes; false before
	// Open wrote it, after a full disk made the Log delete it, and when
	// there is no reserve.
	ballast bool
	// released is set while the room the ballast held is free for
	// metadata updates: from when the Log deleted it on a full disk
	// (and the free space grew) to when it is written again.
	released bool
	// noBallast is set when the ballast could not be written for another
	// reason than a full disk: the Log does not try again.
	noBallast bool
	// pacing is set from when a flush or compaction of Pebble's failed
	// for a full disk, with no ballast left to make room for its retry,
	// to when a table waiting for room (roomFS) found it.
	pacing bool

	// waits is closed (and replaced) each time a table waiting for room
	// finds none, and found when one finds room, so that a flush waiting
	// for that table stops waiting; nudge makes a waiting table look at
	// once; waiting counts the tables waiting.
	waits    chan struct{}
	found    chan struct{}
	nudge    chan struct{}
	waiting  int
	stop     chan struct{} // closed by halt: tables stop waiting for room
	stopOnce sync.Once

	// walWait is how long a write of the WAL or the MANIFEST that met a
	// full disk waits for room (Options.FullDiskWait; 0: until the Log
	// closes; negative: not at all);
	// walStop, closed by endWALWait when the Log closes, ends the wait.
	walWait    time.Duration
	walStop    chan struct{}
	walStopped sync.Once
}

// ballastSize is the size of the ballast file: the metadata's share of
// the reserve.
func (s *space) ballastSize() uint64 { return s.reserve / 4 }

// need reports whether a write of n bytes may go ahead while keeping
// share/4 of the reserve free (4: all of it, for events; 1: a quarter, for
// metadata). A rare write (metadata, a flush) asks for the free space
// afresh. A metadata write refused for room deletes the ballast, if it is
// there, and goes ahead if that made room for it.
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
		if !s.look() {
			return nil
		}
	}
	if s.free >= keep+n {
		return nil
	}
	if share == 1 && s.ballast {
		// Another writer filled the disk: the ballast's bytes are for
		// this (sessions' ends recorded), to the last byte.
		before := s.free
		s.releaseLocked("to record sessions' status")
		if !s.look() {
			return nil
		}
		s.released = s.free > before
	}
	if share == 1 && s.released && s.free >= n {
		return nil
	}
	s.known = false // look again next time: space may have been freed
	return fmt.Errorf("%w: %s refused with %d bytes free on the log's disk (the log keeps %d free; Options.MinFreeSpace)",
		syscall.ENOSPC, what, s.free, keep)
}

// release deletes the ballast, if it is there, for a flush that met a
// full disk (Pebble retries it at once), and reports whether it did.
func (s *space) release(why string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ballast {
		return false
	}
	s.releaseLocked(why)
	s.released = true
	return true
}

// pace makes the tables Pebble writes next wait for room (roomFS), after a
// flush or compaction of what failed for a full disk; it reports false
// when the Log cannot tell its free space (no reserve), and so cannot
// wait for room.
func (s *space) pace(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserve == 0 {
		return false
	}
	if !s.pacing {
		s.pacing = true
		s.log.Warn("disk full: "+what+" failed; Pebble's writes of tables wait for room, the data stays in the WAL meanwhile",
			"free", s.free, "room", s.reserve/2)
	}
	return true
}

// pacingGate is what Log.flush needs to know of the pacing.
type pacingGate struct {
	pacing bool            // Pebble's tables wait for room
	waits  <-chan struct{} // closed the next time a waiting table finds no room
	found  <-chan struct{} // closed the next time a waiting table finds room
}

// gate returns the pacing as it stands. When roomSeen (a flush's need just
// saw its room free) and no table waits (pacing began with a compaction
// that Pebble does not retry at once, or a retry is yet to come), the
// pacing ends here: nothing else would end it.
func (s *space) gate(roomSeen bool) pacingGate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pacing && roomSeen && s.waiting == 0 {
		s.unpaceLocked()
	}
	return pacingGate{pacing: s.pacing, waits: s.waits, found: s.found}
}

// unpaceLocked ends the pacing: the disk has room; s.mu is held.
func (s *space) unpaceLocked() {
	s.pacing = false
	s.log.Info("disk has room again: Pebble's writes of tables go on", "free", s.free)
	close(s.found)
	s.found = make(chan struct{})
}

// nudgeRoom makes a table waiting for room look for it now.
func (s *space) nudgeRoom() {
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// tablePoll is how often a table waiting for room (roomFS) asks the file
// system for its free space; each try of Pebble's waits at least this.
const tablePoll = 250 * time.Millisecond

// awaitRoom returns at once unless the Log is pacing Pebble's tables
// (pace); then it waits at least tablePoll (or a nudge), and until the disk has the
// flushes' half of the reserve free or the Log closes (halt; then it
// returns an error wrapping syscall.ENOSPC, and Pebble's next try, if the
// database is not closing yet, waits again).
func (s *space) awaitRoom(name string) error {
	s.mu.Lock()
	pacing := s.pacing
	if pacing {
		s.waiting++
	}
	s.mu.Unlock()
	if !pacing {
		return nil
	}
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	t := time.NewTicker(tablePoll)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return fmt.Errorf("create %s: %w: the log closed while the table waited for room", name, syscall.ENOSPC)
		case <-t.C:
		case <-s.nudge:
		}
		s.mu.Lock()
		if !s.pacing {
			s.mu.Unlock()
			return nil
		}
		if !s.look() || s.free >= s.reserve/2 {
			s.unpaceLocked()
			s.mu.Unlock()
			return nil
		}
		close(s.waits)
		s.waits = make(chan struct{})
		s.mu.Unlock()
	}
}

// halt ends every wait for room (awaitRoom), for good: the Log closes.
func (s *space) halt() { s.stopOnce.Do(func() { close(s.stop) }) }

// roomFS is the file system a read-write Log gives Pebble. Pebble retries
// a flush or compaction that failed at once and without end: on a disk
// that another writer filled, each try creates a table, fails to write it
// and deletes it, as fast as the machine goes, while the WAL keeps what
// the flush was for. While the Log is pacing (space.pace), Create of a
// table waits for room (space.awaitRoom) first; the Log goes on, and the
// flush goes through once the disk has room again.
type roomFS struct {
	vfs.FS
	space *space
}

// Create implements vfs.FS.
func (f roomFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob") {
		if err := f.space.awaitRoom(f.PathBase(name)); err != nil {
			return nil, err
		}
	}
	file, err := f.FS.Create(name, category)
	return f.wal(name, file), err
}

// ReuseForWrite implements vfs.FS: Pebble recycles its WAL files.
func (f roomFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	return f.wal(newname, file), err
}

// wal wraps file, if it is the WAL's or the MANIFEST's, as a walFile.
func (f roomFS) wal(name string, file vfs.File) vfs.File {
	if file == nil || !strings.HasSuffix(name, ".log") && !strings.HasPrefix(f.PathBase(name), "MANIFEST-") {
		return file
	}
	return walFile{File: file, space: f.space, name: f.PathBase(name)}
}

// walFile is a WAL or MANIFEST file of Pebble's. A write to it that fails
// for a full disk stops the database (ErrFailed): it happens when another
// writer fills the disk between the Log's look at its free space and the
// commit. Such a write deletes the ballast, if it is there, and tries the
// rest of its bytes once more, in the room it held; the Log's own check then
// refuses the next Append, and the sessions' ends are recorded, as on a
// disk that filled more slowly (CI saw a disk filled at once stop the log
// for good). With no room there either, it waits for room (space.awaitWAL):
// a disk that another writer filled for a while does not stop the Log.
type walFile struct {
	vfs.File
	space *space
	name  string
}

// Write implements vfs.File. A write that failed with ENOSPC wrote none of
// the bytes it did not count, so trying the rest again appends exactly
// once. A failed sync is never tried again: the kernel may have dropped
// the pages it failed to write.
func (f walFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		return n, err
	}
	// The Log's next write asks the disk's free space afresh, and so is
	// refused for room before Pebble takes it.
	f.space.stale()
	// Once more, in the room the ballast held: deleted now, or just
	// before by a metadata write that met the same full disk.
	f.space.release("for a write of the WAL")
	m, err := f.File.Write(p[n:])
	n += m
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		return n, err
	}
	return f.space.awaitWAL(f.name, f.File, p, n, err)
}

// waitText says how long a write waits for room.
func waitText(d time.Duration) string {
	if d == 0 {
		return "until the log closes"
	}
	return d.String()
}

// stale makes the next need ask the file system for the free space: a
// write met a full disk that the last look did not see.
func (s *space) stale() {
	s.mu.Lock()
	s.known = false
	s.mu.Unlock()
}

// awaitWAL tries the write of p[n:] to w again every FullDiskPoll while it
// fails for a full disk, until the Log closes (endWALWait) or for at most
// walWait if it is positive, and returns the bytes of p written and the
// last error. err is the write's error so far.
func (s *space) awaitWAL(name string, w io.Writer, p []byte, n int, err error) (int, error) {
	if s.walWait < 0 {
		return n, err
	}
	start := time.Now()
	s.log.Warn("disk full: a write of Pebble's waits for room; every write of the log waits with it, new ones are refused, reads go on",
		"file", name, "bytes", len(p)-n, "for_at_most", waitText(s.walWait))
	t := time.NewTicker(FullDiskPoll)
	defer t.Stop()
	for {
		select {
		case <-s.walStop:
			return n, fmt.Errorf("%w (the log closed while the write waited for room)", err)
		case <-t.C:
		}
		var m int
		m, err = w.Write(p[n:])
		n += m
		if err == nil || !errors.Is(err, syscall.ENOSPC) {
			if err == nil {
				s.log.Info("disk full: the write of Pebble's that waited for room went through", "file", name, "waited", time.Since(start).Round(time.Millisecond))
			}
			return n, err
		}
		if s.walWait > 0 && time.Since(start) >= s.walWait {
			return n, fmt.Errorf("%w (no room in %s: Options.FullDiskWait)", err, s.walWait)
		}
	}
}

// endWALWait ends every write waiting for room (awaitWAL), for good: the
// Log closes.
func (s *space) endWALWait() { s.walStopped.Do(func() { close(s.walStop) }) }

// releaseLocked deletes the ballast; s.mu is held and s.ballast set.
func (s *space) releaseLocked(why string) {
	s.ballast = false
	if err := s.fs.Remove(s.fs.PathJoin(s.dir, BallastName)); err != nil {
		s.log.Error("disk full: cannot delete the ballast file", "file", BallastName, "error", err)
		return
	}
	s.log.Warn("disk full: deleted the ballast file "+why+"; it is written again once the disk has room",
		"file", BallastName, "bytes", s.ballastSize(), "free_before", s.free)
}

// look asks the file system for the free space; s.mu is held. It reports
// false (and turns the check off) if the file system cannot tell. With
// room for the ballast twice over beyond the reserve (at Open, and after
// a full disk), it writes the ballast.
func (s *space) look() bool {
	u, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		s.reserve = 0 // cannot tell: never refuse
		return false
	}
	s.known, s.free, s.written = true, u.AvailBytes, 0
	if !s.ballast && !s.noBallast && s.free >= s.reserve+2*s.ballastSize() {
		s.writeBallast()
	}
	return true
}

// openBallast checks, at a read-write Open, that the ballast is in place
// and writes it if the disk has room for it beyond the reserve. A file
// system that cannot tell its free space gets none.
func (s *space) openBallast() {
	if s.reserve == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fi, err := s.fs.Stat(s.fs.PathJoin(s.dir, BallastName)); err == nil && uint64(fi.Size()) >= s.ballastSize() {
		s.ballast = true
	}
	s.look()
}

// writeBallast writes BallastName, ballastSize zero bytes, synced; s.mu
// is held. A failure (the disk filled meanwhile) leaves no ballast and is
// logged: the Log goes on, as it does on a disk too full to hold one.
func (s *space) writeBallast() {
	path := s.fs.PathJoin(s.dir, BallastName)
	err := func() error {
		f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		chunk := make([]byte, 64<<10)
		for left := s.ballastSize(); left > 0 && err == nil; {
			k := min(left, uint64(len(chunk)))
			_, err = f.Write(chunk[:k])
			left -= k
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDir(s.fs, s.dir)
		}
		return err
	}()
	if err != nil {
		if rerr := s.fs.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && !errors.Is(rerr, os.ErrNotExist) {
			s.log.Warn("cannot delete a ballast file left half written", "file", BallastName, "error", rerr)
		}
		s.log.Warn("cannot write the ballast file that keeps room for a full disk", "file", BallastName, "error", err)
		s.noBallast = !errors.Is(err, syscall.ENOSPC)
		return
	}
	s.ballast, s.released = true, false
	if u, err := s.fs.GetDiskUsage(s.dir); err == nil {
		s.free = u.AvailBytes
	}
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
