package worlds

import (
	"bytes"
	"crypto/sha256"
	"math"
	"testing"
)

// Unkeyed draws are splitmix64 of the seed and the label's FNV-1a hash, as
// every log of an unkeyed session was drawn (values pinned); keyed draws
// are another function of the key, the seed and the label, the same for
// the same three, uniform, and unlike the unkeyed ones.
func TestDraws(t *testing.T) {
	for _, c := range []struct {
		seed  uint64
		label string
		want  uint64
	}{{1, "availability/dev", 0xd72ee75bae2e74e2}, {7, "arrival/a/3", 0xf2bfa4d38c445aa8}, {0, "", 0x21fa69a58f3d62f5}} {
		d := NewDraws(c.seed, nil)
		if got := Draw(d, c.label); got != c.want || Draw(d, []byte(c.label)) != c.want || d.Keyed() {
			t.Errorf("unkeyed draw (%d, %q) = %#x, want %#x", c.seed, c.label, got, c.want)
		}
	}
	key := sha256.Sum256([]byte("a draw key"))
	other := sha256.Sum256([]byte("another"))
	k := NewDraws(7, key[:])
	if !k.Keyed() || k.Seed() != 7 {
		t.Fatalf("keyed draws: keyed %v, seed %d", k.Keyed(), k.Seed())
	}
	if Draw(k, "arrival/a/3") != Draw(NewDraws(7, key[:]), []byte("arrival/a/3")) {
		t.Fatal("the same key, seed and label drew two values")
	}
	for name, v := range map[string]uint64{ // order: each case is its own
		"unkeyed":       Draw(NewDraws(7, nil), "arrival/a/3"),
		"another seed":  Draw(NewDraws(8, key[:]), "arrival/a/3"),
		"another key":   Draw(NewDraws(7, other[:]), "arrival/a/3"),
		"another label": Draw(k, "arrival/a/4"),
	} {
		if v == Draw(k, "arrival/a/3") {
			t.Errorf("%s drew the keyed value", name)
		}
	}
	// Uniform enough: the mean and the top bit's share over many labels.
	const n = 20000
	sum, top := 0.0, 0
	label := []byte("busy/dev/0000")
	for i := range n {
		label[9], label[10], label[11], label[12] = byte('0'+i/1000%10), byte('0'+i/100%10), byte('0'+i/10%10), byte('0'+i%10)
		label[8] = byte('a' + i/10000)
		sum += k.Unit(string(label))
		if Draw(k, label)>>63 == 1 {
			top++
		}
	}
	if mean := sum / n; math.Abs(mean-0.5) > 0.01 || math.Abs(float64(top)/n-0.5) > 0.02 {
		t.Errorf("keyed draws: mean %.4f, top bit set in %d of %d", mean, top, n)
	}
	defer func() {
		if recover() == nil {
			t.Error("a draw key of 5 bytes was taken")
		}
	}()
	NewDraws(1, bytes.Repeat([]byte{1}, 5))
}
