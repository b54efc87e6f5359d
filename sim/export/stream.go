package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// Spill is where WriteSFT keeps a session's transcripts until its rewards
// are known: written once, front to back, then read back. An *os.File is
// one; the driver chooses where (the package does no I/O of its own).
type Spill interface {
	io.Writer
	io.ReaderAt
}

// SFTOptions configure WriteSFT. The zero value writes every episode whole,
// its transcript kept in memory.
type SFTOptions struct {
	Options
	// Windows writes each episode as its Windows(History): one line per
	// answered turn.
	Windows bool
	History int
	// Keep, if set, says which episodes to write; it is given each one
	// without its messages (its header, rewards and counts of turns).
	Keep func(*Episode) bool
	// Spill holds the transcripts while the session is replayed; nil
	// keeps them in memory.
	Spill Spill
}

// WriteSFT writes session id's episodes to w as JSON Lines, the bytes
// WriteLines writes for Episodes (or for their Windows), and returns how
// many episodes it kept and how many lines it wrote. Unlike Episodes it
// holds no transcript: each turn's messages go to o.Spill as the replay
// passes them, and each line is written from there once the session's
// rewards are known, so what it holds is the state and an index of the
// turns, whatever the length of the session or of its lines.
func WriteSFT(ctx context.Context, w io.Writer, log Log, id string, o SFTOptions) (kept, lines int, err error) {
	sp := o.Spill
	if sp == nil {
		sp = &memSpill{}
	}
	s := spillWriter{w: bufio.NewWriterSize(sp, 1<<16)}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false) // as WriteLines
	byMember := map[string]*spilled{}
	r, err := o.read(ctx, log, id, func(t *turnRec, m *turnMsgs) error {
		sm := byMember[t.member]
		if sm == nil {
			sm = &spilled{}
			byMember[t.member] = sm
		}
		if !sm.add(t) {
			return nil
		}
		if m.system != nil {
			f, err := s.put(*m.system)
			if err != nil {
				return err
			}
			sm.system = &f
		}
		head, err := s.put(m.user, m.asst)
		if err != nil {
			return err
		}
		tail, err := s.put(m.results...)
		if err != nil {
			return err
		}
		sm.turns = append(sm.turns, spilledTurn{head: head, tail: tail, turn: m.turn})
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if err := s.w.Flush(); err != nil {
		return 0, 0, fmt.Errorf("export: spill: %w", err)
	}
	out := lineWriter{w: bufio.NewWriterSize(w, 1<<16), sp: sp}
	var total uint64              // lines to write at most (before Keep), for Progress
	for _, sm := range byMember { // order: a sum
		total += uint64(len(sm.seqs))
	}
	if !o.Windows {
		total = uint64(len(r.seats))
	}
	progress := func() {
		if o.Progress != nil {
			o.Progress("write", uint64(lines), total)
		}
	}
	for _, member := range r.seats {
		ep := r.header(member)
		sm := byMember[member]
		if sm == nil {
			sm = &spilled{}
		}
		sm.fill(&ep)
		if o.Keep != nil && !o.Keep(&ep) {
			continue
		}
		kept++
		if !o.Windows {
			frags := make([]frag, 0, 2*len(sm.turns)+1)
			if sm.system != nil {
				frags = append(frags, *sm.system)
			}
			for _, t := range sm.turns {
				frags = append(frags, t.head, t.tail)
			}
			if err := out.line(&ep, frags); err != nil {
				return kept, lines, err
			}
			lines++
			progress()
			continue
		}
		// As Episode.Windows: the system prompt, up to History earlier
		// turns whole, then the turn's observation and answer.
		history := max(o.History, 0)
		for i, t := range sm.turns {
			from := max(0, i-history)
			win := ep
			win.Turn, win.InheritedTurns = t.turn, inherited(sm.seqs[from:i+1], ep.forkSeq)
			frags := make([]frag, 0, 2*history+2)
			if sm.system != nil {
				frags = append(frags, *sm.system)
			}
			for _, in := range sm.turns[from:i] {
				frags = append(frags, in.head, in.tail)
			}
			frags = append(frags, t.head)
			if err := out.line(&win, frags); err != nil {
				return kept, lines, err
			}
			lines++
			progress()
		}
	}
	return kept, lines, out.w.Flush()
}

// frag is where some messages of a transcript are in the spill: their
// JSON, separated by commas (n is 0 for none).
type frag struct{ off, n int64 }

// spilledTurn is an answered turn in the spill: its observation and
// answer (head), then its calls' results (tail).
type spilledTurn struct {
	head, tail frag
	turn       uint64
}

// spilled is a member's transcript in the spill: its turns as tally
// counts them (turns[i] is the answered turn of seqs[i]).
type spilled struct {
	tally
	system *frag
	turns  []spilledTurn
}

// spillWriter appends messages to the spill as JSON.
type spillWriter struct {
	w   *bufio.Writer
	off int64
	buf bytes.Buffer
	enc *json.Encoder
}

// put writes msgs to the spill, comma-separated, as an Episode's messages
// are encoded, and returns where they are.
func (s *spillWriter) put(msgs ...Message) (frag, error) {
	f := frag{off: s.off}
	for i := range msgs {
		s.buf.Reset()
		if i > 0 {
			s.buf.WriteByte(',')
		}
		if err := s.enc.Encode(&msgs[i]); err != nil {
			return f, err
		}
		b := bytes.TrimSuffix(s.buf.Bytes(), []byte("\n"))
		if _, err := s.w.Write(b); err != nil {
			return f, fmt.Errorf("export: spill: %w", err)
		}
		s.off += int64(len(b))
		f.n += int64(len(b))
	}
	return f, nil
}

// lineWriter writes episodes whose messages are in the spill.
type lineWriter struct {
	w   *bufio.Writer
	sp  Spill
	buf bytes.Buffer
}

// emptyMessages is how an episode without messages encodes them; the
// first occurrence in a line is the field itself, since every string
// before it has its quotes escaped.
var emptyMessages = []byte(`"messages":[]`)

// line writes ep with the messages of frags as one line of JSON, the
// bytes WriteLines writes for ep with those messages.
func (l *lineWriter) line(ep *Episode, frags []frag) error {
	l.buf.Reset()
	enc := json.NewEncoder(&l.buf)
	enc.SetEscapeHTML(false)
	ep.Messages = []Message{}
	if err := enc.Encode(ep); err != nil {
		return err
	}
	b := l.buf.Bytes()
	at := bytes.Index(b, emptyMessages)
	if at < 0 {
		return fmt.Errorf("export: no messages field in %.80s", b)
	}
	cut := at + len(emptyMessages) - 1 // before the closing ]
	if _, err := l.w.Write(b[:cut]); err != nil {
		return err
	}
	comma := false
	for _, f := range frags {
		if f.n == 0 {
			continue
		}
		if comma {
			if err := l.w.WriteByte(','); err != nil {
				return err
			}
		}
		if _, err := io.Copy(l.w, io.NewSectionReader(l.sp, f.off, f.n)); err != nil {
			return fmt.Errorf("export: spill: %w", err)
		}
		comma = true
	}
	_, err := l.w.Write(b[cut:])
	return err
}

// memSpill is a Spill in memory.
type memSpill struct{ b []byte }

func (m *memSpill) Write(p []byte) (int, error) {
	m.b = append(m.b, p...)
	return len(p), nil
}

func (m *memSpill) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
