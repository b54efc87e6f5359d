// Package fastjson writes and reads JSON exactly as encoding/json does, for
// the few shapes the hot paths carry, without reflection: the primitives of
// the event payload codecs (events/payload) and of the agent protocol's
// observation and reply codecs (agents/wire).
//
// Writing: AppendString and AppendFloat give encoding/json's bytes for a
// string and a finite float; the Append* helpers write a key and a value.
//
//	dst = append(dst, `{"task":`...)
//	dst = fastjson.AppendString(dst, task)
//	dst = fastjson.AppendKeyInt(dst, `,"busy_until":`, until)
//	dst = append(dst, '}')
//
// Reading: a Decoder reads what json.Marshal writes (whitespace aside), and
// fails on anything else, so that its caller can fall back to encoding/json
// and always get json.Unmarshal's result:
//
//	d.Reset(data)
//	ok := d.Object(func(key []byte) (uint32, bool) {
//		switch string(key) {
//		case "task":
//			return 1 << 0, d.Str(&p.Task)
//		}
//		return 0, false // an unknown key: fall back
//	})
//	ok = d.End() && ok
//
// The package is pure: no I/O, no clock, no randomness, no map iteration.
package fastjson
