package mcpseat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rpcLines passes on the JSON-RPC messages and answers each other line
// with a JSON-RPC error: one malformed line ended corpsim mcp, and the
// requests in flight with it.
func TestRPCLinesAnswerWhatIsNoMessage(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`garbage`,
		``,
		`{"x":1}`,
		`[]`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}  `, // trailing spaces ended the SDK's session
		`"` + strings.Repeat("x", maxLine) + `"`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`, // no newline at the end
	}, "\n")
	var out bytes.Buffer
	passed, err := io.ReadAll(&rpcLines{r: bufioReader(in), w: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"
	if string(passed) != want {
		t.Errorf("passed on:\n%s\nwant:\n%s", passed, want)
	}
	var codes []int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct{ Code int }
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.JSONRPC != "2.0" || string(r.ID) != "null" {
			t.Fatalf("answer %q is no JSON-RPC error of id null (%v)", line, err)
		}
		codes = append(codes, r.Error.Code)
	}
	if len(codes) != 5 || codes[0] != -32700 || codes[1] != -32600 || codes[2] != -32600 || codes[3] != -32600 || codes[4] != -32600 {
		t.Errorf("answered %v, want -32700 and four -32600 (not a message, an empty batch, a batch, a line too long)", codes)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// StdioTransport under the SDK's own server: after a line that is not JSON,
// a batch and a message with trailing spaces, each of which ended the
// session, the next ping is still answered.
func TestStdioTransportKeepsTheSession(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}  `,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}
	pr, pw := io.Pipe()
	or, ow := io.Pipe()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, StdioTransport(pr, ow)); _ = ow.Close() }()
	out := make(chan string, 1)
	go func() { b, _ := io.ReadAll(or); out <- string(b) }()
	go func() { // a session the SDK ended reads no more: the writes would block
		for _, l := range lines {
			if _, err := pw.Write([]byte(l + "\n")); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond) // one at a time, as a client waits for each answer
		}
		time.Sleep(100 * time.Millisecond)
		_ = pw.Close()
	}()
	<-done
	_ = pr.Close()
	got := <-out
	for _, id := range []string{`"id":2,"result"`, `"id":3,"result"`} {
		if !strings.Contains(got, id) {
			t.Errorf("no answer %s; the server wrote:\n%s", id, got)
		}
	}
}
