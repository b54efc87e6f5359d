package events

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// FuzzParseBody checks that parseBody, the fast path of decoding, accepts
// exactly the bodies decodeBody accepts and reads the same fields from
// them, so the fallback to decodeBody only ever adds the reason.
func FuzzParseBody(f *testing.F) {
	e := Event{Seq: 300, Time: -5, Cause: 299, Type: "task.claimed", Actor: "alice", Payload: []byte(`{"task":"t1"}`)}
	b := Encode(&e)
	f.Add(b[1 : len(b)-checksumLen])
	f.Add(bytes.Repeat([]byte{0}, idLen+6))
	f.Add(append(bytes.Repeat([]byte{0}, idLen), 0x80, 0x00, 0, 0, 0, 0, 0))                                                 // non-minimal seq
	f.Add(append(bytes.Repeat([]byte{0}, idLen), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0)) // max seq
	f.Add(append(bytes.Repeat([]byte{0}, idLen), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0)) // overflow
	f.Add(append(bytes.Repeat([]byte{0}, idLen), 1, 2, 3, 5, 'a'))                                                           // truncated type
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) < idLen {
			return // decode checks the minimum length before either runs
		}
		var fast, slow Event
		ft, fa, fp, ok := parseBody(body, &fast)
		st, sa, sp, err := decodeBody(body, &slow)
		if ok != (err == nil) {
			t.Fatalf("body %s: parseBody ok=%v, decodeBody error %v", hex.EncodeToString(body), ok, err)
		}
		if !ok {
			return
		}
		if fast.ID != slow.ID || fast.Seq != slow.Seq || fast.Time != slow.Time || fast.Cause != slow.Cause || !bytes.Equal(ft, st) || !bytes.Equal(fa, sa) || !bytes.Equal(fp, sp) {
			t.Fatalf("body %s: parseBody %+v %q %q %q, decodeBody %+v %q %q %q",
				hex.EncodeToString(body), fast, ft, fa, fp, slow, st, sa, sp)
		}
	})
}
