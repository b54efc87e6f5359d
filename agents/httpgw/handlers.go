package httpgw

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
)

// readBody reads a request body of at most limit bytes; a larger one is
// answered with 413 (false).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	orig := r.Body
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuseTooLarge(w, orig, limit)
		} else {
			writeError(w, http.StatusBadRequest, "reading the request body: %v", err)
		}
		return nil, false
	}
	return body, true
}

// decodeBody decodes a JSON request body strictly into v. An empty body
// leaves v as it is when emptyOK.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, limit int64, emptyOK bool) bool {
	body, ok := readBody(w, r, limit)
	if !ok {
		return false
	}
	if err := decodeStrict(body, v, emptyOK); err != nil {
		writeErr(w, err)
		return false
	}
	return true
}

// drainLimit is how much more of an oversized body the gateway reads, and
// drainFor how long it spends, before it answers 413 and closes: a client
// that sends its whole body before it reads the answer (most do) then gets
// the 413 instead of a reset connection.
const (
	drainLimit = 64 << 20
	drainFor   = 10 * time.Second
)

// refuseTooLarge answers 413 for a body over limit, after reading (and
// dropping) a bounded rest of it; the connection is closed after the answer.
func refuseTooLarge(w http.ResponseWriter, body io.Reader, limit int64) {
	drain(w, body)
	writeError(w, http.StatusRequestEntityTooLarge, "request body is over this server's limit of %d bytes", limit)
}

// drain reads and drops the rest of an oversized body (at most drainLimit,
// for at most drainFor) and marks the connection to be closed after the
// answer.
func drain(w http.ResponseWriter, body io.Reader) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(drainFor))
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	w.Header().Set("Connection", "close")
}

func (g *Gateway) handleCreate(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, g.cfg.MaxRequestBytes)
	if !ok {
		return
	}
	req, err := DecodeCreate(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	reply, err := g.Create(r.Context(), req)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, reply)
}

func (g *Gateway) handleFork(w http.ResponseWriter, r *http.Request) {
	var f ForkRequest
	if !decodeBody(w, r, &f, g.cfg.MaxRequestBytes, false) {
		return
	}
	g.fork(w, r, f)
}

func (g *Gateway) handleReset(w http.ResponseWriter, r *http.Request) {
	var f ForkRequest
	if !decodeBody(w, r, &f, g.cfg.MaxRequestBytes, true) {
		return
	}
	if f.At > 1 {
		writeError(w, http.StatusBadRequest, `reset is a fork at event 1; use fork for "at": %d`, f.At)
		return
	}
	f.At = 1
	g.fork(w, r, f)
}

func (g *Gateway) fork(w http.ResponseWriter, r *http.Request, f ForkRequest) {
	reply, err := g.Fork(r.Context(), r.PathValue("id"), f)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, reply)
}

func (g *Gateway) handleControl(w http.ResponseWriter, r *http.Request) {
	var req wire.ControlRequest
	if !decodeBody(w, r, &req, 4096, false) {
		return
	}
	reply, err := g.Control(r.Context(), r.PathValue("id"), req.Op)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

func queryUint(r *http.Request, name string, def uint64) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number", name, v)
	}
	return n, nil
}

func (g *Gateway) handleEvents(w http.ResponseWriter, r *http.Request) {
	from, err := queryUint(r, "from", 1)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := queryUint(r, "limit", wire.MaxHistoryPage)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	out, err := g.Events(r.Context(), r.PathValue("id"), from, int(min(limit, wire.MaxHistoryPage)))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *Gateway) handleList(w http.ResponseWriter, r *http.Request) {
	out, err := g.List(r.Context(), r.URL.Query().Get("status"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleDelete is DELETE /v1/sessions/{id}[?forks=true]: 200 with
// {"deleted":[{"session","events"}…]}; an error's body also lists what was
// deleted before it.
func (g *Gateway) handleDelete(w http.ResponseWriter, r *http.Request) {
	forks := false
	if v := r.URL.Query().Get("forks"); v != "" {
		var err error
		if forks, err = strconv.ParseBool(v); err != nil {
			writeError(w, http.StatusBadRequest, "forks=%q: want true or false", v)
			return
		}
	}
	done, err := g.Delete(r.Context(), []string{r.PathValue("id")}, forks)
	if err != nil {
		writeJSON(w, StatusOf(err), wire.DeleteReply{Deleted: orEmpty(done), Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, wire.DeleteReply{Deleted: orEmpty(done)})
}

// orEmpty is d, or an empty list for nil (JSON [] rather than null).
func orEmpty(d []wire.Deleted) []wire.Deleted {
	if d == nil {
		return []wire.Deleted{}
	}
	return d
}

func (g *Gateway) handleScore(w http.ResponseWriter, r *http.Request) {
	out, err := g.Score(r.Context(), r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// waitParam reads ?wait= (a Go duration, or seconds), bounded by most.
func waitParam(r *http.Request, def, most time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, err2 := strconv.ParseFloat(v, 64)
		switch {
		case err2 != nil && !errors.Is(err2, strconv.ErrRange) || math.IsNaN(secs):
			return 0, fmt.Errorf("wait=%q is not a duration (e.g. 30s)", v)
		case secs < 0:
			return 0, fmt.Errorf("wait=%q is negative", v)
		case secs >= most.Seconds(): // 1e10 seconds overflowed to a negative duration
			return most, nil
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("wait=%q is negative", v)
	}
	return min(d, most), nil
}

// doneReply tells a seat its session has ended.
type doneReply struct {
	Done   bool   `json:"done"`
	Status string `json:"status"`
}

func (g *Gateway) handleObserve(w http.ResponseWriter, r *http.Request) {
	wait, err := waitParam(r, 30*time.Second, 5*time.Minute)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	obs, err := g.Observe(r.Context(), bearer(r), wait)
	switch {
	case err != nil:
		writeErr(w, err)
	case obs.Body != nil:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(obs.Body)
	case obs.Done:
		writeJSON(w, http.StatusOK, doneReply{Done: true, Status: obs.Status})
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (g *Gateway) handleAct(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, org.MaxReplyBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	if len(body) > org.MaxReplyBytes {
		drain(w, r.Body)
	}
	out, err := g.Act(r.Context(), bearer(r), body)
	writeJSON(w, StatusOf(err), out)
}

// writeErr answers an operation's refusal.
func writeErr(w http.ResponseWriter, err error) {
	if StatusOf(err) == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="corpsim"`)
	}
	writeError(w, StatusOf(err), "%s", err.Error())
}
