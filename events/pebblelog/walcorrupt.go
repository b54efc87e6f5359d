package pebblelog

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// replayDetail is the detail Pebble adds to an error replaying a WAL.
// The offset prints as "(PATH: N)".
var replayDetail = regexp.MustCompile(`replaying wal (\d+), offset .*?(\d+)\)?$`)

// corruptOpen returns err, a corruption error of Pebble's Open, as a
// *CorruptFileError naming the damaged file: the WAL Pebble could not
// replay (with the offset and the sessions whose writes it holds before
// the damage), or the file Pebble's error names.
func corruptOpen(fs vfs.FS, dir string, err error) *CorruptFileError {
	for _, d := range errors.GetAllDetails(err) {
		m := replayDetail.FindStringSubmatch(d)
		if m == nil {
			continue
		}
		num, perr := strconv.ParseUint(m[1], 10, 64)
		if perr != nil {
			break
		}
		path := fs.PathJoin(dir, fmt.Sprintf("%06d.log", num))
		msg := fmt.Sprintf("%v at byte %s: a WAL that is not the last one, so not a torn end; Pebble replays no WAL after it and opens no session while it is damaged", err, m[2])
		if ids := walSessions(fs, path, num); len(ids) > 0 {
			msg += "; before the damage it holds writes of session " + strings.Join(ids, ", ")
		}
		return &CorruptFileError{Path: path, Err: &walCorruption{err: err, msg: msg}}
	}
	return corruptFile(err)
}

// walCorruption is a damaged WAL's error, printed with what is known of it.
type walCorruption struct {
	err error
	msg string
}

func (e *walCorruption) Error() string { return e.msg }
func (e *walCorruption) Unwrap() error { return e.err }

// walSessions lists, sorted, the sessions whose keys the records of WAL
// path (log number num) hold before its first unreadable record.
func walSessions(fs vfs.FS, path string, num uint64) []string {
	f, err := fs.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var logNum = pebble.ManifestCreateInfo{}.FileNum // Pebble's file number type
	reflect.ValueOf(&logNum).Elem().SetUint(num)
	rr := record.NewReader(f, logNum)
	seen := map[string]bool{}
	var buf bytes.Buffer
	for {
		r, err := rr.Next()
		if err != nil {
			break
		}
		buf.Reset()
		if _, err := io.Copy(&buf, r); err != nil {
			break
		}
		br := batchrepr.Read(buf.Bytes())
		for {
			_, key, _, ok, err := br.Next()
			if !ok || err != nil {
				break
			}
			if id := sessionOfKey(key); id != "" {
				seen[id] = true
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// sessionOfKey returns the session a key of the Log belongs to, or "".
func sessionOfKey(key []byte) string {
	if len(key) < 3 || key[1] != '/' {
		return ""
	}
	switch key[0] {
	case 'm':
		return string(key[2:])
	case 'e', 'c':
		if i := bytes.IndexByte(key[2:], '/'); i > 0 {
			return string(key[2 : 2+i])
		}
	}
	return ""
}
