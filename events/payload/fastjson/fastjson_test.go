package fastjson_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/events/payload/fastjson"
)

var tricky = []string{"", "t-1", "a\"b", `back\slash`, "<html>&", "tab\tnew\nline", "\x00\x1f", "é ü 日本", "\u2028\u2029", "bad\xffutf8", "emoji 🙂"}

var floats = []float64{0, 1, -1, 0.5, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, -2.5e-10, 123456789.125,
	math.Copysign(0, -1), math.SmallestNonzeroFloat64, math.MaxFloat64,
	// whole numbers, around the edges of AppendFloat's integer path
	2, 10, 300, 1500, 123456789, 1e15, 1<<53 - 1, 1 << 53, 1<<53 + 2, 1 << 62, 1 << 63, 1 << 64, 9.2233720368547758e18}

func mustSameString(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := fastjson.AppendString([]byte("x"), s); string(got) != "x"+string(want) {
		t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
	}
}

func mustSameFloat(t *testing.T, f float64) {
	t.Helper()
	want, err := json.Marshal(f)
	if err != nil {
		if fastjson.Finite(f) {
			t.Errorf("Finite(%v) but json.Marshal refuses it: %v", f, err)
		}
		return
	}
	if got := fastjson.AppendFloat([]byte("x"), f); string(got) != "x"+string(want) {
		t.Errorf("AppendFloat(%v) = %s, want x%s", f, got, want)
	}
}

func TestAppendLikeEncodingJSON(t *testing.T) {
	for _, s := range tricky {
		mustSameString(t, s)
	}
	for _, f := range floats {
		mustSameFloat(t, f)
		mustSameFloat(t, -f)
	}
	// Whole numbers of every magnitude, and their neighbours.
	r := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		n := float64(r.Int64() >> r.IntN(64))
		if r.IntN(2) == 0 {
			n = -n
		}
		mustSameFloat(t, n)
		mustSameFloat(t, math.Nextafter(n, math.Inf(1)))
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if fastjson.Finite(f) {
			t.Errorf("Finite(%v) is true", f)
		}
	}
}

// TestAppendStringEveryByte checks AppendString against encoding/json for
// every byte value, alone and amid plain text (the copy and the fallback).
func TestAppendStringEveryByte(t *testing.T) {
	for c := range 256 {
		b := string([]byte{byte(c)})
		mustSameString(t, b)
		mustSameString(t, "t-1"+b+"x")
	}
}

func FuzzAppend(f *testing.F) {
	for i, s := range tricky {
		f.Add(s, floats[i%len(floats)])
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		mustSameString(t, s)
		mustSameFloat(t, x)
	})
}

// prims is what the decoder's primitives read.
type prims struct {
	S string   `json:"s"`
	F float64  `json:"f"`
	I int64    `json:"i"`
	N int      `json:"n"`
	U uint64   `json:"u"`
	B bool     `json:"b"`
	L []string `json:"l"`
}

// decode reads data into a prims with a Decoder; ok is false when it does
// not read it.
func decode(data []byte) (p prims, ok bool) {
	var d fastjson.Decoder
	d.Reset(data)
	ok = d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "s":
			return 1 << 0, d.Str(&p.S)
		case "f":
			return 1 << 1, d.Float64(&p.F)
		case "i":
			return 1 << 2, d.Int64(&p.I)
		case "n":
			return 1 << 3, d.Int(&p.N)
		case "u":
			return 1 << 4, d.Uint64(&p.U)
		case "b":
			return 1 << 5, d.Bool(&p.B)
		case "l":
			return 1 << 6, d.Array(func() { p.L = []string{} }, func() bool {
				p.L = append(p.L, "")
				return d.Str(&p.L[len(p.L)-1])
			})
		}
		return 0, false
	})
	return p, d.End() && ok
}

// mustDecodeLikeJSON fails unless the Decoder agrees with json.Unmarshal
// whenever it reads data, and reports whether it did.
func mustDecodeLikeJSON(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := decode(data)
	if !ok {
		return false
	}
	var want prims
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("the Decoder read %q, which json.Unmarshal refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoding %q:\n got %#v\nwant %#v", data, got, want)
	}
	return true
}

func TestDecoderLikeEncodingJSON(t *testing.T) {
	read := []string{
		`{}`, `null`, ` { "s" : "a\"b\u00e9" , "f" : -1.5e-7 } `, `{"i":-9223372036854775808,"u":18446744073709551615,"n":7}`,
		`{"b":true,"l":["x",null,""]}`, `{"l":[]}`, `{"l":null,"s":null,"b":false}`, "{\"s\":\"bad\xffutf8\"}", `{"f":1E+2}`,
	}
	for _, in := range read {
		if !mustDecodeLikeJSON(t, []byte(in)) {
			t.Errorf("the Decoder does not read %s", in)
		}
	}
	refused := []string{
		`{"S":"a"}`, `{"s":"a","s":"b"}`, `{"x":1}`, `{"i":1.5}`, `{"i":1e2}`, `{"u":-1}`, `{"i":9223372036854775808}`,
		`{"f":1e400}`, `{"f":.5}`, `{"f":01}`, `{"b":1}`, `{"s":5}`, `{"l":"x"}`, `{"s":"a"`, `{"s":"a"} x`, `{"s":"a",}`,
		"{\"s\":\"a\nb\"}", ``, `[]`,
	}
	for _, in := range refused {
		if mustDecodeLikeJSON(t, []byte(in)) {
			t.Errorf("the Decoder read %s, which it should leave to encoding/json", in)
		}
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add([]byte(`{"s":"a","f":1.5,"i":-3,"n":2,"u":4,"b":true,"l":["x"]}`))
	f.Add([]byte(`{"s":"\u00e9\n","l":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		mustDecodeLikeJSON(t, data)
	})
}

// FuzzRaw checks that Raw reads exactly the values encoding/json's scanner
// accepts (nested at most 10,000 deep) and keeps their bytes as
// json.RawMessage does.
func FuzzRaw(f *testing.F) {
	f.Add([]byte(` {"a":[1,-0.5e+3,"\u00e9\n",true,false,null,{}],"b":[]} `))
	f.Add([]byte(`"x` + "\xff" + `"`))
	f.Add([]byte(`[01]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d fastjson.Decoder
		d.Reset(data)
		var raw []byte
		read := d.Raw(&raw, 0) && d.End()
		valid := json.Valid(data)
		if read != valid {
			t.Fatalf("Raw read %q: %v; json.Valid: %v", data, read, valid)
		}
		if !read {
			return
		}
		var want json.RawMessage
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, want) {
			t.Fatalf("Raw kept %q of %q, json.RawMessage %q", raw, data, want)
		}
	})
}
