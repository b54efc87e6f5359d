package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDrawKey(t *testing.T) {
	if NewDrawKey(nil, 7) != nil || NewDrawKey([]byte{}, 7) != nil {
		t.Fatal("an empty secret made a key")
	}
	k := NewDrawKey([]byte("s3cret"), 7)
	if len(k) != DrawKeyBytes {
		t.Fatalf("key of %d bytes, want %d", len(k), DrawKeyBytes)
	}
	if !bytes.Equal(k, NewDrawKey([]byte("s3cret"), 7)) {
		t.Fatal("the same secret and seed made two keys")
	}
	// Each input moves the key: another secret, another seed, and a
	// secret that differs only in where its bytes end (the length is
	// hashed in).
	for _, other := range [][]byte{NewDrawKey([]byte("s3cres"), 7), NewDrawKey([]byte("s3cret"), 8), NewDrawKey([]byte("s3cret\x00"), 7)} {
		if bytes.Equal(k, other) {
			t.Fatalf("two inputs made key %x", k)
		}
	}
	// The key goes through the log's JSON and back.
	b, err := json.Marshal(SessionStarted{Format: DrawKeyFormat, Seed: 7, DrawKey: k})
	if err != nil {
		t.Fatal(err)
	}
	var back SessionStarted
	if err := json.Unmarshal(b, &back); err != nil || !bytes.Equal(back.DrawKey, k) {
		t.Fatalf("after JSON (%s): key %x, err %v; want %x", b, back.DrawKey, err, k)
	}
	// Without a key the field is not written: an unkeyed session.started
	// is what format 7 wrote.
	if b, _ := json.Marshal(SessionStarted{Format: 7, Seed: 7}); strings.Contains(string(b), "draw_key") {
		t.Fatalf("unkeyed session.started %s names a draw key", b)
	}
}

func TestCheckFormatDrawKey(t *testing.T) {
	k := NewDrawKey([]byte("s3cret"), 7)
	for _, tt := range []struct {
		p    SessionStarted
		want string
	}{
		{SessionStarted{Format: DrawKeyFormat, Seed: 7, DrawKey: k}, ""},
		{SessionStarted{Format: DrawKeyFormat - 1, Seed: 7}, ""},
		{SessionStarted{Format: DrawKeyFormat - 1, Seed: 7, DrawKey: k}, "only format 8 and later carry one"},
		{SessionStarted{Format: DrawKeyFormat, Seed: 7, DrawKey: k[:5]}, "a draw key of 5 bytes"},
	} {
		err := tt.p.CheckFormat()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("format %d, key of %d bytes: %v", tt.p.Format, len(tt.p.DrawKey), err)
		case tt.want != "" && (!errors.Is(err, ErrLogFormat) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("format %d, key of %d bytes: got %v, want ErrLogFormat saying %q", tt.p.Format, len(tt.p.DrawKey), err, tt.want)
		}
	}
}
