package httpgw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
)

// TestAdopt: the gateway takes over the remote seat of a session it did not
// create (as serve does after a restart): the seat's token, the server's,
// reaches the seat, which plays its turns; adopting it twice, adopting a
// seat without a server token, or a session nobody runs is refused; and a
// fork of it must name its agents.
func TestAdopt(t *testing.T) {
	s := startStack(t, httpgw.Config{})
	ctx := context.Background()
	reply, err := s.svc.Create(ctx, wire.CreateRequest{World: "startup", Agents: "greedy,bob=remote", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	id, bob := reply.Session, reply.Seats["bob"]
	if code, b := s.call(t, "GET", seatPath(id, "bob", "observation")+"?wait=0", bob.Token, nil); code != http.StatusUnauthorized {
		t.Fatalf("before adoption the seat's token gave %d %s, want 401", code, b)
	}

	tokenless := map[string]wire.Seat{"bob": {Session: id, Member: "bob", Subject: bob.Subject}}
	if err := s.gw.Adopt(ctx, id, tokenless, 0); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("adopting a seat without a server token: %v", err)
	}
	if err := s.gw.Adopt(ctx, "01JZZZZZZZZZZZZZZZZZZZZZZZ", reply.Seats, 0); err == nil {
		t.Error("adopting a session nobody runs succeeded")
	}
	if err := s.gw.Adopt(ctx, id, reply.Seats, 0); err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if err := s.gw.Adopt(ctx, id, reply.Seats, 0); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("adopting it twice: %v", err)
	}

	if code, b := s.call(t, "POST", "/v1/sessions/"+id+"/control", s.operator, wire.ControlRequest{Op: wire.OpStart}); code != http.StatusOK {
		t.Fatalf("start: %d %s", code, b)
	}
	obs, done, err := s.observe(ctx, bob, "20s")
	if err != nil || done || obs == nil || obs.Member != "bob" {
		t.Fatalf("the adopted seat's observation: %+v done=%v err=%v", obs, done, err)
	}
	code, b := s.call(t, "POST", seatPath(id, "bob", "act"), bob.Token, map[string]any{"turn": obs.Turn, "actions": []any{}})
	if code != http.StatusOK {
		t.Fatalf("the adopted seat's act: %d %s", code, b)
	}

	// A fork without agents plays the parent's, as the server stored them
	// (it was refused: the gateway had not created the session).
	code, b = s.call(t, "POST", "/v1/sessions/"+id+"/fork", s.operator, map[string]any{"at": 1})
	var forked wire.CreateReply
	if code != http.StatusCreated || json.Unmarshal(b, &forked) != nil || forked.Seats["bob"].Token == "" {
		t.Errorf("a fork of the adopted session without agents: %d %s; want 201 and bob's remote seat", code, b)
	}
}
