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
		line, long, err := l.readLine()
		l.err = err
		line = bytes.TrimSpace(line) // trailing spaces ended the SDK's session
		if len(line) == 0 && !long {
			continue
		}
		code, why := rpcMistake(line)
		if long {
			code, why = -32600, fmt.Sprintf("Invalid Request: a line of more than %d bytes", maxLine)
		}
		if code != 0 {
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": why}})
			if _, err := l.w.Write(append(reply, '\n')); err != nil {
				return 0, err
			}
			continue
		}
		l.line = append(line, '\n')
	}
	n := copy(p, l.line)
	l.line = l.line[n:]
	return n, nil
}

// maxLine bounds a line: the SDK's own limit on a message (a longer line
// is read to its end and answered, not held).
const maxLine = 16 << 20

// readLine reads the next line, without holding more than maxLine bytes
// of it: long says the line was longer (what is returned is cut).
func (l *rpcLines) readLine() (line []byte, long bool, err error) {
	for {
		part, err := l.r.ReadSlice('\n')
		if len(line)+len(part) > maxLine {
			long = true
		} else {
			line = append(line, part...)
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}

// rpcMistake is the JSON-RPC error code of a line that is not a message,
// and why; 0 for one that is. A batch is refused: the protocol since
// 2025-06-18 has none, and the SDK ended the session on one.
func rpcMistake(line []byte) (int, string) {
	if !json.Valid(line) {
		return -32700, "Parse error: the line is not JSON"
	}
	if line[0] == '[' {
		return -32600, "Invalid Request: a batch (JSON-RPC batches are not part of MCP since 2025-06-18): send each message on its own line"
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return -32600, fmt.Sprintf("Invalid Request: %v", err)
	}
	return 0, ""
}
