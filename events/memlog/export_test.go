package memlog

import "slices"

// Corrupt replaces the stored bytes of an event (seq > 0) or of a session's
// metadata (seq == 0). It breaks the rule that stored events never change,
// so it must not run concurrently with a Read: it stores the session's
// events again, with b in place of event seq.
func (l *Log) Corrupt(id string, seq uint64, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[id]
	if seq == 0 {
		s.meta = slices.Clone(b)
		return
	}
	var again store
	for i := range s.events.len() {
		ev, err := s.events.event(i, nil)
		if err != nil {
			panic(err)
		}
		if uint64(i) == seq-s.forkSeq-1 {
			ev = b
		}
		again.add(len(ev), func(dst []byte) []byte { return append(dst, ev...) }, l.beside)
	}
	s.events = again
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
	b, err := s.events.event(int(seq-s.forkSeq-1), nil)
	if err != nil {
		panic(err)
	}
	return slices.Clone(b)
}

// Blocks returns the number of sealed blocks of session id.
func (l *Log) Blocks(id string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.sessions[id].events.sealed)
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

// Held returns the number of events session id still holds.
func (l *Log) Held(id string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := l.sessions[id]
	return s.events.len() - s.events.kept
}

// Compressed returns how many of session id's sealed blocks are
// compressed.
func (l *Log) Compressed(id string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := 0
	for _, b := range l.sessions[id].events.sealed {
		if b.body.p.Load().compressed {
			n++
		}
	}
	return n
}
