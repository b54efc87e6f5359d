package mcpseat

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK refuses a request for a method it does not handle, on the
// revisions with sessions, with a plain-text HTTP 400 that starts with
// notHandled (its jsonrpc2.ErrNotHandled); MCP's streamable HTTP transport
// requires a JSON-RPC response to every request it takes (2025-11-25,
// "Sending Messages to the Server": the server MUST return
// text/event-stream or application/json), and JSON-RPC names the error
// -32601. methodNotFound turns that refusal into the error, with the
// request's id, on HTTP 200 (a 404 would tell the client its MCP session
// is gone). 2026-07-28 requests are the SDK's own: it answers 404 and
// -32601 there, as that revision asks.
const notHandled = "JSON RPC not handled"

// maxPeek bounds the bytes of a request kept to answer it -32601: a larger
// request of an unknown method keeps the SDK's 400.
const maxPeek = 64 << 10

// notFoundWriter holds back a 400 answer until it is known whether it is
// the SDK's refusal of an unknown method.
type notFoundWriter struct {
	http.ResponseWriter
	held bool         // a 400 was written and is held
	body bytes.Buffer // the held answer's first bytes
}

func (w *notFoundWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest && !w.held {
		w.held = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *notFoundWriter) Write(b []byte) (int, error) {
	if !w.held {
		return w.ResponseWriter.Write(b)
	}
	if room := maxPeek - w.body.Len(); room > 0 {
		w.body.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

func (w *notFoundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// peekBody keeps the first maxPeek bytes of what is read of a body.
type peekBody struct {
	io.ReadCloser
	kept bytes.Buffer
	n    int64
}

func (p *peekBody) Read(b []byte) (int, error) {
	n, err := p.ReadCloser.Read(b)
	if p.kept.Len() < maxPeek {
		p.kept.Write(b[:min(n, maxPeek-p.kept.Len())])
	}
	p.n += int64(n)
	return n, err
}

// isOpen reports whether id names an open MCP session.
func (s *Server) isOpen(id string) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.open { // order: any match will do
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// methodNotFound serves r with next, answering the SDK's refusal of a
// request (a call, with an id) on an open MCP session for a method it does
// not handle as the JSON-RPC error -32601; the refusal of anything else is
// passed on as the SDK made it: a notification the server does not take,
// and a request with no MCP session or an unknown one (400 and 404 are the
// transport's answers there).
func (s *Server) methodNotFound(next http.Handler, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		next.ServeHTTP(w, r)
		return
	}
	pb := &peekBody{ReadCloser: r.Body}
	r.Body = pb
	nw := &notFoundWriter{ResponseWriter: w}
	next.ServeHTTP(nw, r)
	if !nw.held {
		return
	}
	if bytes.HasPrefix(nw.body.Bytes(), []byte(notHandled)) && pb.n <= maxPeek && s.isOpen(r.Header.Get("Mcp-Session-Id")) {
		if msg, err := jsonrpc.DecodeMessage(pb.kept.Bytes()); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
					Message: fmt.Sprintf("method not found: %q", req.Method)}})
				if err == nil {
					s.rec.Failed(strconv.Itoa(jsonrpc.CodeMethodNotFound))
					h := w.Header()
					h.Del("X-Content-Type-Options")
					h.Set("Content-Type", "application/json")
					h.Set("Content-Length", strconv.Itoa(len(b)))
					w.WriteHeader(http.StatusOK)
					_, _ = w.Write(b)
					return
				}
			}
		}
	}
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(nw.body.Bytes())
}
