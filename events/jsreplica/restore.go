package jsreplica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
)

// maxForkDepth bounds how many ancestors Restore fetches for a fork.
const maxForkDepth = 64

// Restore copies session's events from the stream into dst and returns the
// session's last seq. It creates the session in dst if dst does not have
// it, with the metadata recorded in the bucket (or, for a session that is
// not a fork and has none, the metadata its session.started event gives),
// its Status interrupted unless it was recorded finished, and its LastSeq
// the last restored event; a fork's parent is restored first if dst lacks
// it. If dst already has the session, only the events after its last one
// are copied, after checking that dst's last event is the stream's
// (ErrConflict if not); if dst has more events than the stream, Restore
// returns ErrGap.
//
// Every event is decoded, which checks its checksum, and the seqs must
// follow each other without a gap from the fork point (0 for a session
// that is not a fork) up to the subject's last message when Restore began;
// anything else is an error wrapping events.ErrCorrupt, and dst then holds
// the events before it. Restore copies events only: RestoreCheckpoints
// then copies the latest checkpoint replicated for the session (and its
// fork chain), which sim/driver.Load rebuilds the state from; without
// one, Load replays from the first event. The session must not be written
// while it is restored.
func Restore(ctx context.Context, js jetstream.JetStream, session string, dst events.Log) (uint64, error) {
	return restore(ctx, js, session, dst, 0)
}

func restore(ctx context.Context, js jetstream.JetStream, session string, dst events.Log, depth int) (uint64, error) {
	if err := events.ValidSessionID(session); err != nil {
		return 0, err
	}
	if depth > maxForkDepth {
		return 0, fmt.Errorf("jsreplica: session %s: fork chain deeper than %d", session, maxForkDepth)
	}
	st, err := js.Stream(ctx, Stream)
	if err != nil {
		return 0, fmt.Errorf("jsreplica: stream %s: %w", Stream, err)
	}
	subject := Subject(session)
	lastMsg, err := st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		lastMsg = nil
	} else if err != nil {
		return 0, fmt.Errorf("jsreplica: session %s: %w", session, err)
	}
	meta, recorded, err := sessionMeta(ctx, js, session)
	if err != nil {
		return 0, err
	}
	if lastMsg == nil && !recorded {
		return 0, fmt.Errorf("%w: %s is not in stream %s", events.ErrNoSession, session, Stream)
	}

	// The session in dst: created here, or extended from its last event.
	have, err := dst.Session(ctx, session)
	switch {
	case err == nil:
		meta = have
	case errors.Is(err, events.ErrNoSession):
		if !recorded {
			if meta, err = metaFromStart(ctx, js, session); err != nil {
				return 0, err
			}
		}
		if meta.Parent != "" {
			if _, err := dst.Session(ctx, meta.Parent); errors.Is(err, events.ErrNoSession) {
				if _, err := restore(ctx, js, meta.Parent, dst, depth+1); err != nil {
					return 0, fmt.Errorf("jsreplica: session %s: parent: %w", session, err)
				}
			} else if err != nil {
				return 0, err
			}
		}
		if meta.Status != events.StatusFinished {
			meta.Status = events.StatusInterrupted
		}
		meta.LastSeq = 0
		if err := dst.CreateSession(ctx, meta); err != nil {
			return 0, fmt.Errorf("jsreplica: session %s: %w", session, err)
		}
	default:
		return 0, err
	}
	last, err := dst.LastSeq(ctx, session)
	if err != nil {
		return 0, err
	}
	if lastMsg != nil {
		if last, err = copyEvents(ctx, js, session, dst, meta.ForkSeq, last, lastMsg.Sequence); err != nil {
			return last, err
		}
	} else if last > meta.ForkSeq {
		// The stream has none of the session's own events but dst has: a
		// writer stored its first batches locally and died before they
		// were replicated. Continuing from here would leave the stream a
		// hole at its start.
		return last, fmt.Errorf("%w: session %s: the local log has %d events, the stream none after the fork point %d (Sync them, or discard the local copy)", ErrGap, session, last, meta.ForkSeq)
	}
	if meta.LastSeq != last {
		meta.LastSeq = last
		if err := dst.UpdateSession(ctx, meta); err != nil {
			return last, fmt.Errorf("jsreplica: session %s: %w", session, err)
		}
	}
	return last, nil
}

// copyEvents reads the session's subject from its first message to the one
// at stream sequence end, and appends the events after have to dst. It
// returns the last seq dst holds.
//
// A batch is appended (a synced write, for a durable log) while the next is
// fetched and decoded: the two took about as long as each other, one after
// the other.
func copyEvents(ctx context.Context, js jetstream.JetStream, session string, dst events.Log, forkSeq, have, end uint64) (uint64, error) {
	ap := startAppender(ctx, dst, session, have)
	err := fetchEvents(ctx, js, session, dst, forkSeq, have, end, ap.give)
	last, aerr := ap.stop()
	if aerr != nil {
		err = aerr // a failed append stops the fetches, which may fail on their own before they learn of it
	}
	return last, err
}

// A fetch asks for up to fetchBatch messages and fetchBytes bytes: four
// appends' worth, fetched while they are appended (1,024 a fetch took 10 to
// 20% longer to restore), and the most a message may hold (NATS refuses a
// payload over 64 MiB) so that every message fits in one.
const (
	fetchBatch = 4 * syncBatch
	fetchBytes = 64 << 20
)

// appender appends the batches given to it to a log, one at a time, on a
// goroutine of its own.
type appender struct {
	work chan []events.Event
	done chan struct{} // closed when the goroutine returns
	// Set by the goroutine before done is closed.
	last uint64
	err  error
}

func startAppender(ctx context.Context, dst events.Log, session string, have uint64) *appender {
	a := &appender{work: make(chan []events.Event), done: make(chan struct{}), last: have}
	go func() {
		defer close(a.done)
		for batch := range a.work {
			if err := dst.Append(ctx, session, batch[0].Seq-1, batch); err != nil {
				a.err = fmt.Errorf("jsreplica: session %s: append seqs %d-%d: %w", session, batch[0].Seq, batch[len(batch)-1].Seq, err)
				return
			}
			a.last = batch[len(batch)-1].Seq
		}
	}()
	return a
}

// give hands batch over once the batch before it is appended; it returns
// the append's error if one failed. The batch is the appender's then.
func (a *appender) give(batch []events.Event) error {
	select {
	case a.work <- batch:
		return nil
	case <-a.done:
		return a.err
	}
}

// stop waits for the batches given to be appended and returns the last
// seq appended and the error that stopped the appends, if one did.
func (a *appender) stop() (uint64, error) {
	close(a.work)
	<-a.done
	return a.last, a.err
}

// fetchEvents reads the session's subject from its first message to the
// one at stream sequence end and gives the events after have, in batches
// of up to syncBatch, to appendBatch.
func fetchEvents(ctx context.Context, js jetstream.JetStream, session string, dst events.Log, forkSeq, have, end uint64,
	appendBatch func([]events.Event) error) error {
	subject := Subject(session)
	cons, err := js.OrderedConsumer(ctx, Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("jsreplica: session %s: consumer: %w", session, err)
	}
	next := forkSeq + 1 // the seq the next message must hold
	batch := make([]events.Event, 0, syncBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := appendBatch(batch)
		batch = make([]events.Event, 0, syncBatch)
		return err
	}
	refused := 0 // fetches in a row that found no consumer to answer
	for {
		mb, err := cons.Fetch(fetchBatch, jetstream.FetchMaxWait(5*time.Second), jetstream.FetchMaxBytes(fetchBytes))
		if errors.Is(err, nats.ErrNoResponders) && refused < fetchRefusals {
			// A consumer just made in a cluster may not take requests yet;
			// the next fetch makes it again from where the last one ended.
			refused++
			if err := pause(ctx, time.Duration(refused)*fetchPause); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("jsreplica: session %s: fetch: %w", session, err)
		}
		got := 0
		for m := range mb.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("jsreplica: session %s: %w", session, err)
			}
			sseq := md.Sequence.Stream
			if sseq > end {
				return flush() // appended after Restore began
			}
			var ev events.Event
			if err := events.Decode(m.Data(), &ev); err != nil {
				return &events.CorruptError{Session: session, Seq: next, Key: subject + "@" + strconv.FormatUint(sseq, 10), Err: err}
			}
			if ev.Seq != next {
				return &events.CorruptError{Session: session, Seq: next, Key: subject + "@" + strconv.FormatUint(sseq, 10),
					Err: fmt.Errorf("%w: stream message %d holds seq %d, want %d", events.ErrCorrupt, sseq, ev.Seq, next)}
			}
			next++
			if ev.Seq == have && have > forkSeq {
				if err := sameAsStored(ctx, dst, session, &ev); err != nil {
					return err
				}
			}
			if ev.Seq > have {
				ev.Session = session
				// An event straddling have would make a batch that is
				// neither all stored nor all new: have starts a batch.
				batch = append(batch, ev)
				if len(batch) == syncBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if sseq == end {
				if ev.Seq < have {
					return fmt.Errorf("%w: session %s: the local log has %d events, the stream %d (Sync them, or discard the local copy)", ErrGap, session, have, ev.Seq)
				}
				return flush()
			}
		}
		if err := mb.Error(); errors.Is(err, nats.ErrNoResponders) && got == 0 && refused < fetchRefusals {
			refused++
			if err := pause(ctx, time.Duration(refused)*fetchPause); err != nil {
				return err
			}
			continue
		} else if err != nil {
			return fmt.Errorf("jsreplica: session %s: fetch: %w", session, err)
		}
		refused = 0
		if err := ctx.Err(); err != nil {
			return err
		}
		if got == 0 {
			return fmt.Errorf("jsreplica: session %s: the stream holds up to message %d but delivered nothing past seq %d", session, end, next-1)
		}
	}
}

// A fetch that finds no consumer to answer it ("no responders": in a
// cluster, a consumer just made may not take requests for a moment) is
// tried again up to fetchRefusals times in a row, after fetchPause, twice
// that, and so on.
const (
	fetchRefusals = 8
	fetchPause    = 50 * time.Millisecond
)

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// sameAsStored checks that dst holds ev at its seq, byte for byte.
func sameAsStored(ctx context.Context, dst events.Log, session string, ev *events.Event) error {
	for stored, err := range dst.Read(ctx, session, ev.Seq) {
		if err != nil {
			return err
		}
		if !bytes.Equal(events.Encode(&stored), events.Encode(ev)) {
			return fmt.Errorf("%w: session %s: the local log's event %d is not the stream's", ErrConflict, session, ev.Seq)
		}
		return nil
	}
	return fmt.Errorf("jsreplica: session %s: the local log has no event %d", session, ev.Seq)
}

// sessionMeta reads the session's recorded metadata; recorded is false if
// the bucket has none.
func sessionMeta(ctx context.Context, js jetstream.JetStream, session string) (meta events.SessionMeta, recorded bool, err error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return events.SessionMeta{}, false, nil
	}
	if err != nil {
		return events.SessionMeta{}, false, fmt.Errorf("jsreplica: bucket %s: %w", Bucket, err)
	}
	e, err := kv.Get(ctx, session)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return events.SessionMeta{}, false, nil
	}
	if err != nil {
		return events.SessionMeta{}, false, fmt.Errorf("jsreplica: session %s: metadata: %w", session, err)
	}
	if meta, err = DecodeMeta(session, e.Value()); err != nil {
		return events.SessionMeta{}, false, err
	}
	return meta, true, nil
}

// DecodeMeta decodes session's entry v of the metadata bucket, which must
// name the session (a flipped bit in the ID leaves valid JSON); an entry
// that does not is a *events.CorruptError.
func DecodeMeta(session string, v []byte) (events.SessionMeta, error) {
	var meta events.SessionMeta
	if err := json.Unmarshal(v, &meta); err != nil {
		return events.SessionMeta{}, &events.CorruptError{Session: session, Key: Bucket + "." + session, Err: err}
	}
	if meta.ID != session {
		return events.SessionMeta{}, &events.CorruptError{Session: session, Key: Bucket + "." + session,
			Err: fmt.Errorf("%w: metadata names session %q", events.ErrCorrupt, meta.ID)}
	}
	return meta, nil
}

// metaFromStart derives the metadata of a session that is not a fork from
// its first event, session.started.
func metaFromStart(ctx context.Context, js jetstream.JetStream, session string) (events.SessionMeta, error) {
	st, err := js.Stream(ctx, Stream)
	if err != nil {
		return events.SessionMeta{}, err
	}
	// The subject's first message at or after stream sequence 1.
	m, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(Subject(session)))
	if err != nil {
		return events.SessionMeta{}, fmt.Errorf("jsreplica: session %s: first event: %w", session, err)
	}
	var ev events.Event
	if err := events.Decode(m.Data, &ev); err != nil {
		return events.SessionMeta{}, &events.CorruptError{Session: session, Seq: 1, Err: err}
	}
	if ev.Seq != 1 || ev.Type != payload.EvSessionStarted {
		return events.SessionMeta{}, fmt.Errorf("jsreplica: session %s begins at seq %d (%s) and has no recorded metadata: a fork needs its parent and fork point", session, ev.Seq, ev.Type)
	}
	var p payload.SessionStarted
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return events.SessionMeta{}, &events.CorruptError{Session: session, Seq: 1, Err: err}
	}
	return events.SessionMeta{ID: session, World: p.World, WorldHash: p.WorldHash, Seed: p.Seed, Status: events.StatusInterrupted}, nil
}

// Session is a session the stream knows.
type Session struct {
	ID string
	// Events is how many events the stream holds on the session's subject:
	// its own, after its fork point for a fork.
	Events uint64
	// Meta is the recorded metadata, if Recorded.
	Meta     events.SessionMeta
	Recorded bool
}

// Sessions lists the sessions the stream holds events of or the bucket
// holds metadata of, sorted by ID. Beside metadata that does not decode it
// lists the others (a session with events and no readable metadata by its
// ID alone), with a *events.DamagedError naming each.
func Sessions(ctx context.Context, js jetstream.JetStream) ([]Session, error) {
	byID := map[string]*Session{}
	var damaged []error
	st, err := js.Stream(ctx, Stream)
	if err != nil {
		return nil, fmt.Errorf("jsreplica: stream %s: %w", Stream, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(SubjectPrefix+">"))
	if err != nil {
		return nil, fmt.Errorf("jsreplica: stream %s: %w", Stream, err)
	}
	for subj, n := range info.State.Subjects {
		id := strings.TrimPrefix(subj, SubjectPrefix)
		byID[id] = &Session{ID: id, Events: n}
	}
	kv, err := js.KeyValue(ctx, Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
	case err != nil:
		return nil, fmt.Errorf("jsreplica: bucket %s: %w", Bucket, err)
	default:
		keys, err := kv.ListKeys(ctx)
		if err != nil {
			return nil, fmt.Errorf("jsreplica: bucket %s: %w", Bucket, err)
		}
		for id := range keys.Keys() {
			meta, ok, err := sessionMeta(ctx, js, id)
			if errors.As(err, new(*events.CorruptError)) {
				damaged = append(damaged, err) // the others are listed
				continue
			}
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			s := byID[id]
			if s == nil {
				s = &Session{ID: id}
				byID[id] = s
			}
			s.Meta, s.Recorded = meta, true
		}
	}
	out := make([]Session, 0, len(byID))
	for _, s := range byID { // order: sorted below
		if !s.Recorded {
			s.Meta = events.SessionMeta{ID: s.ID}
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	sort.Slice(damaged, func(i, j int) bool { return damaged[i].Error() < damaged[j].Error() })
	return out, events.Damaged(damaged)
}
