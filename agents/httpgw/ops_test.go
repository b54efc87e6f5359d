package httpgw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/worlds"
)

// TestOperationsPlayASeat: the Go operations the adapters build on play a
// remote seat to the end (Observe, then Answer with greedy's actions) and
// the session ends where the in-process greedy run ends; tokens reach only
// their own seat.
func TestOperationsPlayASeat(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	g := s.gw
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy,bob=remote"}
	reply, err := g.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	bob := reply.Seats["bob"]
	if id, m, ok := g.SeatOf(bob.Token); !ok || id != reply.Session || m != "bob" {
		t.Fatalf("SeatOf(bob's token) = %q, %q, %v", id, m, ok)
	}
	if _, _, ok := g.SeatOf(s.operator); ok {
		t.Fatal("SeatOf(operator token) names a seat")
	}
	// The reply and the seat carry the world's tools, as `corpsim tools --world startup` lists them.
	startup, err := worlds.Shipped("startup")
	if err != nil {
		t.Fatal(err)
	}
	want := agents.ToolsJSONFor(startup)
	if !bytes.Equal(reply.Tools, want) || !bytes.Equal(g.SeatTools(bob.Token), want) || g.SeatTools(s.operator) != nil {
		t.Fatalf("tools: the reply's %.80s, the seat's %.80s; want startup's %.80s, and none for the operator", reply.Tools, g.SeatTools(bob.Token), want)
	}
	if _, err := g.Observe(ctx, s.operator, time.Millisecond); httpgw.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("Observe with the operator token: %v, want 403", err)
	}
	if _, err := g.Answer(ctx, "nope", nil, time.Millisecond); httpgw.StatusOf(err) != http.StatusUnauthorized {
		t.Fatalf("Answer with an unknown token: %v, want 401", err)
	}
	greedy := &agents.Greedy{}
	turns := 0
	for {
		obs, err := g.Observe(ctx, bob.Token, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if obs.Done {
			if obs.Status != "finished" {
				t.Fatalf("ended %q", obs.Status)
			}
			break
		}
		if obs.Body == nil {
			continue
		}
		var o org.Observation
		if err := json.Unmarshal(obs.Body, &o); err != nil {
			t.Fatal(err)
		}
		if o.Turn != obs.Turn || obs.Member != "bob" {
			t.Fatalf("observation of turn %d (%s) reported as turn %d", o.Turn, obs.Member, obs.Turn)
		}
		acts, err := greedy.Decide(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := g.Answer(ctx, bob.Token, acts, time.Second)
		if err != nil || !r.Forwarded || r.Turn != obs.Turn {
			t.Fatalf("answer turn %d: %+v, %v", obs.Turn, r, err)
		}
		turns++
	}
	if r, err := g.Answer(ctx, bob.Token, nil, time.Millisecond); httpgw.StatusOf(err) != http.StatusConflict || r.Forwarded {
		t.Fatalf("Answer after the end: %+v, %v; want 409, nothing forwarded", r, err)
	}
	meta := s.wait(t, reply.Session)
	ref, refScore := s.reference(t, req)
	if meta.StateHash != ref.StateHash {
		t.Fatalf("played through the operations: %s; in process: %s", meta.StateHash, ref.StateHash)
	}
	sc, err := g.Score(ctx, reply.Session)
	if err != nil || !near(sc.Score, refScore) || sc.Status != "finished" {
		t.Fatalf("Score: %+v, %v; want finished, %.6f", sc, err, refScore)
	}
	if turns == 0 {
		t.Fatal("bob was never asked")
	}
}

// TestOperationsRefuseByKind: refusals carry the status that names their
// kind, so each adapter can answer in its protocol's terms.
func TestOperationsRefuseByKind(t *testing.T) {
	s := startStackWith(t, httpgw.Config{}, func(c *server.Config) { c.MaxSessions = 1 })
	g := s.gw
	ctx := context.Background()
	if _, err := httpgw.DecodeCreate([]byte(`{"world":"startup","load":0}`)); httpgw.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("DecodeCreate load 0: %v", err)
	}
	if _, err := httpgw.DecodeCreate([]byte(`{"world":"startup","bogus":1}`)); httpgw.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("DecodeCreate unknown field: %v", err)
	}
	if req, err := httpgw.DecodeCreate([]byte(`{"world":"startup","load":2.5}`)); err != nil || req.Load != 2.5 {
		t.Fatalf("DecodeCreate load 2.5: %+v, %v", req, err)
	}
	if _, err := g.Control(ctx, "a.b.c", wire.OpStatus); httpgw.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("Control a.b.c: %v, want 400", err)
	}
	if _, err := g.Step(ctx, "01JUNKNOWNSESSION0000000000", httpgw.StepRequest{}, time.Millisecond); httpgw.StatusOf(err) != http.StatusNotFound && httpgw.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("Step of an unknown session: %v", err)
	}
	first, err := g.Create(ctx, wire.CreateRequest{World: "startup", Agents: "greedy,bob=remote"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Create(ctx, wire.CreateRequest{World: "startup", Agents: "greedy"})
	if httpgw.StatusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("a create past --max-sessions: %v, want 503", err)
	}
	var e *httpgw.Error
	if !errors.As(err, &e) || e.Msg == "" {
		t.Fatalf("the refusal is not an *Error with a message: %#v", err)
	}
	if _, err := g.Control(ctx, first.Session, wire.OpStop); err != nil {
		t.Fatal(err)
	}
	if httpgw.StatusOf(nil) != http.StatusOK || httpgw.StatusOf(errors.New("x")) != http.StatusInternalServerError {
		t.Fatal("StatusOf of nil / a plain error")
	}
}

// TestDecodeCreateRefusesTrailingData: anything after the request's JSON
// object is refused, a closing bracket or brace included, which a check
// for a next element (json.Decoder.More) takes for the end of an
// enclosing value; spaces are not data.
func TestDecodeCreateRefusesTrailingData(t *testing.T) {
	for _, body := range []string{`{"world":"startup"}}`, `{"world":"startup"}]`, `{"world":"startup"} {}`, `{"world":"startup"} x`, `{"world":"startup"},`} {
		_, err := httpgw.DecodeCreate([]byte(body))
		if httpgw.StatusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "trailing data") {
			t.Errorf("%s: %v, want a 400 naming the trailing data", body, err)
		}
	}
	if _, err := httpgw.DecodeCreate([]byte("{\"world\":\"startup\"} \n\t")); err != nil {
		t.Fatalf("spaces after the object: %v", err)
	}
}
