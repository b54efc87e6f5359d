// Package metrics exposes a corpsim server's health as Prometheus metrics:
// sessions and seats by kind, events appended and how long appends take,
// how long agents take to answer, rejected actions by kind and rule, and
// turn timeouts and failed turns, plus the Go runtime and process collectors. It is an edge
// package (it wraps prometheus/client_golang); it registers on its own
// registry, never the global one, and nothing it records reaches a log.
//
//	var svc *server.Service
//	m := metrics.New(func() (map[string]int, map[string]int) { return svc.Counts() }) // read at scrape time
//	svc, err := server.New(server.Config{Observer: m, …})                           // m is a driver.Observer
//	http.Handle("/metrics", m.Handler())
//
// The series (all prefixed corpsim_, named by the constants below) are
// listed in the README's serve section. Cardinality is bounded: no label
// carries a session or member ID; rejection rules come from the fixed
// set of policies.
package metrics

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/driver"
)

// The series' names.
const (
	Sessions       = "corpsim_sessions"
	Seats          = "corpsim_seats"
	EventsAppended = "corpsim_events_appended_total"
	AppendSeconds  = "corpsim_append_duration_seconds"
	TurnSeconds    = "corpsim_turn_duration_seconds"
	Rejections     = "corpsim_actions_rejected_total"
	TurnTimeouts   = "corpsim_turn_timeouts_total"
	TurnErrors     = "corpsim_turn_errors_total"
	// Per protocol adapter (label adapter: openenv, mcp, nemo).
	AdapterSessions = "corpsim_adapter_sessions"
	AdapterSteps    = "corpsim_adapter_steps_total"
	AdapterErrors   = "corpsim_adapter_errors_total"
)

// Adapters are the values of the adapter label; each is exported from the
// start, at zero.
var Adapters = []string{"openenv", "mcp", "nemo"}

// SessionStatuses are the values of corpsim_sessions' status label; every
// one is exported, zero or not.
var SessionStatuses = []string{"running", "paused", "finished", "interrupted", "failed"}

// SeatKinds are the values of corpsim_seats' kind label.
var SeatKinds = []string{"builtin", "remote", "llm"}

// Counts reports, at scrape time, how many sessions the server holds by
// status (keys of SessionStatuses) and how many seats the sessions not yet
// ended have by kind (keys of SeatKinds). It is called from the HTTP
// handler's goroutine.
type Counts func() (sessions, seats map[string]int)

// Metrics records a server's metrics. It implements driver.Observer. Safe
// for concurrent use.
type Metrics struct {
	reg        *prometheus.Registry
	appended   prometheus.Counter
	appendS    prometheus.Histogram
	turnS      *prometheus.HistogramVec
	rejected   *prometheus.CounterVec
	timeouts   prometheus.Counter
	turnErrors prometheus.Counter
	adSess     *prometheus.GaugeVec
	adSteps    *prometheus.CounterVec
	adErrs     *prometheus.CounterVec
}

var _ driver.Observer = (*Metrics)(nil)

// New makes the metrics on a registry of their own; counts (nil: none)
// feeds the sessions and seats gauges.
func New(counts Counts) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		appended: prometheus.NewCounter(prometheus.CounterOpts{Name: EventsAppended,
			Help: "Events made durable in the event log (every session of this server since it started)."}),
		appendS: prometheus.NewHistogram(prometheus.HistogramOpts{Name: AppendSeconds,
			Help:    "Wall-clock time of one synced append of a batch of events.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}), // 100µs .. 26s
		turnS: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: TurnSeconds,
			Help:    "Wall-clock time from asking a member to decide to its answer (or to giving up on it).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"outcome"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Rejections,
			Help: "Actions refused by the engine (action.rejected events), by kind (malformed, unknown, state, policy) and the policy rule (empty for other kinds)."},
			[]string{"kind", "rule"}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: TurnTimeouts,
			Help: "Turns a member did not answer within its budget (turn.timeout events)."}),
		turnErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: TurnErrors,
			Help: "Turns a member's agent could not decide, its backend failing (turn.failed events)."}),
	}
	m.adSess = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: AdapterSessions,
		Help: "Sessions (or connections) a protocol adapter holds open now."}, []string{"adapter"})
	m.adSteps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: AdapterSteps,
		Help: "Steps, tool calls or acts a protocol adapter served."}, []string{"adapter"})
	m.adErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: AdapterErrors,
		Help: "Errors a protocol adapter answered, by the protocol's own code."}, []string{"adapter", "code"})
	for _, a := range Adapters {
		m.adSess.WithLabelValues(a)
		m.adSteps.WithLabelValues(a)
	}
	m.reg.MustRegister(m.adSess, m.adSteps, m.adErrs)
	m.reg.MustRegister(m.appended, m.appendS, m.turnS, m.rejected, m.timeouts, m.turnErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if counts != nil {
		m.reg.MustRegister(gauges{counts})
	}
	// Both outcomes exist from the start, so a scrape shows them at zero.
	m.turnS.WithLabelValues("answered")
	m.turnS.WithLabelValues("unanswered")
	return m
}

// Registry is the metrics' own registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Appended implements driver.Observer: it counts the batch's events, its
// rejected actions, its turn timeouts and failed turns, and observes the
// append's time.
func (m *Metrics) Appended(_ string, batch []events.Event, d time.Duration) {
	m.appended.Add(float64(len(batch)))
	m.appendS.Observe(d.Seconds())
	for i := range batch {
		switch ev := &batch[i]; ev.Type {
		case payload.EvTurnTimeout:
			m.timeouts.Inc()
		case payload.EvTurnFailed:
			m.turnErrors.Inc()
		case payload.EvActionRejected:
			var p struct {
				Kind string `json:"kind"`
				Rule string `json:"rule"`
			}
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				p.Kind = "undecodable"
			}
			m.rejected.WithLabelValues(p.Kind, p.Rule).Inc()
		}
	}
}

// Turn implements driver.Observer.
func (m *Metrics) Turn(_, _ string, d time.Duration, timedOut bool) {
	outcome := "answered"
	if timedOut {
		outcome = "unanswered"
	}
	m.turnS.WithLabelValues(outcome).Observe(d.Seconds())
}

// gauges reads the sessions and seats gauges at scrape time.
type gauges struct{ counts Counts }

var (
	sessionsDesc = prometheus.NewDesc(Sessions, "Sessions this server holds, by status (paused: by a pause control message; interrupted: stopped by an operator or by shutdown).", []string{"status"}, nil)
	seatsDesc    = prometheus.NewDesc(Seats, "Seats of the sessions not yet ended, by kind (builtin agents, remote agents, the server's llm agent).", []string{"kind"}, nil)
)

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- seatsDesc
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	sessions, seats := g.counts()
	for _, st := range SessionStatuses {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(sessions[st]), st)
	}
	for _, k := range SeatKinds {
		ch <- prometheus.MustNewConstMetric(seatsDesc, prometheus.GaugeValue, float64(seats[k]), k)
	}
}

// Adapter records one protocol adapter's sessions, steps and errors. A nil
// *Adapter records nothing. Safe for concurrent use.
type Adapter struct {
	sessions prometheus.Gauge
	steps    prometheus.Counter
	errs     *prometheus.CounterVec
	name     string
}

// Adapter returns the recorder of the adapter name (one of Adapters, or
// another name: its series start when it is first used). A nil *Metrics
// gives a nil *Adapter.
func (m *Metrics) Adapter(name string) *Adapter {
	if m == nil {
		return nil
	}
	return &Adapter{sessions: m.adSess.WithLabelValues(name), steps: m.adSteps.WithLabelValues(name), errs: m.adErrs, name: name}
}

// Opened counts a session or connection the adapter began.
func (a *Adapter) Opened() {
	if a != nil {
		a.sessions.Inc()
	}
}

// Closed counts one that ended.
func (a *Adapter) Closed() {
	if a != nil {
		a.sessions.Dec()
	}
}

// Stepped counts a step, tool call or act.
func (a *Adapter) Stepped() {
	if a != nil {
		a.steps.Inc()
	}
}

// Failed counts an error answered with the protocol's code (a fixed set
// per protocol, which bounds the series).
func (a *Adapter) Failed(code string) {
	if a != nil {
		a.errs.WithLabelValues(a.name, code).Inc()
	}
}
