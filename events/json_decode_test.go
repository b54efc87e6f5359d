package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// sameAsEncodingJSON decodes data with the fast path and with
// encoding/json and fails t if the fast path read it and the two differ.
// It reports whether the fast path read it.
func sameAsEncodingJSON(t *testing.T, data []byte) bool {
	t.Helper()
	var fast, slow Event
	fast.Seq, slow.Seq = 99, 99 // what a failed decode must leave alone
	read := fast.unmarshalFast(data)
	err := slow.unmarshalJSON(data)
	if !read {
		if fast.Seq != 99 {
			t.Fatalf("the fast path changed the event it did not read from %.300q: %+v", data, fast)
		}
		return false
	}
	if err != nil {
		t.Fatalf("the fast path read %.300q, which encoding/json refuses: %.300v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%.300q read as\n%#v by the fast path,\n%#v by encoding/json", data, fast, slow)
	}
	return true
}

// TestUnmarshalFastReadsWhatIsWritten checks that the events the feed
// carries take the fast path, as MarshalJSON and AppendJSON write them and
// with whitespace about, and that what it leaves to encoding/json is the
// unusual: escapes in keys, other keys' spellings, keys twice, a null ID.
func TestUnmarshalFastReadsWhatIsWritten(t *testing.T) {
	e := Event{ID: NewID([32]byte{1}, 7, 3, 3), Session: "s1", Seq: 3, Time: -7, Type: "task.created", Actor: "ana", Cause: 2,
		Payload: json.RawMessage(`{"task":{"id":"t-1","v":[1.5e3,-0,true,null,"\u00e9\"x"]},"n":{}}`)}
	m, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	read := [][]byte{
		m,
		AppendJSON(nil, &e),
		AppendJSON(nil, &Event{ID: e.ID, Seq: 1, Type: "session.started"}),
		[]byte(` { "id" : "` + e.ID.String() + `" , "seq":1, "payload" : { "a" : [ 1 , 2 ] } , "actor":null } `),
		[]byte(`{"id":"` + e.ID.String() + `","payload":null,"type":"t\u00e9"}`),
		[]byte(`{"id":"` + e.ID.String() + `","type":"caf` + "\xff" + `"}`),
	}
	for _, in := range read {
		if !sameAsEncodingJSON(t, in) {
			t.Errorf("the fast path does not read %s", in)
		}
	}
	id := e.ID.String()
	left := []string{
		`null`, `[]`, `{}`, `{"seq":1}`, `{"id":null}`, `{"id":"` + id + `","ID":"` + id + `"}`,
		`{"id":"` + id + `","seq":1,"seq":2}`, `{"ID":"` + id + `"}`, `{"i\u0064":"` + id + `"}`,
		`{"id":"` + id + `","seq":-1}`, `{"id":"` + id + `","seq":1.0}`, `{"id":"` + id + `","x":1}`,
		`{"id":"` + id + `"} x`, `{"id":"` + id + `","payload":{"a":01}}`, `{"id":"` + id + `","payload":[1,]}`,
		`{"id":"` + id + `","payload":"\x"}`, `{"id":"` + id + `","payload":{"a":"b` + "\n" + `"}}`,
		`{"id":"` + id[:25] + `"}`, `{"id":"8` + id[1:] + `"}`, `{"id":"` + id + `","payload":{"a":tru}}`,
	}
	for _, in := range left {
		if sameAsEncodingJSON(t, []byte(in)) {
			t.Errorf("the fast path read %s, which it should leave to encoding/json", in)
		}
	}
	// encoding/json reads values nested 10,000 deep, counting the event's
	// own object, and refuses 10,001.
	for depth, readable := range map[int]bool{maxNest - 2: true, maxNest - 1: false} {
		deep := []byte(`{"id":"` + id + `","payload":`)
		deep = append(deep, bytes.Repeat([]byte("["), depth)...)
		deep = append(deep, bytes.Repeat([]byte("]"), depth)...)
		deep = append(deep, '}')
		if got := sameAsEncodingJSON(t, deep); got != readable {
			t.Errorf("a payload nested %d deep: the fast path read it: %v", depth, got)
		}
		var ev Event
		if err := ev.unmarshalJSON(deep); (err == nil) != readable {
			t.Errorf("a payload nested %d deep: encoding/json: %.100v", depth, err)
		}
	}
}

// maxNest is one deeper than encoding/json reads.
const maxNest = 10001

// FuzzUnmarshalFast checks that the fast path reads an event exactly as
// encoding/json does, or leaves it to encoding/json.
func FuzzUnmarshalFast(f *testing.F) {
	e := Event{ID: NewID([32]byte{1}, 7, 3, 3), Session: "s1", Seq: 3, Time: -7, Type: "task.created", Actor: "ana", Cause: 2,
		Payload: json.RawMessage(`{"a":[1,{"b":"c\n"},null]}`)}
	f.Add(AppendJSON(nil, &e))
	f.Add([]byte(`{"id":"01KE5Q8600FNNVAPK8FYERBES5","payload":[[[]],{}],"seq":1e1}`))
	f.Add([]byte(`{"id":"01KE5Q8600FNNVAPK8FYERBES5","payload":"\ud800","time":-0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsEncodingJSON(t, data)
	})
}

func BenchmarkUnmarshalJSON(b *testing.B) {
	e := Event{ID: NewID([32]byte{1}, 7, 3, 3), Session: "01M952458CVAKKXWNNRJEVTEE3", Seq: 4, Time: 3505, Type: "task.created", Cause: 1,
		Payload: json.RawMessage(`{"task":{"id":"t-1","title":"Ticket","role":"server","effort":704885,"value":1},"queue":"desk","team":"desk","arrival":"t","next_at":40907,"interruption":-1}`)}
	data := AppendJSON(nil, &e)
	for _, c := range []struct {
		name string
		dec  func(*Event, []byte) error
	}{
		{"fast", (*Event).UnmarshalJSON},
		{"encoding-json", (*Event).unmarshalJSON},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var ev Event
				if err := c.dec(&ev, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
