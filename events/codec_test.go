package events_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/events"
)

var testKey = [32]byte{'k', 'e', 'y'}

// codecCases are events covering the extremes of every field.
func codecCases() []struct {
	name string
	e    events.Event
} {
	return []struct {
		name string
		e    events.Event
	}{
		{"minimal", events.Event{ID: events.NewID(testKey, 0, 0, 1), Seq: 1, Type: "x"}},
		{"zero", events.Event{}},
		{"typical", events.Event{
			ID:      events.NewID(testKey, 1_700_000_000_000, 3_600_000, 42),
			Seq:     42,
			Time:    3_600_000,
			Type:    "task.claimed",
			Actor:   "alice",
			Cause:   41,
			Payload: json.RawMessage(`{"task":"t-17","note":"héllo"}`),
		}},
		{"negative time", events.Event{ID: events.NewID(testKey, 0, -5, 2), Seq: 2, Time: -5, Type: "t"}},
		{"extreme numbers", events.Event{
			ID:    ulid.ULID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			Seq:   math.MaxUint64,
			Time:  math.MinInt64,
			Type:  "t",
			Cause: math.MaxUint64 - 1,
		}},
		{"max time", events.Event{Seq: 128, Time: math.MaxInt64, Cause: 127, Type: "t"}},
		{"long strings", events.Event{
			Seq:     300,
			Type:    strings.Repeat("t", 200),
			Actor:   strings.Repeat("a", 1000),
			Payload: json.RawMessage(`{"b":"` + strings.Repeat("x", 70000) + `"}`),
		}},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, tt := range codecCases() {
		t.Run(tt.name, func(t *testing.T) {
			b := events.Encode(&tt.e)
			if got, want := len(b), events.EncodedLen(&tt.e); got != want {
				t.Fatalf("len(Encode): got %d, want EncodedLen %d", got, want)
			}
			var got events.Event
			if err := events.Decode(b, &got); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.e) {
				t.Fatalf("Decode(Encode(e)):\ngot  %+v\nwant %+v", got, tt.e)
			}
			if again := events.Encode(&got); !bytes.Equal(again, b) {
				t.Fatalf("Encode(Decode(b)):\ngot  %x\nwant %x", again, b)
			}
			prefix := []byte("prefix")
			if app := events.AppendEncode(bytes.Clone(prefix), &tt.e); !bytes.Equal(app, append(prefix, b...)) {
				t.Fatalf("AppendEncode(prefix, e): got %x, want prefix followed by Encode(e)", app)
			}
		})
	}
}

func TestEncodeIgnoresSession(t *testing.T) {
	e := codecCases()[2].e
	a := events.Encode(&e)
	e.Session = "s1"
	if b := events.Encode(&e); !bytes.Equal(a, b) {
		t.Fatalf("Encode with Session set: got %x, want %x", b, a)
	}
	var got events.Event
	got.Session = "stale"
	if err := events.Decode(a, &got); err != nil {
		t.Fatal(err)
	}
	if got.Session != "" {
		t.Fatalf("Decode: got Session %q, want it reset to \"\"", got.Session)
	}
}

// TestEncodeGolden pins the byte format: changing it needs a new Version.
func TestEncodeGolden(t *testing.T) {
	e := events.Event{
		ID:      ulid.ULID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		Seq:     300,
		Time:    -2,
		Cause:   1,
		Type:    "a.b",
		Actor:   "m",
		Payload: json.RawMessage(`{}`),
	}
	const want = "01" + "000102030405060708090a0b0c0d0e0f" + "ac02" + "03" + "01" +
		"03612e62" + "016d" + "027b7d"
	body, _ := hex.DecodeString(want)
	sum := binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	if got := hex.EncodeToString(events.Encode(&e)); got != want+hex.EncodeToString(sum) {
		t.Fatalf("Encode:\ngot  %s\nwant %s", got, want+hex.EncodeToString(sum))
	}
}

func TestAppendEncodeAllocs(t *testing.T) {
	e := codecCases()[2].e
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = events.AppendEncode(buf[:0], &e) }); n != 0 {
		t.Fatalf("AppendEncode with spare capacity: got %v allocs, want 0", n)
	}
}

func TestDecodePayloadDoesNotAlias(t *testing.T) {
	e := codecCases()[2].e
	b := events.Encode(&e)
	var got events.Event
	if err := events.Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if !bytes.Equal(got.Payload, e.Payload) {
		t.Fatalf("Payload after zeroing the input: got %q, want %q", got.Payload, e.Payload)
	}
}

func TestDecodeErrors(t *testing.T) {
	valid := events.Encode(&codecCases()[2].e)
	// reseal recomputes the checksum of a modified body.
	reseal := func(body []byte) []byte {
		return binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	}
	body := valid[:len(valid)-4]
	fixed := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // version + zero ID
	tests := []struct {
		name   string
		b      []byte
		reason string
	}{
		{"nil", nil, "events: corrupt event: truncated: 0 bytes, need at least 27"},
		{"short", valid[:26], "events: corrupt event: truncated: 26 bytes"},
		{"unknown version", append([]byte{7}, valid[1:]...), "events: corrupt event: unknown version 7"},
		{"checksum", append(bytes.Clone(body), 0, 0, 0, 0), "events: corrupt event: checksum mismatch"},
		{"trailing byte", reseal(append(bytes.Clone(body), 0)), "events: corrupt event: 1 trailing bytes"},
		{"non-minimal seq", reseal(append(bytes.Clone(fixed), 0x81, 0x00, 0, 0, 0, 0, 0)), "non-minimal varint in seq"},
		{"non-minimal time", reseal(append(bytes.Clone(fixed), 1, 0x80, 0x00, 0, 0, 0, 0)), "non-minimal varint in time"},
		{"seq overflow", reseal(append(bytes.Clone(fixed), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0)), "seq overflows 64 bits"},
		{"type length past end", reseal(append(bytes.Clone(fixed), 1, 0, 0, 9, 0, 0)), "truncated in type: length 9, 2 bytes left"},
		{"huge payload length", reseal(append(bytes.Clone(fixed), 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)), "truncated in payload"},
		{"missing actor", reseal(append(bytes.Clone(fixed), 1, 0, 0, 0, 0x80, 0x80, 0x80)), "truncated in actor length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e events.Event
			e.Type = "unchanged"
			err := events.Decode(tt.b, &e)
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("Decode: got error %v, want one wrapping ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Decode: got error %q, want it to contain %q", err, tt.reason)
			}
			if e.Type != "unchanged" {
				t.Fatalf("Decode error left Type %q, want the event unchanged", e.Type)
			}
		})
	}
}

// TestDecodeDetectsEveryBitFlip flips each bit of encoded events in turn.
func TestDecodeDetectsEveryBitFlip(t *testing.T) {
	for _, tt := range codecCases() {
		if len(tt.e.Payload) > 1000 {
			continue // the bit count makes this slow without adding coverage
		}
		t.Run(tt.name, func(t *testing.T) {
			b := events.Encode(&tt.e)
			for i := range 8 * len(b) {
				b[i/8] ^= 1 << (i % 8)
				var e events.Event
				if err := events.Decode(b, &e); !errors.Is(err, events.ErrCorrupt) {
					t.Fatalf("Decode with bit %d flipped: got %v, want an error wrapping ErrCorrupt", i, err)
				}
				b[i/8] ^= 1 << (i % 8)
			}
		})
	}
}

func TestDecodeDetectsEveryTruncation(t *testing.T) {
	for _, tt := range codecCases() {
		t.Run(tt.name, func(t *testing.T) {
			b := events.Encode(&tt.e)
			for n := range len(b) {
				var e events.Event
				if err := events.Decode(b[:n], &e); !errors.Is(err, events.ErrCorrupt) {
					t.Fatalf("Decode of the first %d of %d bytes: got %v, want an error wrapping ErrCorrupt", n, len(b), err)
				}
				// Dropping a prefix must fail too.
				if err := events.Decode(b[len(b)-n:], &e); !errors.Is(err, events.ErrCorrupt) {
					t.Fatalf("Decode of the last %d of %d bytes: got %v, want an error wrapping ErrCorrupt", n, len(b), err)
				}
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, tt := range codecCases() {
		f.Add(events.Encode(&tt.e))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e events.Event
		if err := events.Decode(b, &e); err != nil {
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("Decode: got error %v, want one wrapping ErrCorrupt", err)
			}
			return
		}
		if got := events.Encode(&e); !bytes.Equal(got, b) {
			t.Fatalf("Encode(Decode(b)) != b:\ngot  %x\nwant %x", got, b)
		}
	})
}

// FuzzDecodeBody fuzzes the field parsing behind the checksum: it seals
// arbitrary bytes with a valid checksum before decoding them.
func FuzzDecodeBody(f *testing.F) {
	for _, tt := range codecCases() {
		b := events.Encode(&tt.e)
		f.Add(b[:len(b)-4])
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, table))
		var e events.Event
		if err := events.Decode(b, &e); err != nil {
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("Decode: got error %v, want one wrapping ErrCorrupt", err)
			}
			return
		}
		if got := events.Encode(&e); !bytes.Equal(got, b) {
			t.Fatalf("Encode(Decode(b)) != b:\ngot  %x\nwant %x", got, b)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	e := codecCases()[2].e
	e.Payload = json.RawMessage(`{"text":"` + strings.Repeat("x", 190) + `"}`)
	buf := make([]byte, 0, 512)
	b.SetBytes(int64(events.EncodedLen(&e)))
	for b.Loop() {
		buf = events.AppendEncode(buf[:0], &e)
	}
}

func BenchmarkDecode(b *testing.B) {
	e := codecCases()[2].e
	e.Payload = json.RawMessage(`{"text":"` + strings.Repeat("x", 190) + `"}`)
	enc := events.Encode(&e)
	b.SetBytes(int64(len(enc)))
	var out events.Event
	for b.Loop() {
		if err := events.Decode(enc, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeBorrowed checks DecodeBorrowed against Decode on the same
// bytes, raw and sealed with a valid checksum: the same event or the same
// error, a Payload that aliases the input instead of copying it, and
// interned strings that stay right when one Decoder reads many events.
func FuzzDecodeBorrowed(f *testing.F) {
	for _, tt := range codecCases() {
		f.Add(events.Encode(&tt.e))
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	var dec events.Decoder // shared across inputs, as in a long scan
	f.Fuzz(func(t *testing.T, b []byte) {
		sealed := binary.BigEndian.AppendUint32(bytes.Clone(b), crc32.Checksum(b, table))
		for _, in := range [][]byte{b, sealed} {
			var want, got events.Event
			wantErr := events.Decode(in, &want)
			gotErr := dec.DecodeBorrowed(in, &got)
			if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Fatalf("input %x: Decode error %v, DecodeBorrowed error %v", in, wantErr, gotErr)
			}
			if wantErr != nil {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("input %x: DecodeBorrowed %+v, Decode %+v", in, got, want)
			}
			if len(got.Payload) > 0 && &got.Payload[0] != &in[len(in)-4-len(got.Payload)] {
				t.Fatalf("input %x: the borrowed payload does not alias the input", in)
			}
			if enc := events.Encode(&got); !bytes.Equal(enc, in) {
				t.Fatalf("Encode(DecodeBorrowed(b)) != b:\ngot  %x\nwant %x", enc, in)
			}
		}
	})
}

func TestDecodeBorrowed(t *testing.T) {
	var dec events.Decoder
	for _, tt := range codecCases() {
		t.Run(tt.name, func(t *testing.T) {
			b := events.Encode(&tt.e)
			var got events.Event
			if err := dec.DecodeBorrowed(b, &got); err != nil {
				t.Fatal(err)
			}
			want := tt.e
			want.Session = ""
			if len(want.Payload) == 0 {
				want.Payload = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			if len(got.Payload) > 0 && cap(got.Payload) != len(got.Payload) {
				t.Fatalf("borrowed payload: cap %d, want its length %d (an append must not write into the input)", cap(got.Payload), len(got.Payload))
			}
			// The payload is borrowed: it shows what happens to the input.
			// Type and Actor are not: they stay whatever happens to it.
			for i := range b {
				b[i] = 'Z'
			}
			if len(got.Payload) > 0 && got.Payload[0] != 'Z' {
				t.Fatalf("payload after overwriting the input: got %q, want it to alias the input", got.Payload)
			}
			if got.Type != want.Type || got.Actor != want.Actor {
				t.Fatalf("type and actor after overwriting the input: got %q %q, want %q %q", got.Type, got.Actor, want.Type, want.Actor)
			}
		})
	}
	// Once the Decoder knows the type and actor, decoding allocates nothing.
	e := codecCases()[2].e
	b := events.Encode(&e)
	var got events.Event
	if n := testing.AllocsPerRun(100, func() { _ = dec.DecodeBorrowed(b, &got) }); n != 0 {
		t.Fatalf("DecodeBorrowed of a known type and actor: got %v allocs, want 0", n)
	}
}

func BenchmarkDecodeBorrowed(b *testing.B) {
	e := codecCases()[2].e
	e.Payload = json.RawMessage(`{"text":"` + strings.Repeat("x", 190) + `"}`)
	enc := events.Encode(&e)
	b.SetBytes(int64(len(enc)))
	var dec events.Decoder
	var out events.Event
	for b.Loop() {
		if err := dec.DecodeBorrowed(enc, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecoderInterning decodes events whose types and actors collide in
// the Decoder's caches and overflow its map: every string must still be
// the event's own.
func TestDecoderInterning(t *testing.T) {
	var dec events.Decoder
	for round := range 3 {
		for i := range 5000 {
			e := events.Event{Seq: uint64(i + 1), Type: fmt.Sprintf("t%d", i%700), Actor: strings.Repeat("a", i%90) + fmt.Sprint(i%13)}
			var got events.Event
			if err := dec.DecodeBorrowed(events.Encode(&e), &got); err != nil {
				t.Fatal(err)
			}
			if got.Type != e.Type || got.Actor != e.Actor {
				t.Fatalf("round %d, event %d: got type %q actor %q, want %q %q", round, i, got.Type, got.Actor, e.Type, e.Actor)
			}
		}
	}
}
