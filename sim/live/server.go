package live

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
)

// Log is what the live view reads of the server's event log.
type Log interface {
	Session(ctx context.Context, id string) (events.SessionMeta, error)
	Sessions(ctx context.Context) ([]events.SessionMeta, error)
	Read(ctx context.Context, session string, from uint64) iter.Seq2[events.Event, error]
}

// Config configures a Server. OperatorToken is required.
type Config struct {
	OperatorToken string
	Logger        hclog.Logger // nil: silent
	// Every is how often a page is sent a new snapshot while events
	// arrive (0: 250ms).
	Every time.Duration
	// MaxStreams bounds the pages following sessions at once; one more is
	// answered 503 (0: 256).
	MaxStreams int
	// Keepalive is how often an idle stream is sent a comment, and the
	// session's metadata is checked for an end the log does not show (a
	// stop) (0: 10s).
	Keepalive time.Duration
}

// Server serves the live view. Create it with New; Close ends its streams.
type Server struct {
	cfg  Config
	log  Log
	hub  *Hub
	lg   hclog.Logger
	mux  *http.ServeMux
	ctx  context.Context
	stop context.CancelFunc

	mu      sync.Mutex
	streams int
}

// CookieName is the cookie that carries the operator token for the pages
// and their streams, once given as ?token=.
const CookieName = "corpsim_operator"

// New makes the live view of the sessions in log; hub must be among the
// server's observers.
func New(log Log, hub *Hub, cfg Config) (*Server, error) {
	if cfg.OperatorToken == "" {
		return nil, errors.New("live: OperatorToken is required")
	}
	if cfg.Every <= 0 {
		cfg.Every = 250 * time.Millisecond
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 256
	}
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = 10 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = hclog.NewNullLogger()
	}
	s := &Server{cfg: cfg, log: log, hub: hub, lg: lg}
	s.ctx, s.stop = context.WithCancel(context.Background())
	m := http.NewServeMux()
	m.HandleFunc("GET /live/{$}", s.auth(s.index))
	m.HandleFunc("GET /live/{id}", s.auth(s.page))
	m.HandleFunc("GET /live/{id}/stream", s.auth(s.stream))
	s.mux = m
	return s, nil
}

// Handler serves /live/ (the sessions), /live/{id} (a session's page) and
// /live/{id}/stream (its snapshots as Server-Sent Events).
func (s *Server) Handler() http.Handler { return s.mux }

// Close ends every stream.
func (s *Server) Close() { s.stop() }

// auth admits the operator token as a bearer token, as the cookie, or as
// ?token= (which sets the cookie and redirects to the same page without
// it, so the token leaves the address bar).
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("token"); q != "" {
			if !s.isOperator(q) {
				http.Error(w, "unknown token", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: q, Path: "/live/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			v := u.Query()
			v.Del("token")
			u.RawQuery = v.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		tok := ""
		if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
			tok = strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
		} else if c, err := r.Cookie(CookieName); err == nil {
			tok = c.Value
		}
		if !s.isOperator(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="corpsim"`)
			http.Error(w, "the live view needs the operator token: open /live/?token=TOKEN once, or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		if id := r.PathValue("id"); id != "" {
			if err := events.ValidSessionID(id); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		h(w, r)
	}
}

func (s *Server) isOperator(tok string) bool {
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.OperatorToken)) == 1
}

// maxListed bounds the sessions the index lists.
const maxListed = 500

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	metas, err := s.log.Sessions(r.Context())
	damaged := ""
	if errors.As(err, new(*events.DamagedError)) {
		damaged = err.Error() // the others are listed, and the damage named
	} else if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	slices.SortStableFunc(metas, func(a, b events.SessionMeta) int {
		if ra, rb := going(a.Status), going(b.Status); ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(b.Created, a.Created)
	})
	more := 0
	if len(metas) > maxListed {
		more, metas = len(metas)-maxListed, metas[:maxListed]
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := indexPage.Execute(w, map[string]any{"Sessions": metas, "More": more, "Damaged": damaged}); err != nil {
		s.lg.Warn("live index", "error", err)
	}
}

// going tells a session that has not ended: running, or paused (a status
// the server's list gives, wire.StatusPaused).
func going(st events.Status) bool { return st == events.StatusRunning || st == wire.StatusPaused }

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	meta, err := s.log.Session(r.Context(), id)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, events.ErrNoSession) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	stream := "/live/" + url.PathEscape(id) + "/stream"
	if err := sessionPage.Execute(w, map[string]any{"Meta": meta, "Stream": stream}); err != nil {
		s.lg.Warn("live page", "error", err)
	}
}

// stream sends the session's snapshots as Server-Sent Events ("snapshot"
// events whose data is a Snapshot), one whenever events arrived in the
// last Config.Every, until the session ends (a last snapshot, then an
// "end" event), the client goes or the server closes.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx := r.Context()
	meta, err := s.log.Session(ctx, id)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, events.ErrNoSession) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	s.mu.Lock()
	full := s.streams >= s.cfg.MaxStreams
	if !full {
		s.streams++
	}
	s.mu.Unlock()
	if full {
		http.Error(w, fmt.Sprintf("the live view follows %d sessions already (its limit)", s.cfg.MaxStreams), http.StatusServiceUnavailable)
		return
	}
	defer func() {
		s.mu.Lock()
		s.streams--
		s.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	f, unfollow := s.hub.follow(id)      // before reading the log: nothing falls between the two
	defer unfollow()
	v := &View{}
	catchUp := func() error {
		for ev, err := range s.log.Read(ctx, id, v.Applied()+1) {
			if err != nil {
				return err
			}
			if err := v.Apply(ev); err != nil {
				return err
			}
		}
		return nil
	}
	if err := catchUp(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(name string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// finish sends the last snapshot, with the status the metadata gives
	// for a session that stopped without session.ended.
	finish := func(status events.Status) {
		snap := v.Snapshot()
		if snap.Status != "ended" {
			snap.Status = string(status)
		}
		send("snapshot", snap)
		send("end", map[string]string{"status": snap.Status})
	}
	first := v.Snapshot()
	if !send("snapshot", first) {
		return
	}
	if first.Status == "ended" || meta.Status != events.StatusRunning {
		finish(meta.Status)
		return
	}
	tick := time.NewTicker(s.cfg.Every)
	defer tick.Stop()
	alive := time.NewTicker(s.cfg.Keepalive)
	defer alive.Stop()
	dirty := false
	for {
		select {
		case ev := <-f.ch:
			if ev.Seq > v.Applied()+1 {
				if err := catchUp(); err != nil {
					s.lg.Warn("live stream", "session", id, "error", err)
					return
				}
			}
			if err := v.Apply(ev); err != nil {
				s.lg.Warn("live stream", "session", id, "error", err)
				return
			}
			dirty = true
		case <-tick.C:
			if f.takeLag() {
				if err := catchUp(); err != nil {
					s.lg.Warn("live stream", "session", id, "error", err)
					return
				}
				dirty = true
			}
			if !dirty {
				continue
			}
			dirty = false
			snap := v.Snapshot()
			if snap.Status == "ended" {
				finish(events.StatusFinished)
				return
			}
			if !send("snapshot", snap) {
				return
			}
		case <-alive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			if m, err := s.log.Session(ctx, id); err == nil && m.Status != events.StatusRunning {
				_ = catchUp()
				finish(m.Status)
				return
			}
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>corpsim · live</title>
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}.running{color:#0a7d20;font-weight:600}.paused{color:#8a5a00;font-weight:600}</style>
</head><body><h1>corpsim sessions</h1>{{if .Damaged}}
<p id="damaged"><b>Damaged store:</b> {{.Damaged}}</p>{{end}}
<table id="sessions"><thead><tr><th>session</th><th>world</th><th>seed</th><th>status</th><th>events</th><th>created</th></tr></thead><tbody>
{{range .Sessions}}<tr><td><a href="/live/{{.ID}}">{{.ID}}</a></td><td>{{.World}}</td><td>{{.Seed}}</td><td class="{{.Status}}">{{.Status}}</td><td>{{.LastSeq}}</td><td>{{.Created}}</td></tr>
{{end}}</tbody></table>{{if .More}}<p>{{.More}} older sessions not listed.</p>{{end}}
</body></html>`))

var sessionPage = template.Must(template.New("session").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>corpsim · {{.Meta.World}} · {{.Meta.ID}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.3em;margin:0 0 .3em}
.facts span{margin-right:1.5em}.facts b{font-variant-numeric:tabular-nums}
section{margin-top:1.2em}table{border-collapse:collapse}td,th{padding:.15em .7em;text-align:left;border-bottom:1px solid #e3e3e3;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}.down{color:#b00020;font-weight:600}.leave{color:#8a5a00}
#conn{font-size:.85em;color:#777}.ended{color:#555;font-weight:600}.running{color:#0a7d20;font-weight:600}
</style></head><body>
<h1>{{.Meta.World}} · <code>{{.Meta.ID}}</code></h1>
<div class="facts"><span>status <b id="status">connecting…</b></span><span>simulated <b id="clock">–</b></span>
<span>events <b id="events">0</b></span><span>team score <b id="score">0.00</b></span><span>seed <b>{{.Meta.Seed}}</b></span><span id="conn"></span></div>
<section><h2>Queues</h2><table id="queues"><thead><tr><th>queue</th><th>open</th><th>held</th><th>done</th><th>past SLA now</th><th></th></tr></thead><tbody></tbody></table></section>
<section><h2>Members</h2><table id="members"><thead><tr><th>member</th><th>role</th><th>team</th><th>holds</th><th>working on</th><th>turns</th></tr></thead><tbody></tbody></table></section>
<section><h2>Approvals waiting</h2><table id="approvals"><thead><tr><th>on the desk of</th><th>requests</th></tr></thead><tbody></tbody></table></section>
<section><h2>Latest events</h2><table id="latest"><thead><tr><th>#</th><th>when</th><th>type</th><th>actor</th><th>task</th></tr></thead><tbody></tbody></table></section>
<script>
(function(){
  function cell(tr, text, cls){ var td=document.createElement('td'); td.textContent=text; if(cls) td.className=cls; tr.appendChild(td); return td; }
  function fill(id, rows, each){ var tb=document.querySelector('#'+id+' tbody'); tb.textContent=''; rows.forEach(function(r){ var tr=document.createElement('tr'); each(tr,r); tb.appendChild(tr); }); }
  function render(s){
    var st=document.getElementById('status'); st.textContent=s.status+(s.end_reason?' ('+s.end_reason+')':''); st.className=s.status;
    document.getElementById('clock').textContent=s.clock||'–';
    document.getElementById('events').textContent=s.events;
    document.getElementById('score').textContent=s.score.toFixed(2);
    fill('queues', s.queues, function(tr,q){ cell(tr,q.id); cell(tr,q.open,'n'); cell(tr,q.held,'n'); cell(tr,q.done,'n'); cell(tr,q.over_sla_now,'n'); cell(tr,q.down?'down until '+q.down_until:'', q.down?'down':''); });
    fill('members', s.members, function(tr,m){ cell(tr,m.id+(m.npc?' (colleague)':''), m.on_leave?'leave':''); cell(tr,m.role); cell(tr,m.team); cell(tr,m.holds.join(', ')); cell(tr,m.on_leave?'on leave':(m.working||'')); cell(tr,m.turns,'n'); });
    fill('approvals', s.approvals, function(tr,a){ cell(tr,a.approver); cell(tr,a.waiting.map(function(w){return w.task+' ('+w.requester+', '+w.amount+', since '+w.since+')';}).join('; ')); });
    fill('latest', s.latest, function(tr,e){ cell(tr,e.seq,'n'); cell(tr,e.clock); cell(tr,e.type); cell(tr,e.actor||''); cell(tr,e.task||''); });
  }
  var conn=document.getElementById('conn');
  var es=new EventSource({{.Stream}});
  es.addEventListener('snapshot', function(m){ render(JSON.parse(m.data)); conn.textContent='live'; });
  es.addEventListener('end', function(){ es.close(); conn.textContent='the session has ended'; });
  es.onerror=function(){ conn.textContent='reconnecting…'; };
})();
</script></body></html>`))
