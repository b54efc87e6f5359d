package memlog

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// blockSize is the raw size at which the open block of a session's events
// is sealed: compressed with s2 (the events of a run compress about 3:1:
// their payloads are JSON with the same keys over and over). A block holds
// a few hundred events; reading one event from the middle of the log
// decompresses its block, about 64 KiB.
const blockSize = 64 << 10

// store holds a session's own events, in their canonical encoding
// (events.AppendEncode), in blocks: sealed blocks, compressed, and one open
// block of raw bytes that new events are appended to. Event i (0-based:
// seq forkSeq+1+i) is in the block whose first <= i.
//
// Stored bytes are never modified, and a store value is a snapshot: the
// owner only appends, within the open block's capacity (a full block is
// sealed and a new array started), or to slices whose existing elements it
// never writes again. So a reader copies the store under the Log's lock
// (see snapshot) and reads it without: what the copy covers does not
// change.
type store struct {
	sealed []sealedBlock
	open   []byte   // raw encodings of events openFirst, openFirst+1, …
	ends   []uint32 // ends[j] is the end in open of event openFirst+j
	first  int      // index of the open block's first event
	// kept is the index of the first event still held: sealed blocks
	// wholly older than a window's events are dropped (trim).
	kept int
}

// sealedBlock is a sealed block of events first, first+1, ….
type sealedBlock struct {
	first int
	ends  []uint32 // the end of each event in the raw block
	body  *blockBody
}

// blockBody holds a sealed block's bytes: the raw block as it was sealed,
// then its s2 encoding once the compression (run beside the appender when
// the Log has Options.Beside: see seal) has finished. Either is never
// modified; a reader loads whichever is there.
type blockBody struct{ p atomic.Pointer[blockBytes] }

type blockBytes struct {
	b          []byte
	compressed bool // b is the s2 block encoding of the raw block
}

// compress replaces the raw bytes of b by their s2 encoding, copied out
// of a pooled buffer at its length (s2.Encode's is sized for the worst
// case).
func (b *blockBody) compress() {
	raw := b.p.Load().b
	buf := scratchPool.Get().(*[]byte)
	if n := s2.MaxEncodedLen(len(raw)); cap(*buf) < n {
		*buf = make([]byte, n)
	}
	data := slices.Clone(s2.Encode((*buf)[:cap(*buf)], raw))
	scratchPool.Put(buf)
	b.p.Store(&blockBytes{b: data, compressed: true})
}

var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// len returns the number of events stored.
func (s *store) len() int { return s.first + len(s.ends) }

// snapshot returns a copy of s that later appends do not change.
func (s *store) snapshot() store {
	return store{sealed: slices.Clip(s.sealed), open: slices.Clip(s.open), ends: slices.Clip(s.ends), first: s.first, kept: s.kept}
}

// add stores an event whose encoding is n bytes, written by enc into dst
// (which has room for n bytes) and returned. A block it seals is
// compressed by beside (nil: at once; see seal).
func (s *store) add(n int, enc func(dst []byte) []byte, beside func(func())) {
	if len(s.ends) > 0 && len(s.open)+n > cap(s.open) {
		s.seal(beside)
	}
	if cap(s.open)-len(s.open) < n {
		s.open = make([]byte, 0, max(blockSize, n))
	}
	start := len(s.open)
	s.open = enc(s.open)
	if len(s.open)-start != n {
		panic(fmt.Sprintf("memlog: an encoding of %d bytes took %d", n, len(s.open)-start))
	}
	s.ends = append(s.ends, uint32(len(s.open)))
}

// seal closes the open block and starts a new one. The block is
// compressed by beside, which may run it on another goroutine (Options.
// Beside): the block is read raw until its encoding is in. With no beside
// it is compressed at once.
func (s *store) seal(beside func(func())) {
	body := new(blockBody)
	body.p.Store(&blockBytes{b: s.open})
	s.sealed = append(s.sealed, sealedBlock{first: s.first, ends: slices.Clone(s.ends), body: body})
	s.first += len(s.ends)
	s.open, s.ends = nil, nil // readers may still hold them
	if beside == nil {
		body.compress()
	} else {
		beside(body.compress)
	}
}

// trim drops the sealed blocks whose events are all older than the latest
// keep (keep > 0). The kept blocks go into a new array: a reader's
// snapshot still holds the old one.
func (s *store) trim(keep int) {
	k := 0
	for k < len(s.sealed) && s.sealed[k].first+len(s.sealed[k].ends) <= s.len()-keep {
		k++
	}
	if k == 0 {
		return
	}
	s.sealed = slices.Clone(s.sealed[k:])
	s.kept = s.first
	if len(s.sealed) > 0 {
		s.kept = s.sealed[0].first
	}
}

// blockOf returns the block of event i: its raw bytes (decompressed into
// buf if it is sealed and compressed, reusing buf's array when it is large
// enough; own then says so, and the caller may pass them as buf again), the
// index of its first event and the events' ends. Otherwise the bytes are
// the store's, never to be written. i must be < s.len() and at least
// s.kept.
func (s *store) blockOf(i int, buf []byte) (raw []byte, first int, ends []uint32, own bool, err error) {
	if i >= s.first {
		return s.open, s.first, s.ends, false, nil
	}
	k := sort.Search(len(s.sealed), func(k int) bool { return s.sealed[k].first > i }) - 1
	b := &s.sealed[k]
	body := b.body.p.Load()
	if !body.compressed {
		return body.b, b.first, b.ends, false, nil
	}
	n, err := s2.DecodedLen(body.b)
	if err != nil {
		return nil, 0, nil, false, err
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	raw, err = s2.Decode(buf[:n], body.b)
	if err == nil && len(raw) != int(b.ends[len(b.ends)-1]) {
		err = fmt.Errorf("block of %d bytes, its events end at %d", len(raw), b.ends[len(b.ends)-1])
	}
	return raw, b.first, b.ends, true, err
}

// event returns the stored encoding of event i, aliasing the store's
// memory (or buf's) when it can; i must be < s.len().
func (s *store) event(i int, buf []byte) ([]byte, error) {
	raw, first, ends, _, err := s.blockOf(i, buf)
	if err != nil {
		return nil, err
	}
	return eventIn(raw, first, ends, i), nil
}

// eventIn is event i of the block raw whose first event is first.
func eventIn(raw []byte, first int, ends []uint32, i int) []byte {
	start := uint32(0)
	if j := i - first; j > 0 {
		start = ends[j-1]
	}
	return raw[start:ends[i-first]:ends[i-first]]
}
