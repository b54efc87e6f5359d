package memlog

import "slices"

// Corrupt replaces the stored bytes of an event (seq > 0) or of a session's
// metadata (seq == 0). It breaks the rule that stored events never change,
// so it must not run concurrently with a Read.
func (l *Log) Corrupt(id string, seq uint64, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[id]
	if seq == 0 {
		s.meta = slices.Clone(b)
		return
	}
	s.events[seq-s.forkSeq-1] = slices.Clone(b)
}

// Raw returns the stored bytes of an event (seq > 0) or of a session's
// metadata (seq == 0).
func (l *Log) Raw(id string, seq uint64) []byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := l.sessions[id]
	if seq == 0 {
		return slices.Clone(s.meta)
	}
	return slices.Clone(s.events[seq-s.forkSeq-1])
}

// CorruptCheckpoint replaces the stored bytes of session id's checkpoint at
// seq, which must exist.
func (l *Log) CorruptCheckpoint(id string, seq uint64, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[id]
	for i := range s.checkpoints {
		if s.checkpoints[i].seq == seq {
			s.checkpoints[i].b = slices.Clone(b)
			return
		}
	}
	panic("memlog: no checkpoint to corrupt")
}

// RawCheckpoint returns the stored bytes of session id's checkpoint at seq,
// or nil.
func (l *Log) RawCheckpoint(id string, seq uint64) []byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, c := range l.sessions[id].checkpoints {
		if c.seq == seq {
			return slices.Clone(c.b)
		}
	}
	return nil
}
