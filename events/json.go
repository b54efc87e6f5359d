package events

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the JSON form of e (as MarshalJSON writes it) to dst.
// It is the fast path of the event feed: the payload, already JSON, is
// copied as it is instead of being validated and compacted again, so for a
// compact payload (what json.Marshal produces) the bytes equal MarshalJSON's.
// Strings that need escaping fall back to encoding/json.
func AppendJSON(dst []byte, e *Event) []byte {
	if !plain(e.Session) || !plain(e.Type) || !plain(e.Actor) {
		b, err := e.MarshalJSON()
		if err != nil {
			return append(dst, `{}`...)
		}
		return append(dst, b...)
	}
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.ID.String()...)
	dst = append(dst, `","session":"`...)
	dst = append(dst, e.Session...)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, e.Type...)
	dst = append(dst, '"')
	if e.Actor != "" {
		dst = append(dst, `,"actor":"`...)
		dst = append(dst, e.Actor...)
		dst = append(dst, '"')
	}
	if e.Cause != 0 {
		dst = append(dst, `,"cause":`...)
		dst = strconv.AppendUint(dst, e.Cause, 10)
	}
	if len(e.Payload) > 0 {
		dst = append(dst, `,"payload":`...)
		dst = append(dst, e.Payload...)
	}
	return append(dst, '}')
}

// plain reports whether s can be written in JSON quotes as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
