package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// Buckets and the queue group of worker mode.
const (
	// LeaseBucket holds, for each running session, a lease: its owner's
	// worker name, renewed every RenewEvery; a key expires LeaseTTL after
	// its last renewal.
	LeaseBucket = "CORPSIM_LEASES"
	// OwnerBucket holds the worker that last ran each session (no TTL).
	OwnerBucket = "CORPSIM_OWNERS"
	// WorkerQueue is the queue group through which workers take create
	// requests.
	WorkerQueue = "corpsim-workers"
)

// Defaults of WorkerConfig.
const (
	DefaultLeaseTTL   = 10 * time.Second
	DefaultRenewEvery = 3 * time.Second
	DefaultScanEvery  = 2 * time.Second
	DefaultRequestFor = 5 * time.Second
)

// listFor bounds a listing of the cluster's sessions or leases (a scan's,
// a list request's); adoptFor bounds one adoption (restoring the session
// from the stream and replaying it).
const (
	listFor  = 30 * time.Second
	adoptFor = 30 * time.Second
)

// errWorkerConfig marks a worker's settings that the cluster refuses:
// trying again does not help.
var errWorkerConfig = errors.New("server: worker configuration")

// connectFor bounds how long a starting worker waits for the cluster to
// hold its stream and buckets.
const connectFor = 30 * time.Second

// ErrLeaseLost stops a session whose worker could not keep its lease.
var ErrLeaseLost = errors.New("server: the session's lease was lost; another worker may run it")

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	Name string // the worker's name, unique in the cluster; required
	// Conn reaches JetStream (the log stream, the buckets); required. It
	// stays the caller's.
	Conn *nats.Conn
	// Replicas of the stream and the buckets; 0 means 3 when the cluster
	// has three servers or more, else 1. A cluster still forming is waited
	// for (up to connectFor), never settled for fewer copies.
	Replicas   int
	LeaseTTL   time.Duration // 0: DefaultLeaseTTL
	RenewEvery time.Duration // 0: DefaultRenewEvery
	ScanEvery  time.Duration // 0: DefaultScanEvery
	// RequestFor bounds each single request of a scan (a session's
	// metadata read, a lease taken); 0 means DefaultRequestFor. A request
	// that a NATS node took as it died is never answered, nor failed:
	// nats.go waits for its reply until its context ends. Bounded by the
	// whole scan's budget, one such request cost a worker every adoption
	// for 30 s after a node of the cluster was shut down.
	RequestFor time.Duration
	// RetryFor bounds a replication's retries (jsreplica.Config.RetryFor);
	// it is also cut at the lease's end.
	RetryFor time.Duration
}

// Worker is one of several `corpsim serve --worker` processes sharing a
// NATS cluster: it takes new sessions through the WorkerQueue group, keeps
// every session's log in its own Log and in the JetStream stream
// (jsreplica), holds a lease in LeaseBucket for each session it runs, and
// adopts running sessions whose lease expired (their worker died): it
// restores them from the stream into its Log and continues them with their
// built-in seats re-created.
//
// A session stops at once on its worker when its lease cannot be renewed
// before it would expire (the service's gate, and each replication is cut
// at the lease's end); another worker adopts it only after the lease
// expired. The stream's per-batch expected sequence refuses a batch from a
// writer that has not seen the other's events.
//
//	w, err := server.NewWorker(ctx, server.WorkerConfig{Name: "w1", Conn: nc}, server.Config{Log: log, Bus: bus})
//	defer w.Shutdown(ctx)
type Worker struct {
	cfg     WorkerConfig
	svc     *Service
	log     events.Log
	logger  hclog.Logger
	js      jetstream.JetStream
	replica *jsreplica.Replica
	leases  jetstream.KeyValue
	owners  jetstream.KeyValue
	meta    jetstream.KeyValue

	mu   sync.Mutex
	held map[string]*lease
	// replFailed: sessions whose replication failed (handed off, not failed).
	replFailed map[string]bool
	// over: sessions the metadata records finished or failed, which never
	// change again; scans do not read them again.
	over map[string]bool
	// unreadable is the revision of each session's metadata entry the
	// scan found damaged and said so: said once, until the entry changes.
	unreadable map[string]uint64

	stop chan struct{}
	wg   sync.WaitGroup
}

type lease struct {
	rev     uint64
	renewed time.Time
	lost    bool
}

// NewWorker starts a Service in worker mode on svcCfg (Replica, Queue and
// Hooks are the worker's; StateFile is not used: a dead worker's sessions
// are adopted by the others) and its lease and adoption loops.
func NewWorker(ctx context.Context, cfg WorkerConfig, svcCfg Config) (*Worker, error) {
	if cfg.Name == "" || cfg.Conn == nil {
		return nil, errors.New("server: a worker needs a name and a connection")
	}
	if err := events.ValidSessionID(cfg.Name); err != nil {
		return nil, fmt.Errorf("server: worker name: %w", err)
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.RenewEvery == 0 {
		cfg.RenewEvery = min(DefaultRenewEvery, cfg.LeaseTTL/4)
	}
	if cfg.ScanEvery == 0 {
		cfg.ScanEvery = DefaultScanEvery
	}
	if cfg.RequestFor == 0 {
		cfg.RequestFor = DefaultRequestFor
	}
	if cfg.RenewEvery*2 >= cfg.LeaseTTL {
		return nil, fmt.Errorf("server: lease TTL %v must be more than twice the renewal interval %v", cfg.LeaseTTL, cfg.RenewEvery)
	}
	logger := svcCfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	w := &Worker{cfg: cfg, log: svcCfg.Log, logger: logger.With("worker", cfg.Name), held: map[string]*lease{},
		replFailed: map[string]bool{}, over: map[string]bool{}, unreadable: map[string]uint64{}, stop: make(chan struct{})}
	replicas := cfg.Replicas
	if replicas == 0 {
		// Three copies when the cluster has three servers, else one. The
		// client knows the cluster's servers from the one it reached; a
		// cluster still forming refuses three copies for a while, and
		// settling for one then would put every session's metadata on a
		// single node, lost with it.
		replicas = 1
		if len(cfg.Conn.Servers()) >= 3 {
			replicas = 3
		}
	}
	var err error
	giveUp := time.Now().Add(connectFor)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if err = w.connect(ctx, replicas); err == nil {
			break
		}
		if errors.Is(err, errWorkerConfig) || time.Now().After(giveUp) {
			return nil, err
		}
		w.logger.Info("cannot set up the stream and buckets yet; trying again", "replicas", replicas, "error", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("server: the stream and buckets with %d replicas: %w", replicas, err)
		case <-time.After(wait):
		}
	}
	svcCfg.Replica = fencedReplica{w}
	svcCfg.Queue = WorkerQueue
	svcCfg.StateFile = ""
	svcCfg.Hooks = Hooks{Starting: w.starting, Gate: w.gate, Ended: w.ended, List: w.list, Fetch: w.fetch}
	if w.svc, err = New(svcCfg); err != nil {
		return nil, err
	}
	w.wg.Add(2)
	go w.renewLoop()
	go w.scanLoop()
	return w, nil
}

func (w *Worker) connect(ctx context.Context, replicas int) error {
	// One event at a time (jsreplica's default), each with the expected
	// last subject sequence. With only the first of a batch carrying it
	// (Config.Batch), a stream leader lost in the
	// middle of a batch can drop one event and store the next ones (sent
	// after the new leader took over), a hole no retry can mend (seen in
	// TestFailoverNATSNodeKilled).
	r, err := jsreplica.New(ctx, w.cfg.Conn, jsreplica.Config{Replicas: replicas, RetryFor: w.cfg.RetryFor, Logger: w.logger})
	if err != nil {
		return err
	}
	w.replica, w.js = r, r.JetStream()
	// The TTL is the bucket's, shared by every worker: the first worker
	// makes the bucket, later ones must agree with it (updating it would
	// change the leases of every other worker under their feet).
	if w.leases, err = w.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: LeaseBucket,
		Description: "corpsim session leases: the worker running each session", History: 1, TTL: w.cfg.LeaseTTL,
		Storage: jetstream.FileStorage, Replicas: replicas}); errors.Is(err, jetstream.ErrBucketExists) {
		w.leases, err = w.js.KeyValue(ctx, LeaseBucket)
	}
	if err != nil {
		return fmt.Errorf("server: bucket %s: %w", LeaseBucket, err)
	}
	st, err := w.leases.Status(ctx)
	if err != nil {
		return fmt.Errorf("server: bucket %s: %w", LeaseBucket, err)
	}
	if st.TTL() != w.cfg.LeaseTTL {
		return fmt.Errorf("%w: the cluster's leases last %v (bucket %s), this worker was given --lease-ttl %v: give every worker the same", errWorkerConfig, st.TTL(), LeaseBucket, w.cfg.LeaseTTL)
	}
	if w.owners, err = w.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: OwnerBucket,
		Description: "corpsim: the worker that last ran each session", History: 1,
		Storage: jetstream.FileStorage, Replicas: replicas}); err != nil {
		return fmt.Errorf("server: bucket %s: %w", OwnerBucket, err)
	}
	if w.meta, err = w.js.KeyValue(ctx, jsreplica.Bucket); err != nil {
		return fmt.Errorf("server: bucket %s: %w", jsreplica.Bucket, err)
	}
	return nil
}

// Service is the worker's service (Create, Status, Wait, Counts).
func (w *Worker) Service() *Service { return w.svc }

// Shutdown stops the loops and shuts the service down: running sessions
// stop after their batch and their leases are released, so that other
// workers adopt them at once.
func (w *Worker) Shutdown(ctx context.Context) error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	err := w.svc.Shutdown(ctx)
	w.wg.Wait()
	return err
}

// leaseEnd is when a lease renewed at t must be considered gone: a third
// of the TTL before it expires on the server.
func (w *Worker) leaseEnd(l *lease) time.Time { return l.renewed.Add(w.cfg.LeaseTTL * 2 / 3) }

// owner is what OwnerBucket records of a session: its worker and what a
// worker adopting it needs besides its metadata.
type owner struct {
	Worker      string `json:"worker"`
	TurnTimeout string `json:"turn_timeout,omitempty"`
	JoinTimeout string `json:"join_timeout,omitempty"`
	// Wait and Load let another worker start a session that had not
	// stored its first event yet (created with wait and not started).
	Wait bool    `json:"wait,omitempty"`
	Load float64 `json:"load,omitempty"`
	// DrawKey is the session's draw key (Launched.DrawKey): a session
	// started by another worker draws with its creator's key, whatever
	// the adopter's secret.
	DrawKey []byte `json:"draw_key,omitempty"`
}

func (w *Worker) starting(ctx context.Context, la Launched) error {
	meta := la.Meta
	id := meta.ID
	w.mu.Lock()
	_, adopted := w.held[id]
	w.mu.Unlock()
	if !adopted {
		rev, err := w.leases.Create(ctx, id, []byte(w.cfg.Name))
		if err != nil {
			return fmt.Errorf("server: session %s: lease: %w", id, err)
		}
		w.mu.Lock()
		w.held[id] = &lease{rev: rev, renewed: time.Now()}
		w.mu.Unlock()
	}
	rec, _ := json.Marshal(owner{Worker: w.cfg.Name, TurnTimeout: la.TurnTimeout.String(), JoinTimeout: la.JoinTimeout.String(),
		Wait: la.Wait, Load: la.Load, DrawKey: la.DrawKey})
	if _, err := w.owners.Put(ctx, id, rec); err != nil {
		w.logger.Warn("cannot record the session's owner", "session", id, "error", err)
	}
	meta.Status = events.StatusRunning
	if err := w.replica.PutSession(ctx, meta); err != nil {
		w.release(id)
		return err
	}
	return nil
}

func (w *Worker) gate(_ context.Context, session string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.held[session]
	if l == nil || l.lost || time.Now().After(w.leaseEnd(l)) {
		return ErrLeaseLost
	}
	return nil
}

// ended records a session's end in the cluster and releases its lease,
// unless the lease was lost (the session is another worker's now).
func (w *Worker) ended(meta events.SessionMeta, err error, handoff bool) {
	id := meta.ID
	w.mu.Lock()
	l := w.held[id]
	lost := l == nil || l.lost || errors.Is(err, ErrLeaseLost)
	if w.replFailed[id] {
		handoff = true
		delete(w.replFailed, id)
	}
	w.mu.Unlock()
	w.replica.Forget(id)
	log := w.logger.With("session", id)
	if lost {
		log.Warn("lease lost: the session stopped here and is left to the worker that holds it", "last_seq", meta.LastSeq)
		w.mu.Lock()
		delete(w.held, id)
		w.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if handoff {
		// Left running in the metadata: another worker (or this one)
		// adopts it once the lease is gone.
		meta.Status = events.StatusRunning
		log.Info("session handed off", "last_seq", meta.LastSeq)
	}
	if perr := w.replica.PutSession(ctx, meta); perr != nil {
		log.Error("cannot record the session's end in the cluster", "status", meta.Status, "error", perr)
	}
	w.release(id)
}

// release deletes the worker's lease of id.
func (w *Worker) release(id string) {
	w.mu.Lock()
	l := w.held[id]
	delete(w.held, id)
	w.mu.Unlock()
	if l == nil || l.lost {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := w.leases.Delete(ctx, id, jetstream.LastRevision(l.rev))
	if errors.Is(err, jetstream.ErrKeyExists) {
		if later, ok := w.laterOwnRevision(ctx, id, l.rev); ok {
			err = w.leases.Delete(ctx, id, jetstream.LastRevision(later))
		}
	}
	if err != nil {
		w.logger.Warn("cannot release the lease; it expires on its own", "session", id, "error", err)
	}
}

// laterOwnRevision reads lease id after a write at revision rev was
// refused for another revision: a renewal whose reply was lost (its NATS
// node died, the request timed out) may have been stored, and the lease
// is then still this worker's at a later revision, which it returns. Only
// this worker writes its name on a lease it holds.
func (w *Worker) laterOwnRevision(ctx context.Context, id string, rev uint64) (uint64, bool) {
	e, err := w.leases.Get(ctx, id)
	if err != nil || e.Revision() <= rev || string(e.Value()) != w.cfg.Name {
		return 0, false
	}
	return e.Revision(), true
}

func (w *Worker) renewLoop() {
	defer w.wg.Done()
	t := time.NewTicker(w.cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.renewAll()
	}
}

// renewAll renews every lease the worker holds and has not lost.
func (w *Worker) renewAll() {
	w.mu.Lock()
	ids := make([]string, 0, len(w.held))
	for id, l := range w.held {
		if !l.lost {
			ids = append(ids, id)
		}
	}
	w.mu.Unlock()
	// Renewed concurrently, a few at a time: one after another, the last
	// of hundreds of leases could be renewed too late under load.
	sem := make(chan struct{}, renewParallel)
	var wg sync.WaitGroup
	for _, id := range ids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			w.renew(id)
		}()
	}
	wg.Wait()
}

// renewParallel bounds the lease renewals in flight at once.
const renewParallel = 16

func (w *Worker) renew(id string) {
	w.mu.Lock()
	l := w.held[id]
	if l == nil || l.lost {
		w.mu.Unlock()
		return
	}
	rev := l.rev
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.RenewEvery)
	defer cancel()
	now := time.Now()
	nrev, err := w.leases.Update(ctx, id, []byte(w.cfg.Name), rev)
	if errors.Is(err, jetstream.ErrKeyExists) {
		if later, ok := w.laterOwnRevision(ctx, id, rev); ok {
			now = time.Now()
			nrev, err = w.leases.Update(ctx, id, []byte(w.cfg.Name), later)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if l = w.held[id]; l == nil || l.rev != rev {
		return
	}
	switch {
	case err == nil:
		l.rev, l.renewed = nrev, now
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyNotFound), time.Now().After(w.leaseEnd(l)):
		// Someone else's now, expired, or not renewed in time.
		l.lost = true
		w.logger.Warn("lease lost; the session stops here", "session", id, "error", err)
	default:
		w.logger.Warn("lease renewal failed; trying again", "session", id, "error", err)
	}
}

func (w *Worker) scanLoop() {
	defer w.wg.Done()
	for {
		// Jittered, so that workers do not race for the same sessions.
		d := w.cfg.ScanEvery/2 + rand.N(w.cfg.ScanEvery)
		select {
		case <-w.stop:
			return
		case <-time.After(d):
		}
		if err := w.scan(); err != nil {
			w.logger.Warn("looking for orphaned sessions failed", "error", err)
		}
	}
}

// adoptPerScan bounds the sessions one scan adopts, to spread them.
const adoptPerScan = 2

// scan looks for running sessions without a lease and adopts some.
func (w *Worker) scan() error {
	s := w.svc
	s.mu.Lock()
	room := s.cfg.MaxSessions - s.runningLocked()
	closed := s.closed
	s.mu.Unlock()
	if closed || room <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), listFor)
	defer cancel()
	metas, err := w.runningMetas(ctx)
	if err != nil {
		return err
	}
	leased, err := keys(ctx, w.leases)
	if err != nil {
		return err
	}
	// Each request on its own bound, each adoption on its own budget: a
	// request lost with a node costs RequestFor, not the scan.
	request := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), w.cfg.RequestFor)
	}
	var orphans []string
	for _, m := range metas {
		if !leased[m.ID] && !w.busy(m.ID) {
			orphans = append(orphans, m.ID)
		}
	}
	rand.Shuffle(len(orphans), func(i, j int) { orphans[i], orphans[j] = orphans[j], orphans[i] })
	n := 0
	for _, id := range orphans {
		if n >= min(room, adoptPerScan) {
			break
		}
		rctx, rcancel := request()
		rev, err := w.leases.Create(rctx, id, []byte(w.cfg.Name))
		rcancel()
		if err != nil {
			continue // another worker won it (or the request failed: the lease expires)
		}
		// The session may have ended (failed, stopped) between the listing
		// and the lease: its owner records the end before it lets the lease go.
		// (A metadata read that fails is no news: adopt as before.)
		rctx, rcancel = request()
		e, err := w.meta.Get(rctx, id)
		rcancel()
		if err == nil && !stillRunning(e.Value()) {
			rctx, rcancel = request()
			_ = w.leases.Delete(rctx, id, jetstream.LastRevision(rev))
			rcancel()
			continue
		}
		w.mu.Lock()
		w.held[id] = &lease{rev: rev, renewed: time.Now()}
		w.mu.Unlock()
		n++
		actx, acancel := context.WithTimeout(context.Background(), adoptFor)
		err = w.adopt(actx, id)
		acancel()
		if err != nil {
			w.logger.Error("cannot adopt the session", "session", id, "error", err)
			w.release(id)
		}
	}
	return nil
}

// busy reports whether this worker holds id or still runs it.
func (w *Worker) busy(id string) bool {
	w.mu.Lock()
	_, held := w.held[id]
	w.mu.Unlock()
	if held {
		return true
	}
	s := w.svc
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		select {
		case <-ss.done:
		default:
			return true
		}
	}
	return false
}

// adopt restores session id from the stream into the worker's log and
// continues it. The caller holds its lease.
func (w *Worker) adopt(ctx context.Context, id string) error {
	log := w.logger.With("session", id)
	start := time.Now()
	w.replica.Forget(id)
	var rec owner
	if e, err := w.owners.Get(ctx, id); err == nil {
		_ = json.Unmarshal(e.Value(), &rec)
	}
	saved := savedSession{TurnTimeout: rec.TurnTimeout, JoinTimeout: rec.JoinTimeout}
	if fresh, err := w.adoptUnstarted(ctx, id, rec, saved); fresh || err != nil {
		return err
	}
	last, err := jsreplica.Restore(ctx, w.js, id, w.log)
	copied := time.Since(start)
	if errors.Is(err, jsreplica.ErrGap) {
		// This worker ran the session before and stored a batch the stream
		// never got: the stream has nothing after it, so publish it.
		log.Warn("the local log is ahead of the stream; publishing what the stream lacks", "error", err)
		last, err = w.replica.Sync(ctx, w.log, id)
	}
	if errors.Is(err, events.ErrCorrupt) {
		// A hole or a bad event in the stream: no worker can continue it.
		if e, gerr := w.meta.Get(ctx, id); gerr == nil {
			var meta events.SessionMeta
			if json.Unmarshal(e.Value(), &meta) == nil {
				meta.Status = events.StatusFailed
				_ = w.replica.PutSession(ctx, meta)
			}
		}
		return fmt.Errorf("server: session %s cannot be adopted; recorded failed: %w", id, err)
	}
	if err != nil {
		return err
	}
	meta, err := w.log.Session(ctx, id)
	if err != nil {
		return err
	}
	if meta.Status == events.StatusFinished {
		log.Info("the session had finished; recording it")
		if err := w.replica.PutSession(ctx, meta); err != nil {
			return err
		}
		w.release(id)
		return nil
	}
	if last == 0 {
		meta.Status = events.StatusFailed
		_ = w.replica.PutSession(ctx, meta)
		return fmt.Errorf("server: session %s has no events in the stream: its worker died before its first batch; recorded failed", id)
	}
	// Its log may have ended (session.ended) before its worker died and
	// recorded so: finished, or failed because its agents failed every
	// turn. Recorded as it ended, never run again.
	if end, ok, err := driver.LoggedEnd(ctx, w.log, id, last); err != nil {
		return err
	} else if ok {
		meta.Status, meta.LastSeq, meta.StateHash = driver.EndStatus(end.Reason), last, end.StateHash
		if meta.Status == events.StatusFailed {
			meta.Reason = end.Reason
		}
		if err := w.log.UpdateSession(ctx, meta); err != nil {
			return err
		}
		if err := w.replica.PutSession(ctx, meta); err != nil {
			return err
		}
		w.release(id)
		log.Info("the session's log had ended; recorded it, not resumed", "status", meta.Status, "reason", end.Reason, "events", last)
		return nil
	}
	cp := w.restoreCheckpoints(ctx, id)
	meta.Status, meta.LastSeq = events.StatusInterrupted, last
	if err := w.log.UpdateSession(ctx, meta); err != nil {
		return err
	}
	if _, err := w.svc.resume(ctx, id, saved); err != nil {
		return err
	}
	log.Info("adopted an orphaned session", "at_seq", last, "checkpoint", cp,
		"copied", copied.Round(time.Millisecond), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// adoptUnstarted starts afresh a session that is not a fork and has no
// event in the stream (its worker died before its first batch, or it was
// created with wait and not started yet), if its world is a shipped one:
// the stream has nothing to restore, and the metadata and OwnerBucket
// record what it was created with. fresh reports whether it did.
func (w *Worker) adoptUnstarted(ctx context.Context, id string, rec owner, saved savedSession) (fresh bool, err error) {
	st, err := w.js.Stream(ctx, jsreplica.Stream)
	if err != nil {
		return false, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(jsreplica.Subject(id)))
	if err != nil {
		return false, err
	}
	if info.State.Subjects[jsreplica.Subject(id)] > 0 {
		return false, nil
	}
	if n, err := w.log.LastSeq(ctx, id); err == nil && n > 0 {
		// This worker ran it before and its first batches never reached
		// the stream: Restore says so (ErrGap) and adopt syncs them.
		return false, nil
	}
	e, err := w.meta.Get(ctx, id)
	if err != nil {
		return true, err
	}
	var meta events.SessionMeta
	if err := json.Unmarshal(e.Value(), &meta); err != nil {
		return true, err
	}
	if meta.Parent != "" {
		return false, nil // a fork's prefix is its parent's: Restore and Load find it
	}
	fail := func(reason string) (bool, error) {
		meta.Status = events.StatusFailed
		_ = w.replica.PutSession(ctx, meta)
		w.release(id)
		return true, fmt.Errorf("server: session %s has no events in the stream and %s; recorded failed", id, reason)
	}
	src, err := worlds.Source(meta.World)
	if err != nil {
		return fail("its world is not a shipped one (its source is not kept in the cluster)")
	}
	wd, err := driver.LoadWorld(meta.World+".yaml", src, w.svc.cfg.WorldLimits)
	if err != nil {
		return fail(err.Error())
	}
	if wd.Hash != meta.WorldHash {
		return fail("its world is not the shipped " + meta.World)
	}
	load := rec.Load
	if load == 0 {
		load = 1
	}
	if err := wd.Admit(load, w.svc.cfg.WorldLimits); err != nil {
		return fail(err.Error())
	}
	eng, err := sim.New(sim.Config{World: wd, Source: src, Seed: meta.Seed, Session: id, Load: rec.Load, WorldLimits: w.svc.cfg.WorldLimits,
		DrawKey: rec.DrawKey, NewSequencer: driver.NewSequencer})
	if err != nil {
		return fail(err.Error())
	}
	s := w.svc
	turnTimeout, joinTimeout := saved.timeouts(s.cfg.TurnTimeout, s.cfg.JoinTimeout)
	seats := map[string]wire.Seat{}
	for member, name := range meta.Agents {
		if name == agents.Remote {
			seats[member] = wire.Seat{Session: id, Member: member, Subject: wire.TurnSubject(id, member)}
		}
	}
	meta.Status, meta.LastSeq = "", 0
	if err := s.launch(launch{meta: meta, engine: eng, fresh: true, wait: rec.Wait, turnTimeout: turnTimeout,
		joinTimeout: joinTimeout, seats: seats, load: rec.Load}); err != nil {
		return true, err
	}
	w.logger.Info("adopted a session that had not started", "session", id, "wait", rec.Wait)
	return true, nil
}

// runningMetas reads the cluster's metadata of sessions recorded running
// (reading each session that ended only once). ctx bounds the listing;
// each read has its own bound (RequestFor), and a session whose read fails
// is left to the next scan.
func (w *Worker) runningMetas(ctx context.Context) ([]events.SessionMeta, error) {
	ids, err := keys(ctx, w.meta)
	if err != nil {
		return nil, err
	}
	var out []events.SessionMeta
	for id := range ids {
		w.mu.Lock()
		done := w.over[id]
		w.mu.Unlock()
		if done {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestFor)
		e, err := w.meta.Get(rctx, id)
		cancel()
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			w.logger.Warn("cannot read the session's metadata; the next scan tries again", "session", id, "error", err)
			continue
		}
		m, err := jsreplica.DecodeMeta(id, e.Value())
		if err != nil {
			// Never adopted; said once until the entry changes (a live
			// owner's next write mends it).
			w.mu.Lock()
			said := w.unreadable[id] == e.Revision()
			w.unreadable[id] = e.Revision()
			w.mu.Unlock()
			if !said {
				w.logger.Warn("unreadable session metadata: not adopted", "session", id, "error", err)
			}
			continue
		}
		switch m.Status {
		case events.StatusRunning:
			out = append(out, m)
		case events.StatusFinished, events.StatusFailed:
			w.mu.Lock()
			w.over[id] = true
			w.mu.Unlock()
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// fetch restores a session another worker runs or ran (a fork's parent)
// from the stream into the worker's log.
func (w *Worker) fetch(ctx context.Context, session string) error {
	if _, err := jsreplica.Restore(ctx, w.js, session, w.log); err != nil {
		return err
	}
	w.restoreCheckpoints(ctx, session)
	return nil
}

// restoreCheckpoints copies the checkpoints replicated for a session just
// restored, and for its fork chain, into the worker's log, so that it is
// rebuilt from the latest one (and its agents' memory with it) instead of
// from event 1. Without them it still is, from the events: a failure is
// only a warning. It returns the seq of the session's own checkpoint
// restored (0: none).
func (w *Worker) restoreCheckpoints(ctx context.Context, session string) uint64 {
	seq, err := jsreplica.RestoreCheckpoints(ctx, w.js, session, w.log)
	if err != nil {
		w.logger.Warn("replicated checkpoint not restored; the session is rebuilt from an earlier one or from event 1",
			"session", session, "error", err)
	}
	return seq
}

func (w *Worker) list(ctx context.Context) ([]events.SessionMeta, error) {
	return allMetas(ctx, w.meta)
}

func allMetas(ctx context.Context, kv jetstream.KeyValue) ([]events.SessionMeta, error) {
	ids, err := keys(ctx, kv)
	if err != nil {
		return nil, err
	}
	out := make([]events.SessionMeta, 0, len(ids))
	var damaged []error // each entry that does not decode: the others are listed
	for id := range ids {
		e, err := kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m, err := jsreplica.DecodeMeta(id, e.Value())
		if err != nil {
			damaged = append(damaged, err)
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	sort.Slice(damaged, func(i, j int) bool { return damaged[i].Error() < damaged[j].Error() })
	return out, events.Damaged(damaged)
}

// keys lists the keys of kv. A listing that ctx cut short is an error: the
// lister ends its channel then just as when it has listed every key.
func keys(ctx context.Context, kv jetstream.KeyValue) (map[string]bool, error) {
	kl, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	defer kl.Stop()
	out := map[string]bool{}
	for k := range kl.Keys() {
		out[k] = true
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("server: the keys of bucket %s, %d listed: %w", kv.Bucket(), len(out), err)
	}
	return out, nil
}

// fencedReplica replicates for the worker's sessions only while their
// lease holds: each batch's replication is cut at the lease's end, and a
// failure is remembered so that the session is handed off, not failed.
type fencedReplica struct{ w *Worker }

func (f fencedReplica) Replicate(ctx context.Context, session string, batch []events.Event) error {
	w := f.w
	ctx, cancel, err := f.withinLease(ctx, session)
	if err != nil {
		return err
	}
	defer cancel()
	err = w.replica.Replicate(ctx, session, batch)
	if err != nil {
		w.mu.Lock()
		w.replFailed[session] = true
		w.mu.Unlock()
	}
	return err
}

// ReplicateCheckpoint replicates a checkpoint of one of the worker's
// sessions while its lease holds. Its failure does not hand the session
// off: the stream's events are whole without it.
func (f fencedReplica) ReplicateCheckpoint(ctx context.Context, session string, cp events.Checkpoint) error {
	ctx, cancel, err := f.withinLease(ctx, session)
	if err != nil {
		return err
	}
	defer cancel()
	return f.w.replica.ReplicateCheckpoint(ctx, session, cp)
}

// withinLease returns ctx cut at the end of the worker's lease on session,
// or ErrLeaseLost if it holds none now.
func (f fencedReplica) withinLease(ctx context.Context, session string) (context.Context, context.CancelFunc, error) {
	w := f.w
	w.mu.Lock()
	l := w.held[session]
	var end time.Time
	if l != nil && !l.lost {
		end = w.leaseEnd(l)
	}
	w.mu.Unlock()
	if end.IsZero() || time.Now().After(end) {
		return nil, nil, ErrLeaseLost
	}
	ctx, cancel := context.WithDeadline(ctx, end)
	return ctx, cancel, nil
}

// ClusterSession is a session as the cluster knows it: its recorded
// metadata, the events the stream holds, the worker holding its lease (if
// running) and the worker that last ran it.
type ClusterSession struct {
	events.SessionMeta
	Events uint64 `json:"events"`
	Leased string `json:"leased_by,omitempty"`
	Worker string `json:"worker,omitempty"`
	// Checkpoint is the seq of the latest checkpoint replicated (0: none):
	// a worker that adopts the session rebuilds it from there.
	Checkpoint uint64 `json:"checkpoint,omitempty"`
	// Alone: listed by a corpsim that is no cluster of workers (a serve,
	// a run --listen), which leases nothing.
	Alone bool `json:"-"`
}

// ClusterSessions lists the sessions of a cluster of workers.
func ClusterSessions(ctx context.Context, js jetstream.JetStream) ([]ClusterSession, error) {
	ss, damaged := jsreplica.Sessions(ctx, js)
	if damaged != nil && !errors.As(damaged, new(*events.DamagedError)) {
		return nil, damaged
	}
	read := func(bucket string) map[string]string {
		out := map[string]string{}
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			return out
		}
		ids, err := keys(ctx, kv)
		if err != nil {
			return out
		}
		for id := range ids {
			if e, err := kv.Get(ctx, id); err == nil {
				out[id] = string(e.Value())
			}
		}
		return out
	}
	leases, owners := read(LeaseBucket), read(OwnerBucket)
	for id, v := range owners {
		var o owner
		if json.Unmarshal([]byte(v), &o) == nil {
			owners[id] = o.Worker
		}
	}
	cps, err := jsreplica.Checkpoints(ctx, js)
	if err != nil {
		return nil, err
	}
	out := make([]ClusterSession, 0, len(ss))
	for _, s := range ss {
		out = append(out, ClusterSession{SessionMeta: s.Meta, Events: s.Events, Leased: leases[s.ID], Worker: owners[s.ID], Checkpoint: cps[s.ID]})
	}
	return out, damaged // beside metadata that does not read, the others
}

// stillRunning reports whether a session's recorded metadata says it runs.
func stillRunning(data []byte) bool {
	var m events.SessionMeta
	return json.Unmarshal(data, &m) == nil && m.Status == events.StatusRunning
}
