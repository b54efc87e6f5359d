package mcpseat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
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
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`, // no newline at the end
	}, "\n")
	var out bytes.Buffer
	passed, err := io.ReadAll(&rpcLines{r: bufioReader(in), w: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"
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
	if len(codes) != 3 || codes[0] != -32700 || codes[1] != -32600 || codes[2] != -32600 {
		t.Errorf("answered %v, want -32700, -32600, -32600", codes)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
