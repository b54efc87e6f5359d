package jsreplica

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/events"
)

// Names of the stream, its subjects and the metadata bucket.
const (
	Stream        = "CORPSIM_LOG"
	SubjectPrefix = "corpsim.v1.log."
	Bucket        = "CORPSIM_SESSIONS"
)

// Subject is the stream subject holding session's events.
func Subject(session string) string { return SubjectPrefix + session }

// MsgID is the Nats-Msg-Id of an event of session.
func MsgID(session string, ev *events.Event) string { return session + "/" + ev.ID.String() }

// Defaults of Config.
const (
	DefaultDuplicates = 30 * time.Second
	DefaultRetryFor   = 30 * time.Second
	DefaultAckWait    = 2 * time.Second
)

// Errors. ErrConflict and ErrGap wrap events.ErrConflict.
var (
	// ErrConflict reports that the stream holds, at a seq of the batch, an
	// event different from the batch's: another writer, or a local log that
	// diverged from the stream.
	ErrConflict = fmt.Errorf("jsreplica: the stream's copy differs: %w", events.ErrConflict)
	// ErrGap reports a batch that does not follow the stream's last event of
	// the session (events are missing in between; see Replica.Sync).
	ErrGap = fmt.Errorf("jsreplica: batch does not follow the stream: %w", events.ErrConflict)
)

// Config configures a Replica. The zero value is a single-replica stream
// with the default windows.
type Config struct {
	// Replicas is the number of copies of the stream and bucket the cluster
	// keeps (1, 3 or 5); 0 means 1.
	Replicas int
	// Duplicates is the stream's deduplication window. It must cover the
	// time from a publish to its retry (a lost acknowledgement); anything
	// older is found by reading the subject's last message. The server keeps
	// every message ID of the window in memory (about 100 bytes each), so
	// at 20,000 events/s the default costs about 60 MB. 0 means
	// DefaultDuplicates.
	Duplicates time.Duration
	// RetryFor bounds how long Replicate retries a batch after transient
	// failures (a node or leader lost, an acknowledgement timed out);
	// 0 means DefaultRetryFor.
	RetryFor time.Duration
	// AckWait bounds the wait for one batch's acknowledgements (and for
	// each read of the stream's tip); 0 means DefaultAckWait. A publish
	// sent to a node that died is never acknowledged: this is how long it
	// takes to notice and retry through another node. Acknowledgements
	// normally take milliseconds, and a retry that was not needed costs
	// only a read of the tip, so it is short.
	AckWait time.Duration
	// Batch publishes a batch at a time, the expected last subject
	// sequence on its first message only, instead of one event at a time
	// each with its expectation: three to six times the rate, but when a
	// replicated stream's leader dies in the middle of a batch one message
	// can be lost while later ones are stored (see the package doc). Only
	// for a stream on a single server. The zero value is the safe mode.
	Batch bool
	// Logger receives retries and resyncs; nil means silent.
	Logger hclog.Logger
}

// Validate reports whether c can be used.
func (c *Config) Validate() error {
	switch {
	case c.Replicas < 0 || c.Replicas > 5:
		return fmt.Errorf("jsreplica: replicas %d: want 1 to 5", c.Replicas)
	case c.Duplicates < 0, c.RetryFor < 0, c.AckWait < 0:
		return errors.New("jsreplica: negative duration")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Duplicates == 0 {
		c.Duplicates = DefaultDuplicates
	}
	if c.RetryFor == 0 {
		c.RetryFor = DefaultRetryFor
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// StreamConfig is the configuration Ensure gives the stream.
func StreamConfig(c Config) jetstream.StreamConfig {
	c = c.withDefaults()
	return jetstream.StreamConfig{
		Name:        Stream,
		Description: "corpsim event logs, one subject per session",
		Subjects:    []string{SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		Duplicates:  c.Duplicates,
		DenyDelete:  true,
	}
}

// Ensure creates the stream and the metadata bucket, or updates their
// configuration to c's.
func Ensure(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.Stream, jetstream.KeyValue, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	c = c.withDefaults()
	st, err := js.CreateOrUpdateStream(ctx, StreamConfig(c))
	if err != nil {
		return nil, nil, fmt.Errorf("jsreplica: stream %s: %w", Stream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "corpsim session metadata (events.SessionMeta JSON by session ID)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("jsreplica: bucket %s: %w", Bucket, err)
	}
	return st, kv, nil
}

// Replica publishes sessions' events to the stream; it implements
// sim/driver's Replica. It is safe for concurrent use by several sessions;
// calls for one session must not overlap (the driver makes them in order).
type Replica struct {
	cfg    Config
	js     jetstream.JetStream
	stream jetstream.Stream
	kv     jetstream.KeyValue
	log    hclog.Logger
	// checkpoints is CheckpointBucket (see ReplicateCheckpoint).
	checkpoints jetstream.ObjectStore

	mu       sync.Mutex
	sessions map[string]tip // what the stream is known to hold, by session
}

// tip is the last event of a session the stream holds.
type tip struct {
	seq       uint64 // event seq (0: none yet)
	streamSeq uint64 // its stream sequence (0: none)
	id        [16]byte
	sum       uint32 // its encoding's checksum
}

// New connects a Replica through nc, creating or updating the stream and
// the bucket. nc stays the caller's: close it after the Replica's last use.
func New(ctx context.Context, nc *nats.Conn, c Config) (*Replica, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(c.AckWait))
	if err != nil {
		return nil, fmt.Errorf("jsreplica: %w", err)
	}
	st, kv, err := Ensure(ctx, js, c)
	if err != nil {
		return nil, err
	}
	obs, err := ensureCheckpoints(ctx, js, c)
	if err != nil {
		return nil, err
	}
	return &Replica{cfg: c, js: js, stream: st, kv: kv, log: c.Logger, checkpoints: obs, sessions: map[string]tip{}}, nil
}

// JetStream is the context the Replica publishes with.
func (r *Replica) JetStream() jetstream.JetStream { return r.js }

// PutSession records meta in the bucket (on create, finish, fork).
func (r *Replica) PutSession(ctx context.Context, meta events.SessionMeta) error {
	if err := meta.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("jsreplica: session %s: %w", meta.ID, err)
	}
	if _, err := r.kv.Put(ctx, meta.ID, b); err != nil {
		return fmt.Errorf("jsreplica: session %s: put metadata: %w", meta.ID, err)
	}
	return nil
}

// Forget drops what the Replica tracks of session (when it finished or
// moved to another worker); the next Replicate reads it from the stream.
func (r *Replica) Forget(session string) {
	r.mu.Lock()
	delete(r.sessions, session)
	r.mu.Unlock()
}

// Replicate publishes batch, the events of session just appended to the
// local log, and returns when the stream has stored every one of them. A
// batch the stream already holds (given again after a restart) is not
// stored twice. Transient failures are retried for Config.RetryFor; the
// error of a batch that conflicts with the stream wraps ErrConflict or
// ErrGap and is not retried.
func (r *Replica) Replicate(ctx context.Context, session string, batch []events.Event) error {
	if len(batch) == 0 {
		return nil
	}
	if err := events.ValidSessionID(session); err != nil {
		return err
	}
	for i := 1; i < len(batch); i++ {
		if batch[i].Seq != batch[i-1].Seq+1 {
			return fmt.Errorf("%w: session %s: seq %d follows %d", events.ErrBadBatch, session, batch[i].Seq, batch[i-1].Seq)
		}
	}
	deadline := time.Now().Add(r.cfg.RetryFor)
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := r.replicateOnce(ctx, session, batch)
		if err == nil {
			return nil
		}
		r.Forget(session) // whatever happened, read the stream's tip again
		if errors.Is(err, events.ErrConflict) || errors.Is(err, events.ErrCorrupt) || ctx.Err() != nil ||
			time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("jsreplica: session %s: seqs %d-%d: %w", session, batch[0].Seq, batch[len(batch)-1].Seq, err)
		}
		r.log.Warn("replication failed, retrying", "session", session, "attempt", attempt, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("jsreplica: session %s: %w (after %v)", session, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

func (r *Replica) replicateOnce(ctx context.Context, session string, batch []events.Event) error {
	r.mu.Lock()
	t, ok := r.sessions[session]
	r.mu.Unlock()
	if !ok {
		var err error
		if t, err = r.readTip(ctx, session); err != nil {
			return err
		}
	}
	// Skip what the stream already holds, checking the boundary event.
	first, last := batch[0].Seq, batch[len(batch)-1].Seq
	if t.seq >= first {
		if t.seq <= last {
			ev := &batch[t.seq-first]
			if enc := events.Encode(ev); ev.ID != t.id || binary.BigEndian.Uint32(enc[len(enc)-4:]) != t.sum {
				return fmt.Errorf("%w: seq %d", ErrConflict, t.seq)
			}
		}
		if t.seq >= last {
			r.setTip(session, t)
			return nil
		}
		batch = batch[t.seq-first+1:]
	} else if t.seq != 0 && first != t.seq+1 {
		return fmt.Errorf("%w: the stream ends at seq %d, the batch begins at %d", ErrGap, t.seq, first)
	}
	var err error
	if r.cfg.Batch {
		t, err = r.publishBatch(ctx, session, t, batch)
	} else {
		t, err = r.publishEach(ctx, session, t, batch)
	}
	if err != nil {
		return err
	}
	r.setTip(session, t)
	return nil
}

func (r *Replica) setTip(session string, t tip) {
	r.mu.Lock()
	r.sessions[session] = t
	r.mu.Unlock()
}

// readTip reads the session's last event from the stream, and checks that
// the subject holds one message per seq from its first event to its last
// (a batch whose publishing failed part way could have left a hole).
func (r *Replica) readTip(ctx context.Context, session string) (tip, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AckWait)
	defer cancel()
	subject := Subject(session)
	m, err := r.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return tip{}, nil
	}
	if err != nil {
		return tip{}, fmt.Errorf("read the last event: %w", err)
	}
	var ev events.Event
	if err := events.Decode(m.Data, &ev); err != nil {
		return tip{}, &events.CorruptError{Session: session, Key: subject + "@" + strconv.FormatUint(m.Sequence, 10), Err: err}
	}
	t := tip{seq: ev.Seq, streamSeq: m.Sequence, id: ev.ID, sum: binary.BigEndian.Uint32(m.Data[len(m.Data)-4:])}
	fm, err := r.stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
	if err != nil {
		return tip{}, fmt.Errorf("read the first event: %w", err)
	}
	if err := events.Decode(fm.Data, &ev); err != nil {
		return tip{}, &events.CorruptError{Session: session, Key: subject + "@" + strconv.FormatUint(fm.Sequence, 10), Err: err}
	}
	info, err := r.stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return tip{}, fmt.Errorf("count the events: %w", err)
	}
	if n := info.State.Subjects[subject]; ev.Seq > t.seq || n != t.seq-ev.Seq+1 {
		return tip{}, &events.CorruptError{Session: session, Seq: t.seq, Key: subject,
			Err: fmt.Errorf("%w: the stream holds %d messages for seqs %d to %d", events.ErrCorrupt, n, ev.Seq, t.seq)}
	}
	return t, nil
}

// message builds the message of ev, with its ID and, if expect, the
// expected last subject sequence.
func message(session string, ev *events.Event, expect bool, lastStreamSeq uint64) (*nats.Msg, uint32) {
	data := events.Encode(ev)
	m := &nats.Msg{Subject: Subject(session), Data: data, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, MsgID(session, ev))
	if expect {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(lastStreamSeq, 10))
	}
	return m, binary.BigEndian.Uint32(data[len(data)-4:])
}

// publishBatch publishes the first event of batch and waits for its
// acknowledgement: it carries the expectation, and once it is stored the
// subject is this writer's (a later message without an expectation must not
// be stored after a first one that was refused). The rest follow
// asynchronously, and their acknowledgements are awaited together.
func (r *Replica) publishBatch(ctx context.Context, session string, t tip, batch []events.Event) (tip, error) {
	t, err := r.publishEach(ctx, session, t, batch[:1])
	if err != nil || len(batch) == 1 {
		return t, err
	}
	batch = batch[1:]
	ctx, cancel := context.WithTimeout(ctx, r.cfg.AckWait)
	defer cancel()
	futs := make([]jetstream.PubAckFuture, 0, len(batch))
	sums := make([]uint32, len(batch))
	for i := range batch {
		m, sum := message(session, &batch[i], false, 0)
		sums[i] = sum
		f, err := r.js.PublishMsgAsync(m, jetstream.WithStallWait(r.cfg.AckWait))
		if err != nil {
			return t, fmt.Errorf("publish seq %d: %w", batch[i].Seq, err)
		}
		futs = append(futs, f)
	}
	var firstErr error
	for i, f := range futs {
		select {
		case ack := <-f.Ok():
			if firstErr == nil {
				t = tip{seq: batch[i].Seq, streamSeq: ack.Sequence, id: batch[i].ID, sum: sums[i]}
			}
		case err := <-f.Err():
			if firstErr == nil {
				firstErr = fmt.Errorf("seq %d: %w", batch[i].Seq, err)
			}
		case <-ctx.Done():
			return t, fmt.Errorf("seq %d not acknowledged: %w", batch[i].Seq, ctx.Err())
		}
	}
	return t, firstErr
}

func (r *Replica) publishEach(ctx context.Context, session string, t tip, batch []events.Event) (tip, error) {
	for i := range batch {
		m, sum := message(session, &batch[i], true, t.streamSeq)
		actx, cancel := context.WithTimeout(ctx, r.cfg.AckWait)
		ack, err := r.js.PublishMsg(actx, m)
		cancel()
		if err != nil {
			return t, fmt.Errorf("seq %d: %w", batch[i].Seq, err)
		}
		t = tip{seq: batch[i].Seq, streamSeq: ack.Sequence, id: batch[i].ID, sum: sum}
	}
	return t, nil
}

// syncBatch is how many events Sync and Restore move in one publish or
// append.
const syncBatch = 1024

// Sync publishes the events of session that src, its local log, holds and
// the stream lacks (after a restart, before the driver continues the
// session), and returns the session's last seq. It fails with ErrConflict
// if the stream's last event differs from src's at that seq.
func (r *Replica) Sync(ctx context.Context, src events.Log, session string) (uint64, error) {
	meta, err := src.Session(ctx, session)
	if err != nil {
		return 0, err
	}
	r.Forget(session)
	t, err := r.readTip(ctx, session)
	if err != nil {
		return 0, fmt.Errorf("jsreplica: session %s: %w", session, err)
	}
	r.setTip(session, t)
	from := max(t.seq, meta.ForkSeq+1) // from t.seq: Replicate checks the boundary
	last := t.seq
	var batch []events.Event
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := r.Replicate(ctx, session, batch)
		last = batch[len(batch)-1].Seq
		batch = batch[:0]
		return err
	}
	for ev, err := range src.Read(ctx, session, from) {
		if err != nil {
			return last, err
		}
		if ev.Session != session {
			continue // a fork's prefix: its parent's
		}
		batch = append(batch, ev)
		if len(batch) == syncBatch {
			if err := flush(); err != nil {
				return last, err
			}
		}
	}
	if err := flush(); err != nil {
		return last, err
	}
	return last, nil
}
