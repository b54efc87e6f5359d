package pebblelog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
)

// checkManifestMarker refuses a folder whose MANIFEST marker
// (marker.manifest.NNNNNN.MANIFEST-NNNNNN, an empty file that names the
// current MANIFEST) is gone while the folder still holds the store's data:
// tables, WALs or the record of a clean close. Pebble would take such a
// folder for a new store, write a fresh MANIFEST, and — opened read-write —
// delete the tables and WALs the old one listed: every session in them.
// (An empty marker file is easy to lose: some copy and sync tools skip
// empty files.) A folder with no data, or only a MANIFEST (a store whose
// creation stopped before its marker was written), opens as before; so
// does a store of an older Pebble, which names its MANIFEST in CURRENT. A
// marker that names a MANIFEST no longer there, or a store with tables
// and without its format-version marker, is refused as damaged too
// (Pebble refuses both, in words of its own).
func checkManifestMarker(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
		return nil // no store yet
	}
	if err != nil {
		return err
	}
	var tables, wals int
	var manifests []string
	record, current := false, false
	for _, n := range names {
		switch {
		case n == "CURRENT":
			current = true
		case n == CloseRecordName:
			record = true
		case strings.HasPrefix(n, "MANIFEST-"):
			manifests = append(manifests, n)
		case storeFile(n, ".sst"), storeFile(n, ".blob"):
			tables++
		case storeFile(n, ".log"):
			wals++
		}
	}
	marked, err := atomicfs.ReadMarker(fsys, dir, "manifest")
	if err != nil {
		return err
	}
	if marked != "" {
		// Pebble refuses these too, not as damage (exit 1, its own words).
		if !slices.Contains(names, marked) {
			return &CorruptFileError{Path: fsys.PathJoin(dir, marked), Err: errors.New("the store's MANIFEST (its list of tables), named by its marker, is missing; nothing was changed: restore the folder from a copy")}
		}
		// The format-version marker is written last when a store is
		// made (after the MANIFEST, its marker and the first WAL): a
		// store whose creation stopped before it has no table, and
		// Pebble opens it. With tables, it was lost.
		if v, err := atomicfs.ReadMarker(fsys, dir, "format-version"); tables > 0 && (err != nil || v == "") {
			if err == nil {
				err = errors.New("the store's format-version marker (a file named marker.format-version.NNNNNN.NNN) is missing; nothing was changed: restore it from a copy of the folder")
			}
			return &CorruptFileError{Err: err}
		}
		return nil
	}
	if current || tables == 0 && wals == 0 && !record {
		return nil
	}
	msg := fmt.Sprintf("the MANIFEST marker (a file named marker.manifest.NNNNNN.MANIFEST-NNNNNN) is missing, while the folder holds %d table(s) and %d WAL(s) of the store", tables, wals)
	if record {
		msg += " and the record of its last clean close (" + CloseRecordName + ")"
	}
	msg += ": opened, Pebble would take it for a new store and delete them. Nothing was changed"
	if len(manifests) > 0 {
		slices.SortFunc(manifests, func(a, b string) int { return manifestNum(a) - manifestNum(b) })
		latest := manifests[len(manifests)-1]
		msg += fmt.Sprintf("; if %s is the store's MANIFEST (the latest of %d), an empty file named %s restores the marker", latest, len(manifests),
			fmt.Sprintf("marker.manifest.%06d.%s", 1, latest))
	} else {
		msg += "; no MANIFEST is left either: restore the folder from a copy"
	}
	return &CorruptFileError{Err: errors.New(msg)}
}

// storeFile reports whether name is a file of Pebble's numbered by its
// name before suffix: 000123.sst, 000123.log, 000123-001.log (a WAL
// segment after a failover).
func storeFile(name, suffix string) bool {
	num, ok := strings.CutSuffix(name, suffix)
	if !ok || num == "" {
		return false
	}
	num, _, _ = strings.Cut(num, "-")
	_, err := strconv.ParseUint(num, 10, 64)
	return err == nil
}

// manifestNum is the number of MANIFEST-NNNNNN (0 when it has none).
func manifestNum(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "MANIFEST-"))
	return n
}

// tableGone reports whether err is Pebble's refusal, at open, of a store
// whose MANIFEST lists a table that is not in the folder or not of the
// size it was written with (its consistency check; Pebble returns it as
// a plain error, not a corruption error, so it is told by its words).
func tableGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "object size mismatch") || strings.Contains(msg, "unknown to the objstorage provider")
}

// Holds reports whether folder dir holds a store, or any part of one (a
// table, a WAL, a MANIFEST or its marker, CURRENT, the record of a clean
// close): a folder Open would open rather than make a new store in. A
// folder that does not exist, or holds only files of other programs,
// holds none. It reads the folder's names alone and changes nothing.
func Holds(dir string) (bool, error) {
	names, err := vfs.Default.List(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, n := range names {
		switch {
		case n == "CURRENT", n == CloseRecordName,
			strings.HasPrefix(n, "MANIFEST-"), strings.HasPrefix(n, "marker.manifest."),
			storeFile(n, ".sst"), storeFile(n, ".blob"), storeFile(n, ".log"):
			return true, nil
		}
	}
	return false, nil
}
