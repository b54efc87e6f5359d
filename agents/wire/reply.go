package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/events/payload/fastjson"
	"github.com/corpsim/corpsim/org"
)

// ParseReply decodes an agent's reply strictly: unknown fields, trailing
// data, input over org.MaxReplyBytes, more than org.MaxActions actions and
// actions beside an error are errors with a sentence saying what was
// wrong.
func ParseReply(raw []byte) (org.Reply, error) {
	var r org.Reply
	if n := len(raw); n > org.MaxReplyBytes {
		more := ""
		if n == org.MaxReplyBytes+1 {
			more = " or more" // what a reader that stops past the limit forwards (the HTTP gateway's act)
		}
		return r, fmt.Errorf("reply is %d bytes%s; the limit is %d", n, more, org.MaxReplyBytes)
	}
	if !fastReply(raw, &r) {
		var err error
		if r, err = strictReply(raw); err != nil {
			return org.Reply{}, err
		}
	}
	if len(r.Actions) > org.MaxActions {
		return org.Reply{}, fmt.Errorf("reply has %d actions; the limit is %d", len(r.Actions), org.MaxActions)
	}
	if r.Error != "" && len(r.Actions) > 0 {
		return org.Reply{}, fmt.Errorf("reply has an error and %d actions; a reply that says the agent failed carries none", len(r.Actions))
	}
	return r, nil
}

// strictReply decodes raw with encoding/json: unknown fields and trailing
// data are errors.
func strictReply(raw []byte) (org.Reply, error) {
	var r org.Reply
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return org.Reply{}, fmt.Errorf("malformed reply: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return org.Reply{}, fmt.Errorf("malformed reply: trailing data after the JSON object")
	}
	return r, nil
}

// fastReply decodes raw into *r with the fast decoder, and reports whether
// it read all of it. It reads a subset of what the strict encoding/json
// path above accepts — json.Marshal's own form: keys spelt as their tags,
// each once, plain numbers — and decodes it to the same value
// (FuzzParseReplyFast checks both on random input); anything else, errors
// included, is left to that path, which says what is wrong.
func fastReply(raw []byte, r *org.Reply) bool {
	d := replyDecoders.Get().(*fastjson.Decoder)
	defer replyDecoders.Put(d)
	d.Reset(raw)
	ok := d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "turn":
			return 1 << 0, d.Uint64(&r.Turn)
		case "actions":
			return 1 << 1, d.Array(func() { r.Actions = []org.Action{} }, func() bool {
				r.Actions = append(r.Actions, org.Action{})
				return len(r.Actions) <= org.MaxActions && payload.DecodeAction(d, &r.Actions[len(r.Actions)-1])
			})
		case "error":
			return 1 << 2, d.Str(&r.Error)
		}
		return 0, false
	})
	return d.End() && ok
}

var replyDecoders = sync.Pool{New: func() any { return new(fastjson.Decoder) }}

// AppendReply appends r's JSON to dst: exactly json.Marshal's bytes
// (observation_test.go checks this). An agent host encodes a reply every turn.
func AppendReply(dst []byte, r *org.Reply) []byte {
	dst = append(dst, `{"turn":`...)
	dst = strconv.AppendUint(dst, r.Turn, 10)
	dst = fastjson.AppendList(dst, `,"actions":`, r.Actions, func(a *org.Action, dst []byte) []byte {
		return payload.AppendAction(dst, a)
	})
	dst = fastjson.AppendKeyStringOmit(dst, `,"error":`, r.Error)
	return append(dst, '}')
}
