package mcpseat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is the transport of an MCP server on in and out (the
// proxy's stdin and stdout), one JSON-RPC message a line. A line that is
// not a JSON-RPC message is answered with a JSON-RPC error, id null (a
// parse error, -32700, or an invalid request, -32600), and the session
// goes on: the SDK's transport ended it, and with it the answers to the
// requests still in flight.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{Reader: io.NopCloser(&rpcLines{r: bufio.NewReader(in), w: w}), Writer: w}
}

// lockedWriter writes each Write whole: the SDK writes a message a call,
// and rpcLines its errors between them.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lockedWriter) Close() error { return nil }

// rpcLines reads r a line at a time and passes on the lines that are
// JSON-RPC messages (or batches of them); it answers the others on w.
type rpcLines struct {
	r    *bufio.Reader
	w    io.Writer
	line []byte // what is left of the line being passed on
	err  error  // r's, once its lines are passed on
}

func (l *rpcLines) Read(p []byte) (int, error) {
	for len(l.line) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.r.ReadBytes('\n')
		l.err = err
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if code, why := rpcMistake(line); code != 0 {
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": why}})
			if _, err := l.w.Write(append(reply, '\n')); err != nil {
				return 0, err
			}
			continue
		}
		if line[len(line)-1] != '\n' {
			line = append(line, '\n')
		}
		l.line = line
	}
	n := copy(p, l.line)
	l.line = l.line[n:]
	return n, nil
}

// rpcMistake is the JSON-RPC error code of a line that is not a message
// (or a batch of them), and why; 0 for one that is.
func rpcMistake(line []byte) (int, string) {
	if !json.Valid(line) {
		return -32700, "Parse error: the line is not JSON"
	}
	var batch []json.RawMessage
	if json.Unmarshal(line, &batch) == nil {
		if len(batch) == 0 {
			return -32600, "Invalid Request: an empty batch"
		}
		for _, raw := range batch {
			if _, err := jsonrpc.DecodeMessage(raw); err != nil {
				return -32600, fmt.Sprintf("Invalid Request: %v", err)
			}
		}
		return 0, ""
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return -32600, fmt.Sprintf("Invalid Request: %v", err)
	}
	return 0, ""
}
