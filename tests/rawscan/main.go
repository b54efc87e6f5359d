// Command rawscan is tests/bench.sh's baseline for replay read from disk:
// a raw Pebble scan of one session's events as a fresh process finds them,
// the way `corpsim replay` reads them before it decodes and applies
// anything. It opens the data folder read-only with Pebble's own defaults
// and a block cache the size replay's, iterates the session's event keys
// ("e/<session>/<seq, 8 bytes big-endian>", pebblelog's layout) and reads
// every value, and prints {"keys":N,"bytes":B} on stdout. It reports and
// never judges; the caller times the whole process.
//
//	rawscan -data DIR -session ID
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

func main() {
	data := flag.String("data", "", "the data folder of corpsim run --data")
	session := flag.String("session", "", "the session whose events are scanned")
	flag.Parse()
	if *data == "" || *session == "" {
		fmt.Fprintln(os.Stderr, "rawscan: -data and -session are required")
		os.Exit(2)
	}
	keys, bytes, err := scan(*data, *session)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawscan:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]int64{"keys": keys, "bytes": bytes})
}

// scan counts the event keys of session and the bytes of their values.
func scan(dir, session string) (keys, bytes int64, err error) {
	cache := pebble.NewCache(16 << 20) // replay's (sim/app's readOnlyCacheSize)
	defer cache.Unref()
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Cache: cache, Logger: quiet{}})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	lower := []byte("e/" + session + "/")
	upper := []byte("e/" + session + "0") // '0' follows '/'
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, 0, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return keys, bytes, err
		}
		keys++
		bytes += int64(len(v))
	}
	return keys, bytes, it.Close()
}

// quiet drops Pebble's informational lines (the WALs it found); errors
// still reach stderr.
type quiet struct{}

func (quiet) Infof(string, ...any) {}
func (quiet) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quiet) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}
