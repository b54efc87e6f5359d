package pebblelog

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
)

// CloseRecordName is the file a clean Close leaves in the log's folder: the
// name, size and CRC-32C of the MANIFEST it left (Pebble's list of the
// store's tables). Pebble reads a MANIFEST up to its first bad record and
// takes that for its end, as after a crash in the middle of a write; a
// flipped byte there would make the tables named after it vanish (a
// read-write open even deletes them). With the record, Open tells a damaged
// MANIFEST from a torn one: it refuses one that differs from what the last
// record covers. A read-write Log also writes the record after each change
// of the MANIFEST (a flush, a compaction, a new MANIFEST), so that after a
// crash the MANIFEST up to its last recorded change is checked too. A
// read-write Open removes the record before Pebble writes anything; a
// read-only Open leaves it. A MANIFEST that grew past the record (a crash
// after a change not yet recorded) is checked up to the recorded size; a
// record made stale by another program opening the store read-write (a
// new MANIFEST) is logged and ignored.
const CloseRecordName = "pebblelog-close.json"

// closeRecord is the content of CloseRecordName.
type closeRecord struct {
	Manifest string `json:"manifest"`
	Size     int64  `json:"size"`
	CRC32C   uint32 `json:"crc32c"`
}

// CorruptFileError reports a file of the store found damaged when the Log
// was opened, where no session or seq can be named: a MANIFEST, a WAL.
// errors.Is(err, events.ErrCorrupt) holds for it.
type CorruptFileError struct {
	Path string // the file, or "" when Pebble's own error (Err) names it
	Err  error
}

func (e *CorruptFileError) Error() string {
	if e.Path == "" {
		return "pebblelog: corrupt store: " + e.Err.Error()
	}
	return "pebblelog: corrupt file " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the underlying failure.
func (e *CorruptFileError) Unwrap() error { return e.Err }

// Is reports whether target is events.ErrCorrupt.
func (e *CorruptFileError) Is(target error) bool { return target == events.ErrCorrupt }

// pebbleCorruption is a corruption error of Pebble's, printed with the
// path of the damaged file (Pebble's own message names its number only,
// and carries the rest as a detail that prints as a line of its own).
type pebbleCorruption struct {
	err    error
	info   *pebble.DataCorruptionInfo
	noPath bool // the path is printed by the error that wraps it
}

func (e *pebbleCorruption) Error() string {
	if e.noPath {
		return fmt.Sprint(e.info.Details)
	}
	return fmt.Sprintf("%v (in %s)", e.info.Details, e.info.Path)
}

func (e *pebbleCorruption) Unwrap() error { return e.err }

// namedCorruption returns err, a corruption error of Pebble's, so that it
// prints the path of the damaged file when Pebble gave it.
func namedCorruption(err error) error {
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil && info.Details != nil {
		return &pebbleCorruption{err: err, info: info}
	}
	return err
}

// corruptFile returns err, a corruption error of Pebble's, as a
// *CorruptFileError naming the damaged file when Pebble gave it.
func corruptFile(err error) *CorruptFileError {
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil && info.Details != nil {
		return &CorruptFileError{Path: info.Path, Err: &pebbleCorruption{err: err, info: info, noPath: true}}
	}
	return &CorruptFileError{Err: err}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// manifestState returns the path, size and CRC-32C of dir's current
// MANIFEST, and the CRC-32C of its first prefix bytes (of all of them if
// it is shorter); path is "" if there is none (no store yet).
func manifestState(fsys vfs.FS, dir string, prefix int64) (path string, size int64, sum, prefixSum uint32, err error) {
	name, err := atomicfs.ReadMarker(fsys, dir, "manifest")
	if err != nil || name == "" {
		return "", 0, 0, 0, err
	}
	path = fsys.PathJoin(dir, name)
	f, err := fsys.Open(path)
	if err != nil {
		return "", 0, 0, 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, io.LimitReader(f, prefix))
	if err != nil {
		return "", 0, 0, 0, err
	}
	prefixSum = h.Sum32()
	rest, err := io.Copy(h, f)
	if err != nil {
		return "", 0, 0, 0, err
	}
	return path, n + rest, h.Sum32(), prefixSum, nil
}

// checkCloseRecord compares dir's MANIFEST with the record the last clean
// Close left, if any, and reports whether there was one. It returns a
// *CorruptFileError if the MANIFEST the record names is damaged: shorter,
// or different within what the record covers. A record that another
// program made stale (Pebble itself, an older corpsim, opening the store
// read-write: a new MANIFEST, or edits appended to the same one) is
// logged and ignored.
func checkCloseRecord(fsys vfs.FS, dir string, log hclog.Logger) (bool, error) {
	recPath := fsys.PathJoin(dir, CloseRecordName)
	b, err := readAllFS(fsys, recPath)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var rec closeRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Manifest == "" {
		return true, &CorruptFileError{Path: recPath, Err: fmt.Errorf("unreadable record of the last clean close (%q); delete it to open the store without that check", b)}
	}
	path, size, sum, prefixSum, err := manifestState(fsys, dir, rec.Size)
	if err != nil {
		return true, err
	}
	stale := func(why string) (bool, error) {
		log.Warn("the record of the last clean close is stale: the store was opened read-write by another program since; MANIFEST not checked",
			"record", recPath, "why", why)
		return true, nil
	}
	switch {
	case path != fsys.PathJoin(dir, rec.Manifest):
		return stale(fmt.Sprintf("it names %s, the current MANIFEST is %s", rec.Manifest, path))
	case size == rec.Size && sum == rec.CRC32C:
		return true, nil
	case size > rec.Size && prefixSum == rec.CRC32C:
		// Edits after the record: a crash before the next one was
		// recorded, or another program. What the record covers is whole.
		log.Info("the MANIFEST grew past the record of it: checked up to the recorded size",
			"record", recPath, "manifest", path, "recorded", rec.Size, "size", size)
		return true, nil
	}
	return true, &CorruptFileError{Path: path, Err: fmt.Errorf("it is not what the record of it left by the last clean close or change covers (%d bytes, CRC-32C %08x; now %d bytes, %08x over the first %d): "+
		"Pebble would drop the tables it lists after the damage", rec.Size, rec.CRC32C, size, prefixSum, min(size, rec.Size))}
}

// writeCloseRecord records dir's MANIFEST in CloseRecordName, durably: a
// temporary file, synced, renamed, and the folder synced.
func writeCloseRecord(fsys vfs.FS, dir string) error {
	path, size, sum, _, err := manifestState(fsys, dir, 0)
	if err != nil || path == "" {
		return err
	}
	b, err := json.Marshal(closeRecord{Manifest: fsys.PathBase(path), Size: size, CRC32C: sum})
	if err != nil {
		return err
	}
	return putCloseRecord(fsys, dir, b)
}

// putCloseRecord writes b as CloseRecordName, durably.
func putCloseRecord(fsys vfs.FS, dir string, b []byte) error {
	tmp := fsys.PathJoin(dir, CloseRecordName+".tmp")
	f, err := fsys.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, fsys.PathJoin(dir, CloseRecordName))
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	return syncDir(fsys, dir)
}

// removeCloseRecord removes CloseRecordName durably, before a read-write
// open lets Pebble change the MANIFEST. It returns a func that puts the
// record back as it was if the MANIFEST is still what it was then: for an
// open that Pebble refused before it wrote anything (a table missing), so
// that the refusal takes no check from the next open.
func removeCloseRecord(fsys vfs.FS, dir string) (putBack func(), err error) {
	recPath := fsys.PathJoin(dir, CloseRecordName)
	rec, err := readAllFS(fsys, recPath)
	if err != nil {
		return nil, err
	}
	path, size, sum, _, err := manifestState(fsys, dir, 0)
	if err != nil {
		return nil, err
	}
	if err := fsys.Remove(recPath); err != nil {
		return nil, err
	}
	putBack = func() {
		if p, sz, sm, _, err := manifestState(fsys, dir, 0); err == nil && p == path && sz == size && sm == sum {
			_ = putCloseRecord(fsys, dir, rec)
		}
	}
	return putBack, syncDir(fsys, dir)
}

func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readAllFS returns the content of the file at path in fsys.
func readAllFS(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
