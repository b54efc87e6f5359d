package nemogym

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// invalidAction is the type of the action a tool call that does not parse
// becomes, as for the LLM agent: the engine knows no such type, so it
// refuses the action as malformed and records it.
const invalidAction = "invalid"

// row is what the adapter reads of a task row; its other fields are
// ignored.
type row struct {
	World       string   `json:"world"`
	Source      string   `json:"source"`
	Seed        uint64   `json:"seed"`
	Load        *float64 `json:"load"`
	Agents      string   `json:"agents"`
	Member      string   `json:"member"`
	TurnTimeout string   `json:"turn_timeout"`
}

// toolOutput is the "output" of a tool call.
type toolOutput struct {
	Result      string          `json:"result,omitempty"` // what came of the action
	Error       string          `json:"error,omitempty"`  // why nothing (more) could be done
	Turn        uint64          `json:"turn"`             // the member's turn waiting now; 0 when none
	Observation json.RawMessage `json:"observation,omitempty"`
	Done        bool            `json:"done"`
	Status      string          `json:"status,omitempty"` // once done: finished, interrupted or stopped
	Score       *float64        `json:"score,omitempty"`  // once done: the team score
}

// codeOf names the kind of an operation's refusal.
func codeOf(err error) string {
	switch httpgw.StatusOf(err) {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized, http.StatusNotFound:
		return CodeNoSession
	case http.StatusConflict:
		return CodeEnded
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusServiceUnavailable:
		return CodeCapacity
	}
	return CodeServer
}

// readBody reads r's body, at most limit bytes: tooBig reports a longer
// one, of which the rest is drained (bounded) and the connection marked to
// close, so that a client that sends its whole body first still gets the
// answer.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, tooBig bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.CopyN(io.Discard, r.Body, 64<<20)
		w.Header().Set("Connection", "close")
		return body[:limit], true, nil
	}
	return body, false, nil
}

// body reads a protocol request's body: over limit it answers 413, a
// failed read 400; ok false then.
func (s *Server) body(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	b, tooBig, err := readBody(w, r, limit)
	switch {
	case err != nil:
		s.fail(w, http.StatusBadRequest, CodeDisconnected, "reading the request body: "+err.Error())
		return nil, false
	case tooBig:
		s.fail(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("request body is over this server's limit of %d bytes", limit))
		return nil, false
	}
	return b, true
}

// decodeObject decodes a JSON object into v, leniently (unknown fields are
// ignored), refusing anything else.
func decodeObject(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("the body must be a JSON object")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("malformed JSON: %v", err)
	}
	return nil
}

// marksRemote reports whether an agents spec makes a seat remote.
func marksRemote(spec string) bool {
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		_, name, found := strings.Cut(part, "=")
		if !found {
			name = part
		}
		if strings.TrimSpace(name) == agents.Remote {
			return true
		}
	}
	return false
}

// operator reports whether r carries the operator token; with none
// configured, every request does.
func (s *Server) operator(r *http.Request) bool {
	if s.cfg.OperatorToken == "" {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.OperatorToken)) == 1
}

// open makes a session from the row in r's body (seed_session, reset); it
// has answered the error when ok is false. A session the request's cookie
// named is dropped first (and stopped).
func (s *Server) open(w http.ResponseWriter, r *http.Request) (*session, bool) {
	b, ok := s.body(w, r, s.cfg.MaxBodyBytes)
	if !ok {
		return nil, false
	}
	var rw row
	if err := decodeObject(b, &rw); err != nil {
		s.fail(w, http.StatusBadRequest, CodeBadRequest, "the task row: "+err.Error())
		return nil, false
	}
	if strings.TrimSpace(rw.Member) == "" {
		s.fail(w, http.StatusBadRequest, CodeBadRequest, `the task row names no "member": the seat the model plays`)
		return nil, false
	}
	if !worlds.IsID(rw.Member) {
		// Refused before a session is made: such a name would also be
		// read as part of the agents' list it goes into ("member=remote").
		s.fail(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf(`the task row's "member" %q is not a member's ID (lower-case letters, digits, '-' and '_')`, clipped(rw.Member)))
		return nil, false
	}
	if rw.Load != nil && *rw.Load == 0 {
		s.fail(w, http.StatusBadRequest, CodeBadRequest, worlds.CheckLoad(0, 0).Error())
		return nil, false
	}
	spec := rw.Agents
	if strings.TrimSpace(spec) == "" {
		spec = "greedy"
	}
	if marksRemote(spec) {
		s.fail(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf(`the task row's agents %q make seats remote; the model plays "member" (%s), built-in agents the others`, spec, rw.Member))
		return nil, false
	}
	if (strings.TrimSpace(rw.Source) != "" || agents.MentionsLLM(spec) || agents.MentionsTruth(spec)) && !s.operator(r) {
		what := `carries a world file's text ("source")`
		switch {
		case strings.TrimSpace(rw.Source) != "":
		case agents.MentionsLLM(spec):
			what = "names the llm agent"
		default:
			// Its bookings and writes would tell the model playing
			// beside it the seed's hidden rules and facts, which every
			// session of that seed shares.
			what = "names the oracle, which is told the hidden truth"
		}
		s.fail(w, http.StatusForbidden, CodeForbidden, "the task row "+what+
			", which needs the operator token (Authorization: Bearer …): these routes take none, so that rows of shipped worlds and built-in agents run for anyone who reaches them")
		return nil, false
	}
	if c, err := r.Cookie(CookieName); err == nil {
		if old := s.remove(c.Value); old != nil {
			s.log.Debug("session replaced", "session", old.id)
			s.drop(old)
		}
	}
	room, closing := s.reserve()
	switch {
	case closing:
		s.fail(w, http.StatusServiceUnavailable, CodeClosing, "the server is closing")
		return nil, false
	case !room:
		s.fail(w, http.StatusServiceUnavailable, CodeCapacity, fmt.Sprintf("the server already holds %d NeMo Gym sessions; try again later", s.cfg.MaxSessions))
		return nil, false
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	req := wire.CreateRequest{World: rw.World, Source: rw.Source, Seed: rw.Seed, Agents: spec + "," + rw.Member + "=" + agents.Remote,
		TurnTimeout: rw.TurnTimeout}
	if !s.operator(r) {
		// A row anyone may send draws apart from the operator's sessions
		// (on a server with a secret): a side session of an evaluation's
		// seed, played or watched, tells nothing of its hidden truth.
		req.DrawDomain = wire.DrawDomainOpen
	}
	if rw.Load != nil {
		req.Load = *rw.Load
	}
	reply, err := s.ops.Create(ctx, req)
	if err != nil {
		s.unreserve()
		s.fail(w, httpgw.StatusOf(err), codeOf(err), err.Error())
		return nil, false
	}
	ss := &session{id: reply.Session, member: rw.Member, token: reply.Seats[rw.Member].Token}
	if ss.tools, err = responsesTools(reply.Tools); err != nil {
		s.unreserve()
		s.stop(ss)
		s.fail(w, http.StatusBadGateway, CodeServer, fmt.Sprintf("session %s: %v (it was stopped)", reply.Session, err))
		return nil, false
	}
	ss.actions = make([]string, 0, len(ss.tools)) // never nil: nil would accept every action
	for _, t := range ss.actionTools() {
		ss.actions = append(ss.actions, t.Name)
	}
	if ss.token == "" || len(reply.Seats) != 1 {
		s.unreserve()
		s.stop(ss)
		s.fail(w, http.StatusBadGateway, CodeServer, fmt.Sprintf("session %s has remote seats %v, not %s alone (it was stopped)", reply.Session, reply.Seats, rw.Member))
		return nil, false
	}
	if !s.add(ss) {
		s.stop(ss)
		s.fail(w, http.StatusServiceUnavailable, CodeClosing, "the server is closing")
		return nil, false
	}
	s.log.Info("session seeded", "session", ss.id, "member", ss.member)
	return ss, true
}

func (s *Server) handleSeed(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.open(w, r)
	if !ok {
		return
	}
	setCookie(w, ss)
	reply := map[string]any{"session": ss.id, "member": ss.member, "tools": ss.tools}
	if s.cfg.MCP != nil {
		reply[MCPMetadataKey] = mcpMetadata{ServerName: MCPServerName, URLPath: "/mcp", Transport: "http",
			Headers: map[string]string{MCPTokenHeader: ss.mcpKey}}
	}
	writeJSON(w, http.StatusOK, reply)
}

// session finds the session of r's cookie, marked busy, with its lock held
// and its cookie set on w; nil (answered 404) when there is none. Call the
// returned function when done.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (*session, func()) {
	ss := s.acquire(r)
	if ss == nil {
		s.fail(w, http.StatusNotFound, CodeNoSession, "no NeMo Gym session: POST /nemo/seed_session (or /nemo/reset) first and send the cookie it sets")
		return nil, nil
	}
	ss.mu.Lock()
	setCookie(w, ss)
	return ss, func() {
		ss.mu.Unlock()
		s.release(ss)
	}
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.open(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	ss.busy++
	s.mu.Unlock()
	ss.mu.Lock()
	defer func() {
		ss.mu.Unlock()
		s.release(ss)
	}()
	setCookie(w, ss)
	ctx, cancel := s.requestContext(r)
	defer cancel()
	// A step answers each observation with the model's calls and returns
	// the next: its tools are the actions, without observe.
	info := map[string]any{"session": ss.id, "member": ss.member, "supports_explicit_close": true, "tools": ss.actionTools()}
	obs, err := s.ops.Observe(ctx, ss.token, s.cfg.TurnWait)
	var text *string
	switch {
	case err != nil:
		s.cfg.Recorder.Failed(codeOf(err))
		info["error"] = err.Error()
	case obs.Done:
		ss.ended = true
		info["done"], info["status"] = true, obs.Status
	case obs.Turn == 0:
		s.cfg.Recorder.Failed(CodeNoTurn)
		info["error"] = fmt.Sprintf("no turn came for %s within %v", ss.member, s.cfg.TurnWait)
	default:
		t := string(obs.Body)
		text = &t
	}
	info["turn"] = obs.Turn
	writeJSON(w, http.StatusOK, map[string]any{"observation": text, "info": info})
}

// turn answers the member's waiting turn with acts and waits for the next:
// cur is the observation answered, next what came after. An error output
// (non-nil) says why nothing, or nothing more, could be done; sent says
// whether acts reached the engine; refused, if set, is why the engine
// refuses the reply whole (too many actions, too long: it records the turn
// malformed and takes none of them).
func (s *Server) turn(ctx context.Context, ss *session, acts []org.Action) (next httpgw.Observation, sent bool, refused string, failed *toolOutput) {
	cur, err := s.ops.Observe(ctx, ss.token, s.cfg.TurnWait)
	switch {
	case err != nil:
		return cur, false, "", s.errorOutput(ctx, err)
	case cur.Done:
		out := s.endOutput(ctx, ss, cur.Status)
		out.Error = fmt.Sprintf("session %s has ended (%s)", ss.id, cur.Status)
		return cur, false, "", &out
	case cur.Turn == 0:
		s.cfg.Recorder.Failed(CodeNoTurn)
		return cur, false, "", &toolOutput{Error: fmt.Sprintf("no turn came for %s within %v: call observe, or try again", ss.member, s.cfg.TurnWait)}
	}
	if acts == nil {
		acts = []org.Action{}
	}
	body, err := json.Marshal(org.Reply{Turn: cur.Turn, Actions: acts})
	if err != nil {
		return cur, false, "", &toolOutput{Error: "the actions do not encode: " + err.Error()}
	}
	if rep, err := s.ops.Act(ctx, ss.token, body); err != nil {
		if !rep.Forwarded {
			return cur, false, "", s.errorOutput(ctx, err)
		}
		// Refused whole, and forwarded for the engine to record: the
		// turn was used.
		refused = rep.Error
	}
	next, err = s.ops.Observe(ctx, ss.token, s.cfg.TurnWait)
	switch {
	case err != nil:
		out := s.errorOutput(ctx, err)
		out.Result = "sent"
		return next, true, refused, out
	case next.Done:
		out := s.endOutput(ctx, ss, next.Status)
		return next, true, refused, &out
	}
	return next, true, refused, nil
}

// errorOutput is the output of an operation's refusal.
func (s *Server) errorOutput(ctx context.Context, err error) *toolOutput {
	code := codeOf(err)
	if ctx.Err() != nil {
		code = CodeDisconnected
	}
	s.cfg.Recorder.Failed(code)
	return &toolOutput{Error: err.Error()}
}

// endOutput is the output once the session has ended: its status and team
// score.
func (s *Server) endOutput(ctx context.Context, ss *session, status string) toolOutput {
	ss.ended = true
	out := toolOutput{Done: true, Status: status}
	if sc, err := s.ops.Score(ctx, ss.id); err == nil {
		out.Score = &sc.Score
	}
	return out
}

// results says what came of each action answered, from the refusals the
// next observation lists ("rejected").
func results(acts []org.Action, next httpgw.Observation, refused string, failed *toolOutput) []string {
	out := make([]string, len(acts))
	if refused != "" {
		// The reply was refused whole: none of its actions was taken.
		// (The next observation lists the refusal too, but a list that
		// still shows an earlier turn's would mislabel this one.)
		for i, a := range acts {
			out[i] = "refused (malformed): " + refused + "; none of this turn's calls was taken"
			if a.Type == invalidAction {
				out[i] = "refused: malformed tool call: " + a.Text + "; and " + out[i]
			}
		}
		return out
	}
	var rejected []org.RejectedView
	if next.Body != nil {
		var o struct {
			Rejected []org.RejectedView `json:"rejected"`
		}
		_ = json.Unmarshal(next.Body, &o)
		rejected = o.Rejected
	}
	refusal := agents.MatchRefusals(acts, rejected)
	for i, a := range acts {
		rej := refusal[i]
		switch {
		case a.Type == invalidAction:
			out[i] = "refused: malformed tool call: " + a.Text
		case rej != nil:
			why := rej.Kind
			if rej.Rule != "" {
				why += ", rule " + rej.Rule
			}
			out[i] = fmt.Sprintf("refused (%s): %s", why, rej.Reason)
		case next.Turn != 0:
			out[i] = "accepted"
		case failed != nil && failed.Done:
			out[i] = "sent; the session ended before the next turn (its log tells whether it was accepted)"
		default:
			out[i] = "sent; no next turn came to tell whether it was accepted"
		}
	}
	return out
}

// callOf turns a tool call into the action it answers a turn with: one of
// type invalidAction, carrying the reason, when it does not parse or is
// of no tool among offered (the session's actions).
func callOf(offered []string, name string, args []byte, tooBig bool) (org.Action, bool) {
	if tooBig {
		return org.Action{Type: invalidAction, Text: fmt.Sprintf("arguments of %s are over %d bytes", name, org.MaxReplyBytes)}, false
	}
	a, err := agents.ActionFromOfferedToolCall(offered, name, args)
	if err != nil {
		return org.Action{Type: invalidAction, Text: err.Error()}, false
	}
	return a, true
}

func (s *Server) handleTool(w http.ResponseWriter, r *http.Request) {
	ss, done := s.session(w, r)
	if ss == nil {
		return
	}
	defer done()
	s.cfg.Recorder.Stepped()
	name := r.PathValue("tool")
	args, tooBig, err := readBody(w, r, org.MaxReplyBytes)
	if err != nil {
		s.cfg.Recorder.Failed(CodeDisconnected)
		writeJSON(w, http.StatusOK, map[string]any{"output": toolOutput{Error: "reading the arguments: " + err.Error()}})
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	if name == "observe" {
		writeJSON(w, http.StatusOK, map[string]any{"output": s.observe(ctx, ss)})
		return
	}
	act, ok := callOf(ss.actions, name, args, tooBig)
	if !ok {
		s.cfg.Recorder.Failed(CodeBadCall)
	}
	next, sent, refused, failed := s.turn(ctx, ss, []org.Action{act})
	var out toolOutput
	if failed != nil {
		out = *failed
	}
	if sent {
		out.Result = results([]org.Action{act}, next, refused, failed)[0]
	}
	if failed == nil || failed.Done {
		out.Turn, out.Observation = next.Turn, next.Body
	}
	if ctx.Err() != nil {
		s.log.Debug("client gone", "session", ss.id, "tool", name, "sent", sent)
	}
	writeJSON(w, http.StatusOK, map[string]any{"output": out})
}

// observe is the observe tool: the member's turn, or the session's end.
func (s *Server) observe(ctx context.Context, ss *session) toolOutput {
	obs, err := s.ops.Observe(ctx, ss.token, s.cfg.TurnWait)
	switch {
	case err != nil:
		return *s.errorOutput(ctx, err)
	case obs.Done:
		return s.endOutput(ctx, ss, obs.Status)
	case obs.Turn == 0:
		s.cfg.Recorder.Failed(CodeNoTurn)
		return toolOutput{Error: fmt.Sprintf("no turn came for %s within %v: observe again", ss.member, s.cfg.TurnWait)}
	}
	return toolOutput{Turn: obs.Turn, Observation: obs.Body}
}

// functionCall is what step reads of a function_call output item.
type functionCall struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// toolOutputItem is one entry of step's info.tool_outputs.
type toolOutputItem struct {
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	ss, done := s.session(w, r)
	if ss == nil {
		return
	}
	defer done()
	b, ok := s.body(w, r, s.cfg.MaxBodyBytes)
	if !ok {
		return
	}
	var req struct {
		Response *struct {
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if err := decodeObject(b, &req); err != nil || req.Response == nil {
		if err == nil {
			err = errors.New(`it has no "response" (the model's response)`)
		}
		s.fail(w, http.StatusBadRequest, CodeBadRequest, "step: "+err.Error())
		return
	}
	s.cfg.Recorder.Stepped()
	var calls []functionCall
	for _, raw := range req.Response.Output {
		var c functionCall
		if json.Unmarshal(raw, &c) == nil && c.Type == "function_call" {
			if c.CallID == "" {
				c.CallID = c.ID
			}
			calls = append(calls, c)
		}
	}
	// Every call is sent, as the other seats send every action: a reply
	// of more than org.MaxActions is refused whole by the engine (malformed,
	// recorded in the log with its count), and every output says so. Sending
	// the first ones and dropping the rest would leave the dropped calls in
	// no log.
	var acts []org.Action
	outputs := make([]string, len(calls))
	for _, c := range calls {
		args := argumentsOf(c.Arguments)
		act, ok := callOf(ss.actions, c.Name, []byte(args), len(args) > org.MaxReplyBytes)
		if !ok {
			s.cfg.Recorder.Failed(CodeBadCall)
		}
		acts = append(acts, act)
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	next, sent, refused, failed := s.turn(ctx, ss, acts)
	if sent {
		copy(outputs, results(acts, next, refused, failed))
	} else if failed != nil {
		for i := range acts {
			outputs[i] = "not sent: " + failed.Error
		}
	}
	info := map[string]any{"session": ss.id, "member": ss.member, "turn": next.Turn}
	items := make([]toolOutputItem, len(calls))
	for i, c := range calls {
		o, _ := json.Marshal(map[string]string{"result": outputs[i]})
		items[i] = toolOutputItem{CallID: c.CallID, Output: string(o)}
	}
	info["tool_outputs"] = items
	reply := map[string]any{"observation": nil, "reward": 0.0, "terminated": false, "truncated": false}
	if failed != nil && failed.Error != "" {
		info["error"] = failed.Error
	}
	if sc, err := s.ops.Score(ctx, ss.id); err == nil {
		reply["reward"] = sc.Score - ss.score
		ss.score = sc.Score
	} else {
		info["score_error"] = err.Error()
	}
	switch {
	case failed != nil && failed.Done:
		info["done"], info["status"], info["score"] = true, failed.Status, ss.score
		reply["terminated"] = failed.Status == "finished"
		reply["truncated"] = failed.Status != "finished"
	case next.Turn != 0:
		reply["observation"] = string(next.Body)
	}
	reply["info"] = info
	writeJSON(w, http.StatusOK, reply)
}

// argumentsOf returns a call's arguments as the JSON text they hold: the
// Responses API sends a string containing JSON; an object is taken as is.
func argumentsOf(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	ss, done := s.session(w, r)
	if ss == nil {
		return
	}
	defer done()
	b, ok := s.body(w, r, s.cfg.MaxVerifyBytes)
	if !ok {
		return
	}
	var obj map[string]json.RawMessage
	if err := decodeObject(b, &obj); err != nil {
		s.fail(w, http.StatusBadRequest, CodeBadRequest, "verify: "+err.Error())
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	status, err := s.playOut(ctx, ss)
	if err != nil {
		code := codeOf(err)
		if ctx.Err() != nil {
			code = CodeDisconnected
		}
		s.fail(w, http.StatusBadGateway, code, fmt.Sprintf("playing session %s to its end: %v", ss.id, err))
		return
	}
	sc, err := s.ops.Score(ctx, ss.id)
	if err != nil {
		s.fail(w, httpgw.StatusOf(err), codeOf(err), fmt.Sprintf("the score of session %s: %v", ss.id, err))
		return
	}
	credit, complete := s.memberCredit(ctx, ss)
	put := func(k string, v any) {
		b, _ := json.Marshal(v)
		obj[k] = b
	}
	team := round(sc.Score)
	put("reward", team)
	put("reward_components", map[string]float64{"team": team, "member": round(credit)})
	put("corpsim", map[string]any{"session": ss.id, "member": ss.member, "status": status, "events": sc.Events,
		"complete": sc.Complete && complete})
	writeJSON(w, http.StatusOK, obj)
}

// playOut plays ss's session to its end, the member idle, and returns its
// final status. Past PlayOutTimeout it stops the session.
func (s *Server) playOut(ctx context.Context, ss *session) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PlayOutTimeout)
	defer cancel()
	timedOut := func() bool { return ctx.Err() == nil && pctx.Err() != nil }
	for {
		obs, err := s.ops.Observe(pctx, ss.token, s.cfg.TurnWait)
		switch {
		case timedOut():
			s.log.Warn("play-out timed out: session stopped", "session", ss.id, "after", s.cfg.PlayOutTimeout)
			s.stopLocked(ss)
			return "stopped", nil
		case err != nil:
			return "", err
		case obs.Done:
			ss.ended = true
			return obs.Status, nil
		case obs.Turn == 0:
			continue
		}
		body, _ := json.Marshal(org.Reply{Turn: obs.Turn, Actions: []org.Action{}})
		if _, err := s.ops.Act(pctx, ss.token, body); err != nil && httpgw.StatusOf(err) != http.StatusConflict && !timedOut() {
			return "", err
		}
	}
}

// round rounds a score to 6 decimals, as the rubric's scorecard does.
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// memberCredit sums the member's part of the session's reward events: its
// delivered value. complete is false when the events could not all be read.
func (s *Server) memberCredit(ctx context.Context, ss *session) (credit float64, complete bool) {
	for from := uint64(1); ; {
		page, err := s.ops.Events(ctx, ss.id, from, wire.MaxHistoryPage)
		if err != nil {
			s.log.Debug("events", "session", ss.id, "error", err)
			return credit, false
		}
		for _, ev := range page.Events {
			if ev.Type != payload.EvReward {
				continue
			}
			var p payload.Reward
			if json.Unmarshal(ev.Payload, &p) == nil {
				credit += p.Members[ss.member]
			}
		}
		if page.Next == 0 {
			return credit, page.Complete
		}
		from = page.Next
	}
}

func (s *Server) handleClose(w http.ResponseWriter, r *http.Request) {
	ss, done := s.session(w, r)
	if ss == nil {
		return
	}
	defer done()
	s.remove(ss.key)
	s.stopLocked(ss)
	s.discard(ss)
	w.Header().Del("Set-Cookie") // the session's, set by s.session: replaced by its expiry
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	writeJSON(w, http.StatusOK, map[string]any{"session": ss.id, "closed": true})
}

// handleTools answers every action's tool, or with ?world=W the tools of
// a session of shipped world W.
func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	b := toolsJSON
	if name := r.URL.Query().Get("world"); name != "" {
		var err error
		if b, err = toolsOfWorld(name); err != nil {
			s.fail(w, http.StatusNotFound, CodeNoWorld, err.Error())
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// clipped is s cut to its first 64 bytes (at a character's start) and
// "…", for an error message that quotes what a client sent.
func clipped(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
