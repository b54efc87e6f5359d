package httpgw_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
)

// TestRecordKeepsTheLatestEvents: the gateway keeps only the latest
// Config.RecordEvents of a session's events (a long session of NPCs makes
// hundreds of thousands), and loses nothing by it: every event of an ended
// session is still served (older ones from the server's log), the score
// and a fork's score still count every reward, and a step that comes late
// sums rewards it no longer lists, saying so.
func TestRecordKeepsTheLatestEvents(t *testing.T) {
	const keep = 8
	s := startStack(t, httpgw.Config{RecordEvents: keep})
	req := wire.CreateRequest{World: "startup", Seed: 7, Agents: "remote"}
	reply := s.create(t, req)
	ret, last, _ := s.stepAll(t, reply.Session, &agents.Greedy{})
	meta := s.wait(t, reply.Session)
	score := s.svc.Status(reply.Session).Score
	if !near(ret, score) || last.Score == nil || !near(*last.Score, score) {
		t.Fatalf("steps' rewards %.6f, last step's score %v; want the team score %.6f", ret, last.Score, score)
	}
	if meta.LastSeq < 10*keep {
		t.Fatalf("precondition: %d events, too few to trim a record of %d", meta.LastSeq, keep)
	}

	// Every event, from the first: the record holds the last few only.
	got := s.allEvents(t, reply.Session)
	var want []events.Event
	for ev, err := range s.log.Read(context.Background(), reply.Session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	if len(got) != len(want) {
		t.Fatalf("the events endpoint served %d events, the log holds %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(events.Encode(&got[i]), events.Encode(&want[i])) {
			t.Fatalf("event %d served differs from the log's", want[i].Seq)
		}
	}
	code, b := s.call(t, "GET", fmt.Sprintf("/v1/sessions/%s/events?from=1&limit=5", reply.Session), s.operator, nil)
	if page := mustJSON[httpgw.EventsReply](t, code, http.StatusOK, b); page.Source != "server" || !page.Complete || len(page.Events) != 5 {
		t.Fatalf("the first events of an ended session: source %s, complete %v, %d events; want 5 from the server's log", page.Source, page.Complete, len(page.Events))
	}
	code, b = s.call(t, "GET", fmt.Sprintf("/v1/sessions/%s/events?from=%d", reply.Session, meta.LastSeq-2), s.operator, nil)
	if page := mustJSON[httpgw.EventsReply](t, code, http.StatusOK, b); page.Source != "gateway" || len(page.Events) != 3 {
		t.Fatalf("the last events: source %s, %d events; want 3 from the gateway's record", page.Source, len(page.Events))
	}
	code, b = s.call(t, "GET", "/v1/sessions/"+reply.Session+"/score", s.operator, nil)
	if sc := mustJSON[httpgw.ScoreReply](t, code, http.StatusOK, b); !sc.Complete || !near(sc.Score, score) {
		t.Fatalf("score %.6f complete %v; want %.6f complete", sc.Score, sc.Complete, score)
	}

	// A fork early in the session: what was earned before it is counted
	// from the record's running sums, not from events it dropped.
	s.forkAndStep(t, reply.Session, keep)

	// A session no one steps until it has ended: the step sums every
	// reward, lists the last ones, and says what it left out.
	npc := s.create(t, wire.CreateRequest{World: "support-desk", Seed: 3, Agents: "greedy"})
	s.wait(t, npc.Session)
	code, b = s.call(t, "POST", "/v1/sessions/"+npc.Session+"/step?wait=30s", s.operator, httpgw.StepRequest{})
	r := mustJSON[httpgw.StepReply](t, code, http.StatusOK, b)
	npcScore := s.svc.Status(npc.Session).Score
	if !r.Done || !near(r.Rewards, npcScore) || len(r.RewardEvents) > 2*keep {
		t.Fatalf("a late step: done %v, rewards %.6f, %d reward events; want done, %.6f, at most %d listed", r.Done, r.Rewards, len(r.RewardEvents), npcScore, 2*keep)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "not listed") {
		t.Fatalf("a late step's warnings: %q; want one saying earlier reward events are not listed", r.Warnings)
	}
}

// TestScoreOfAStoredSession: a gateway that holds no record of an ended
// session (it was restarted, or another gateway created it) scores it from
// the server's stored log, and says where it stands, instead of 404.
func TestScoreOfAStoredSession(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	reply := s.create(t, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy"})
	meta := s.wait(t, reply.Session)
	score := s.svc.Status(reply.Session).Score

	fresh, err := httpgw.New(httpgw.Config{NATSURL: s.natsURL, OperatorToken: s.operator, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fresh.Handler())
	t.Cleanup(func() { fresh.Close(); srv.Close() })
	other := &stack{base: srv.URL, operator: s.operator}

	code, b := other.call(t, "GET", "/v1/sessions/"+reply.Session+"/score", s.operator, nil)
	sc := mustJSON[httpgw.ScoreReply](t, code, http.StatusOK, b)
	if sc.Source != "server" || !sc.Complete || !near(sc.Score, score) || sc.Status != "finished" || sc.Events != meta.LastSeq {
		t.Fatalf("the score of a stored session: %+v; want %.6f, finished at %d, complete, from the server", sc, score, meta.LastSeq)
	}
	code, b = other.call(t, "POST", "/v1/sessions/"+reply.Session+"/control", s.operator, wire.ControlRequest{Op: wire.OpStatus})
	if st := mustJSON[wire.ControlReply](t, code, http.StatusOK, b); st.Status != "finished" || st.Events != meta.LastSeq || !near(st.Score, score) {
		t.Fatalf("the status of a stored session: %+v", st)
	}
	for _, op := range []wire.ControlOp{wire.OpStart, wire.OpStop} {
		code, b = other.call(t, "POST", "/v1/sessions/"+reply.Session+"/control", s.operator, wire.ControlRequest{Op: op})
		if code != http.StatusNotFound {
			t.Fatalf("%s of a stored session: %d %s; want 404 (no running session answers it)", op, code, b)
		}
	}
	if code, b = other.call(t, "GET", "/v1/sessions/01M985ZZZZZZZZZZZZZZZZZZZZ/score", s.operator, nil); code != http.StatusNotFound {
		t.Fatalf("the score of no session: %d %s; want 404", code, b)
	}
}
