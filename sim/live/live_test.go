package live_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/live"
)

// recorded runs a shipped world into a memory log and returns its events.
func recorded(t *testing.T, world string, seed uint64) (*memlog.Log, *app.RunResult, []events.Event) {
	t.Helper()
	l := memlog.New()
	res, err := app.Run(context.Background(), app.RunOptions{World: world, Seed: seed, Agents: "greedy", Log: l})
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	for ev, err := range l.Read(context.Background(), res.Session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return l, res, evs
}

// TestViewFollowsTheState: a View fed a session's events shows what the
// engine's state and scorecard say, at the end and on the way.
func TestViewFollowsTheState(t *testing.T) {
	_, res, evs := recorded(t, "procurement", 2)
	v := &live.View{}
	if err := v.Apply(evs[1]); err == nil {
		t.Fatal("a view accepted an event before session.started")
	}
	sawHeld, sawWaiting := false, false
	for i, ev := range evs {
		if err := v.Apply(ev); err != nil {
			t.Fatalf("event %d: %v", ev.Seq, err)
		}
		if err := v.Apply(ev); err != nil || v.Applied() != ev.Seq { // again: ignored
			t.Fatalf("event %d applied twice: %v", ev.Seq, err)
		}
		if i%50 != 0 {
			continue
		}
		s := v.Snapshot()
		for _, m := range s.Members {
			sawHeld = sawHeld || len(m.Holds) > 0
		}
		sawWaiting = sawWaiting || len(s.Approvals) > 0
		if s.Events != ev.Seq || s.Status != "running" || s.Latest[0].Seq != ev.Seq {
			t.Fatalf("at event %d the snapshot says %d events, status %s, latest #%d", ev.Seq, s.Events, s.Status, s.Latest[0].Seq)
		}
	}
	s := v.Snapshot()
	if s.Status != "ended" || s.EndReason != res.Ended || s.Events != uint64(len(evs)) || s.World != res.World {
		t.Fatalf("final snapshot: %s %s, %d events, world %s; want ended %s, %d, %s", s.Status, s.EndReason, s.Events, s.World, res.Ended, len(evs), res.World)
	}
	if math.Abs(s.Score-res.Score.TeamScore) > 1e-6 {
		t.Fatalf("score %.4f, the scorecard %.4f", s.Score, res.Score.TeamScore)
	}
	if len(s.Latest) != 25 || s.Latest[0].Seq != uint64(len(evs)) || s.Latest[24].Seq != uint64(len(evs)-24) {
		t.Fatalf("latest: %d lines from #%d", len(s.Latest), s.Latest[0].Seq)
	}
	if !sawHeld || !sawWaiting {
		t.Fatalf("on the way: members held tasks %v, approvals waited %v (procurement has both)", sawHeld, sawWaiting)
	}
	if len(s.Queues) == 0 || len(s.Members) == 0 {
		t.Fatalf("no queues or members: %+v", s)
	}
}

// readSnapshots reads a stream's snapshot events until "end" or n of them.
func readSnapshots(t *testing.T, r *bufio.Reader, n int) ([]live.Snapshot, bool) {
	t.Helper()
	var out []live.Snapshot
	name := ""
	for len(out) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && name == "snapshot":
			var s live.Snapshot
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		case strings.HasPrefix(line, "data: ") && name == "end":
			return out, true
		}
	}
	return out, false
}

// TestStreamCatchesUpThenFollows: a page opened mid-session gets the
// state so far from the log, then the events the hub passes on, then the
// end; the operator token is required.
func TestStreamCatchesUpThenFollows(t *testing.T) {
	done, res, evs := recorded(t, "startup", 7)
	ctx := context.Background()
	meta, err := done.Session(ctx, res.Session)
	if err != nil {
		t.Fatal(err)
	}
	// A log holding the first 100 events of the session, "running".
	l := memlog.New()
	meta.Status, meta.LastSeq, meta.StateHash = events.StatusRunning, 0, ""
	if err := l.CreateSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, meta.ID, 0, evs[:100]); err != nil {
		t.Fatal(err)
	}
	hub := live.NewHub()
	srv, err := live.New(l, hub, live.Config{OperatorToken: "op", Every: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	for _, tok := range []string{"", "nope"} {
		req, _ := http.NewRequest("GET", ts.URL+"/live/"+meta.ID+"/stream", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: HTTP %d, want 401", tok, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/live/"+meta.ID+"/stream", nil)
	req.Header.Set("Authorization", "Bearer op")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(resp.Body)
	first, _ := readSnapshots(t, r, 1)
	if first[0].Events != 100 || first[0].Status != "running" {
		t.Fatalf("the first snapshot shows %d events (%s), want the 100 in the log", first[0].Events, first[0].Status)
	}
	// The session goes on: the rest is appended and passed to the hub.
	for at := 100; at < len(evs); at += 40 {
		batch := evs[at:min(at+40, len(evs))]
		if err := l.Append(ctx, meta.ID, uint64(at), batch); err != nil {
			t.Fatal(err)
		}
		hub.Appended(meta.ID, batch, 0)
	}
	snaps, ended := readSnapshots(t, r, 1<<20)
	if !ended || len(snaps) == 0 {
		t.Fatalf("the stream did not end after session.ended (%d snapshots)", len(snaps))
	}
	last := snaps[len(snaps)-1]
	if last.Status != "ended" || last.Events != uint64(len(evs)) || math.Abs(last.Score-res.Score.TeamScore) > 1e-6 {
		t.Fatalf("last snapshot: %s, %d events, score %.2f; want ended, %d, %.2f", last.Status, last.Events, last.Score, len(evs), res.Score.TeamScore)
	}
	for i := 1; i < len(snaps); i++ {
		if snaps[i].Events < snaps[i-1].Events {
			t.Fatalf("snapshots went back: %d after %d", snaps[i].Events, snaps[i-1].Events)
		}
	}

	// ?token= sets the cookie and redirects; the page then loads with it.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp2, err := c.Get(ts.URL + "/live/" + meta.ID + "?token=op")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if resp2.StatusCode != http.StatusOK || resp2.Request.URL.RawQuery != "" {
		t.Fatalf("page with ?token=: HTTP %d at %s", resp2.StatusCode, resp2.Request.URL)
	}
	resp3, err := c.Get(ts.URL + "/live/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp3.Body.Close()
	if resp3.StatusCode != http.StatusOK {
		t.Fatalf("index with the cookie: HTTP %d", resp3.StatusCode)
	}
	if resp4, _ := http.Get(ts.URL + "/live/a.b/stream?token=op"); resp4 != nil {
		resp4.Body.Close()
	}
}
