package pebblelog

import "github.com/cockroachdb/pebble/v2"

// DB returns the underlying database, for writing corrupt data behind the
// Log's back.
func (l *Log) DB() *pebble.DB { return l.db }

// EventKey returns the key of event seq of session id.
func EventKey(id string, seq uint64) []byte { return eventKey(nil, id, seq) }

// MetaKey returns the key of session id's metadata.
func MetaKey(id string) []byte { return metaKey(id) }

// ForgetCache drops the cached session states, so the next operation
// reloads them from the database.
func (l *Log) ForgetCache() {
	l.statesMu.Lock()
	defer l.statesMu.Unlock()
	clear(l.states)
}

// CheckpointKey returns the key of session id's checkpoint at seq.
func CheckpointKey(id string, seq uint64) []byte { return checkpointKey(nil, id, seq) }

// Pace makes Pebble's tables wait for room, as a compaction that failed for
// a full disk does.
func (l *Log) Pace() { l.space.pace("a compaction (test)") }
