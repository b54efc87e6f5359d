package wire_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
)

// replySeeds are replies as agents send them, and near misses of the fast
// decoder's form: keys in another case, repeated, unknown, escaped;
// numbers as floats; nulls; trailing data; invalid UTF-8.
var replySeeds = []string{
	`{"turn":3,"actions":[{"type":"claim","task":"t-1"},{"type":"work","task":"t-1","for":"2h"}]}`,
	`{"turn":1,"actions":[]}`,
	`{"turn":2,"actions":[],"error":"endpoint down"}`,
	` { "turn" : 7 , "actions" : [ { "type" : "wait" , "until" : 90000 } ] } `,
	`{"actions":[{"type":"message","to":"ana","text":"hi <b>\u00e9\n","reply_to":"m-1","topic":"x"}]}`,
	`{"turn":1,"actions":null}`, `{"turn":null}`, `null`, `{}`, `[]`, ``,
	`{"Turn":1}`, `{"turn":1,"turn":2}`, `{"turn":1,"colour":"blue"}`, `{"t\u0075rn":1}`,
	`{"turn":1.0}`, `{"turn":1e3}`, `{"turn":-1}`, `{"turn":18446744073709551616}`,
	`{"turn":1} {}`, `{"turn":1}x`, `{"actions":[null]}`, `{"actions":[{"type":"a\xffb"}]}`,
	`{"actions":[{"type":"reject","request":"r-1","reason":"no"},{"type":"update","record":"invoice","id":"i-1","fields":{"amount":3}}]}`,
	`{"actions":[{"type":"claim","attrs":{"a":1}}]}`, `{"actions":[{"until":1.5}]}`, `{"error":5}`,
}

// mustParseLikeEncodingJSON checks that whatever the fast decoder reads,
// encoding/json's strict path reads too, to the same reply.
func mustParseLikeEncodingJSON(t *testing.T, raw []byte) {
	t.Helper()
	var fast org.Reply
	if !wire.FastReply(raw, &fast) {
		return
	}
	strict, err := wire.StrictReply(raw)
	if err != nil {
		t.Fatalf("the fast decoder read %q, encoding/json refuses it: %v", raw, err)
	}
	if !reflect.DeepEqual(fast, strict) {
		t.Fatalf("%q: fast %+v, encoding/json %+v", raw, fast, strict)
	}
}

func TestParseReplyFastLikeEncodingJSON(t *testing.T) {
	read := 0
	for _, s := range replySeeds {
		mustParseLikeEncodingJSON(t, []byte(s))
		var r org.Reply
		if wire.FastReply([]byte(s), &r) {
			read++
		}
	}
	if read < 6 {
		t.Fatalf("the fast decoder read %d of the seeds; the agents' usual replies must take it", read)
	}
	// Replies written by AppendReply, as every built-in agent host sends them.
	for _, r := range []org.Reply{{Turn: 9, Actions: []org.Action{{Type: "claim", Task: "t-1"}, {Type: "work", Task: "t-1", For: "1h"}}}, {Turn: 1, Error: "x"}} {
		b := wire.AppendReply(nil, &r)
		var got org.Reply
		if !wire.FastReply(b, &got) || !reflect.DeepEqual(got, r) {
			t.Fatalf("AppendReply's %s: fast decoder got %+v", b, got)
		}
	}
	// Over the action limit: left to the strict path, which refuses it.
	many := `{"turn":1,"actions":[` + strings.Repeat(`{"type":"wait"},`, org.MaxActions) + `{"type":"wait"}]}`
	var r org.Reply
	if wire.FastReply([]byte(many), &r) {
		t.Fatal("the fast decoder read more than MaxActions actions")
	}
	if _, err := wire.ParseReply([]byte(many)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("a reply over the action limit: %v", err)
	}
}

func FuzzParseReplyFast(f *testing.F) {
	for _, s := range replySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { mustParseLikeEncodingJSON(t, raw) })
}

// A reply cut one byte past the limit (what the HTTP gateway forwards of
// a longer body) is "65537 bytes or more", not 65537 bytes (a review saw
// 100 KB and 9 MB bodies recorded as 65,537 bytes); a longer one read
// whole says its length.
func TestParseReplyTooLongSaysItsSize(t *testing.T) {
	for n, want := range map[int]string{
		org.MaxReplyBytes + 1:  fmt.Sprintf("reply is %d bytes or more; the limit is %d", org.MaxReplyBytes+1, org.MaxReplyBytes),
		org.MaxReplyBytes + 10: fmt.Sprintf("reply is %d bytes; the limit is %d", org.MaxReplyBytes+10, org.MaxReplyBytes),
	} {
		if _, err := wire.ParseReply(bytes.Repeat([]byte(" "), n)); err == nil || err.Error() != want {
			t.Errorf("%d bytes: %v; want %q", n, err, want)
		}
	}
}
