package events_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
)

func checkpointCases() []struct {
	name string
	cp   events.Checkpoint
} {
	return []struct {
		name string
		cp   events.Checkpoint
	}{
		{"minimal", events.Checkpoint{Seq: 1, StateHash: "00"}},
		{"zero", events.Checkpoint{}},
		{"typical", events.Checkpoint{Seq: 1000, StateHash: strings.Repeat("0f", 32), Data: []byte(`{"members":3}`)}},
		{"binary data", events.Checkpoint{Seq: math.MaxUint64, StateHash: "ab", Data: []byte{0, 0xff, 1, 0x80}}},
		{"large", events.Checkpoint{Seq: 1 << 20, StateHash: strings.Repeat("a", 128), Data: bytes.Repeat([]byte("x"), 70000)}},
	}
}

func TestCheckpointCodecRoundTrip(t *testing.T) {
	for _, tt := range checkpointCases() {
		t.Run(tt.name, func(t *testing.T) {
			b := events.EncodeCheckpoint(&tt.cp)
			if len(b) != events.EncodedCheckpointLen(&tt.cp) {
				t.Fatalf("EncodedCheckpointLen: got %d, want %d", events.EncodedCheckpointLen(&tt.cp), len(b))
			}
			var got events.Checkpoint
			if err := events.DecodeCheckpoint(b, &got); err != nil {
				t.Fatalf("DecodeCheckpoint: %v", err)
			}
			if !reflect.DeepEqual(got, tt.cp) {
				t.Fatalf("DecodeCheckpoint: got %+v, want %+v", got, tt.cp)
			}
			var h events.Checkpoint
			if err := events.DecodeCheckpointHeader(b, &h); err != nil {
				t.Fatalf("DecodeCheckpointHeader: %v", err)
			}
			if want := (events.Checkpoint{Seq: tt.cp.Seq, StateHash: tt.cp.StateHash}); !reflect.DeepEqual(h, want) {
				t.Fatalf("DecodeCheckpointHeader: got %+v, want %+v", h, want)
			}
			if len(tt.cp.Data) > 0 {
				b[len(b)-5] ^= 0xff // last data byte: Data does not alias b
				if !reflect.DeepEqual(got, tt.cp) {
					t.Fatal("decoded Data changed with the input")
				}
			}
		})
	}
}

// TestCheckpointGolden pins the byte format: changing it needs a new
// CheckpointVersion.
func TestCheckpointGolden(t *testing.T) {
	cp := events.Checkpoint{Seq: 300, StateHash: "ab", Data: []byte("xy")}
	const want = "c1" + "ac02" + "02" + "6162" + "7879"
	body, _ := hex.DecodeString(want)
	sum := binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	if got := hex.EncodeToString(events.EncodeCheckpoint(&cp)); got != want+hex.EncodeToString(sum) {
		t.Fatalf("EncodeCheckpoint:\ngot  %s\nwant %s", got, want+hex.EncodeToString(sum))
	}
}

func TestDecodeCheckpointErrors(t *testing.T) {
	valid := events.EncodeCheckpoint(&checkpointCases()[2].cp)
	reseal := func(body []byte) []byte {
		return binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	}
	body := valid[:len(valid)-4]
	tests := []struct {
		name   string
		b      []byte
		reason string
	}{
		{"nil", nil, "truncated checkpoint: 0 bytes, need at least 7"},
		{"short", valid[:6], "truncated checkpoint: 6 bytes"},
		{"unknown version", append([]byte{2}, valid[1:]...), "unknown checkpoint version 2"},
		{"zero version", reseal([]byte{0, 1, 0}), "unknown checkpoint version 0"},
		{"an event", events.Encode(&codecCases()[0].e), "unknown checkpoint version 1"},
		{"checksum", append(bytes.Clone(body), 0, 0, 0, 0), "checkpoint checksum mismatch"},
		{"non-minimal seq", reseal([]byte{0xc1, 0x81, 0x00, 0}), "non-minimal varint in checkpoint seq"},
		{"hash length past end", reseal([]byte{0xc1, 1, 9, 'a'}), "truncated in checkpoint state hash: length 9, 1 bytes left"},
		{"missing hash length", reseal([]byte{0xc1, 1, 0x80}), "truncated in checkpoint state hash length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := events.Checkpoint{StateHash: "unchanged"}
			err := events.DecodeCheckpoint(tt.b, &cp)
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("DecodeCheckpoint: got error %v, want one wrapping ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("DecodeCheckpoint: got error %q, want it to contain %q", err, tt.reason)
			}
			if cp.StateHash != "unchanged" {
				t.Fatalf("DecodeCheckpoint error left StateHash %q, want the checkpoint unchanged", cp.StateHash)
			}
		})
	}
}

// TestCheckpointIsNotAnEvent checks that the event codec rejects a stored
// checkpoint: the two formats have different version bytes.
func TestCheckpointIsNotAnEvent(t *testing.T) {
	for _, tt := range checkpointCases() {
		var e events.Event
		if err := events.Decode(events.EncodeCheckpoint(&tt.cp), &e); !errors.Is(err, events.ErrCorrupt) {
			t.Fatalf("%s: Decode of a checkpoint: got %v, want an error wrapping ErrCorrupt", tt.name, err)
		}
	}
}

func TestDecodeCheckpointDetectsDamage(t *testing.T) {
	for _, tt := range checkpointCases() {
		if len(tt.cp.Data) > 1000 {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			b := events.EncodeCheckpoint(&tt.cp)
			var cp events.Checkpoint
			for i := range 8 * len(b) {
				b[i/8] ^= 1 << (i % 8)
				if err := events.DecodeCheckpoint(b, &cp); !errors.Is(err, events.ErrCorrupt) {
					t.Fatalf("DecodeCheckpoint with bit %d flipped: got %v, want an error wrapping ErrCorrupt", i, err)
				}
				b[i/8] ^= 1 << (i % 8)
			}
			for n := range len(b) {
				if err := events.DecodeCheckpoint(b[:n], &cp); !errors.Is(err, events.ErrCorrupt) {
					t.Fatalf("DecodeCheckpoint of the first %d of %d bytes: got %v, want an error wrapping ErrCorrupt", n, len(b), err)
				}
			}
		})
	}
}

func TestCheckpointValidate(t *testing.T) {
	hash := strings.Repeat("9f", 32)
	tests := []struct {
		name string
		cp   events.Checkpoint
		ok   bool
	}{
		{"valid", events.Checkpoint{Seq: 1, StateHash: hash}, true},
		{"shortest hash", events.Checkpoint{Seq: 1, StateHash: "00"}, true},
		{"longest hash", events.Checkpoint{Seq: math.MaxUint64, StateHash: strings.Repeat("a", events.MaxStateHashLen)}, true},
		{"seq zero", events.Checkpoint{StateHash: hash}, false},
		{"empty hash", events.Checkpoint{Seq: 1}, false},
		{"odd hash", events.Checkpoint{Seq: 1, StateHash: "abc"}, false},
		{"uppercase hash", events.Checkpoint{Seq: 1, StateHash: "AB"}, false},
		{"non-hex hash", events.Checkpoint{Seq: 1, StateHash: "xy"}, false},
		{"hash too long", events.Checkpoint{Seq: 1, StateHash: strings.Repeat("a", events.MaxStateHashLen+2)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cp.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate: got %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, events.ErrBadCheckpoint) {
				t.Fatalf("Validate: got %v, want an error wrapping ErrBadCheckpoint", err)
			}
		})
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	for _, tt := range checkpointCases() {
		f.Add(events.EncodeCheckpoint(&tt.cp))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var cp events.Checkpoint
		if err := events.DecodeCheckpoint(b, &cp); err != nil {
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("DecodeCheckpoint: got error %v, want one wrapping ErrCorrupt", err)
			}
			return
		}
		if got := events.EncodeCheckpoint(&cp); !bytes.Equal(got, b) {
			t.Fatalf("EncodeCheckpoint(DecodeCheckpoint(b)) != b:\ngot  %x\nwant %x", got, b)
		}
	})
}

// FuzzDecodeCheckpointBody fuzzes the field parsing behind the checksum.
func FuzzDecodeCheckpointBody(f *testing.F) {
	for _, tt := range checkpointCases() {
		b := events.EncodeCheckpoint(&tt.cp)
		f.Add(b[:len(b)-4])
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, table))
		var cp events.Checkpoint
		if err := events.DecodeCheckpoint(b, &cp); err != nil {
			if !errors.Is(err, events.ErrCorrupt) {
				t.Fatalf("DecodeCheckpoint: got error %v, want one wrapping ErrCorrupt", err)
			}
			return
		}
		if got := events.EncodeCheckpoint(&cp); !bytes.Equal(got, b) {
			t.Fatalf("EncodeCheckpoint(DecodeCheckpoint(b)) != b:\ngot  %x\nwant %x", got, b)
		}
	})
}
