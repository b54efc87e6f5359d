package httpgw

import (
	"net/http/httptest"
	"testing"
	"time"
)

// waitParam bounds every wait by most: seconds too many for a Duration
// overflowed to a negative one and were refused as negative.
func TestWaitParamBounds(t *testing.T) {
	most := 50 * time.Second
	for v, want := range map[string]time.Duration{"": 3 * time.Second, "2": 2 * time.Second, "1.5": 1500 * time.Millisecond, "30s": 30 * time.Second,
		"100h": most, "1e10": most, "1e400": most, "Inf": most, "%2BInf": most} {
		got, err := waitParam(httptest.NewRequest("GET", "/?wait="+v, nil), 3*time.Second, most)
		if err != nil || got != want {
			t.Errorf("wait=%s: %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"NaN", "-1", "-Inf", "-1e400", "soon"} {
		if got, err := waitParam(httptest.NewRequest("GET", "/?wait="+v, nil), 3*time.Second, most); err == nil {
			t.Errorf("wait=%s: %v, no error", v, got)
		}
	}
}

// statedTurn reads the turn a malformed reply names, also when it is a
// whole number written as a float: a stale retry {"turn":1.0} used up the
// waiting turn, where one naming another turn uses up nothing.
func TestStatedTurn(t *testing.T) {
	for body, want := range map[string]uint64{`{"turn":4,"actions":[x]}`: 4, `{"turn": 1.0}`: 1, `{"turn":4e0,`: 4, `{"turn":6.00}`: 6} {
		if got, ok := statedTurn([]byte(body)); !ok || got != want {
			t.Errorf("%s: %d %v, want %d", body, got, ok, want)
		}
	}
	for _, body := range []string{`{"turn":1.5}`, `{"turn":-1}`, `{"turn":0.0}`, `{"turn":"4"}`, `{"actions":[]}`, `{"turn":1e300}`} {
		if got, ok := statedTurn([]byte(body)); ok {
			t.Errorf("%s: %d, want none", body, got)
		}
	}
}
