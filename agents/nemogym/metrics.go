package nemogym

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NeMo Gym's resources servers also answer two routes that hold no
// session: /aggregate_metrics, which its rollout collection calls (through
// simple_agent or gymnasium_agent, which forward it to the resources
// server) once every rollout is verified, and /reverify_mode, which `gym
// eval reverify` asks before it verifies stored rollouts again. Without
// them a collection against corpsim failed at its last step.

// The keys NeMo Gym gives a rollout's task and its place among the task's
// rollouts (nemo_gym.global_config).
const (
	taskIndexKey    = "_ng_task_index"
	rolloutIndexKey = "_ng_rollout_index"
)

// ReverifyMode is what GET /nemo/reverify_mode answers: "unsupported".
// verify reads the session's state, which a stored rollout's reply does not
// carry: verifying it again against another session would score another
// episode.
const ReverifyMode = "unsupported"

func (s *Server) handleReverifyMode(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, ReverifyMode)
}

// The bounds of /aggregate_metrics, a route anyone who reaches the server
// may call: its body (Config.MaxAggregateBytes), the replies it may hold,
// the distinct numeric fields among them and the numeric values of all of
// them (Config.MaxAggregateValues). The body is read as a stream: a reply takes a few dozen bytes once
// read and 24 more a numeric value, whatever its size in the body, and one
// aggregate is computed at a time. (Before the bound of values, a body of
// 150,000 replies of 256 short fields each took 2 GB.)
const (
	DefaultMaxAggregateBytes  = 256 << 20 // a collection of ~400,000 corpsim rollouts
	MaxAggregateReplies       = 1 << 20
	MaxAggregateFields        = 256
	DefaultMaxAggregateValues = 8 << 20 // ~200 MiB once read; a corpsim rollout has about ten
)

// handleAggregate answers /aggregate_metrics: the body is NeMo Gym's
// AggregateMetricsRequest ({"verify_responses": [...]}: verify's replies,
// stripped of their response but its usage, each with its task and rollout
// index); the reply is its AggregateMetrics as NeMo Gym's default
// RewardProfiler makes it: for every numeric field of the replies (true
// counts 1; a usage's counts merged in, over a field of the same name), its
// mean, max, min, median and sample standard deviation, keyed
// "stat/field", over each task's replies (group_level_metrics, by task
// index, with rollout_infos) and over all (agent_metrics); key_metrics are
// agent_metrics' means.
func (s *Server) handleAggregate(w http.ResponseWriter, r *http.Request) {
	wait := time.NewTimer(aggregateWait)
	defer wait.Stop()
	select {
	case s.aggregating <- struct{}{}:
		defer func() { <-s.aggregating }()
	case <-wait.C:
		w.Header().Set("Retry-After", "5")
		s.fail(w, http.StatusServiceUnavailable, CodeCapacity, "aggregate_metrics: another aggregate is under way; try again")
		return
	case <-r.Context().Done():
		return
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxAggregateBytes)
	a, err := readAggregate(r.Context(), bufio.NewReaderSize(body, 64<<10), s.cfg.MaxAggregateValues)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.fail(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("aggregate_metrics: the body is over this server's limit of %d bytes", s.cfg.MaxAggregateBytes))
		return
	case err != nil && (r.Context().Err() != nil || errors.Is(err, os.ErrDeadlineExceeded)):
		// The body did not arrive: the read timed out, or the client went away.
		s.fail(w, http.StatusBadRequest, CodeDisconnected, "aggregate_metrics: reading the body: "+err.Error())
		return
	case err != nil:
		s.fail(w, http.StatusUnprocessableEntity, CodeBadRequest, "aggregate_metrics: "+err.Error())
		return
	}
	// The answer may be large; a client that does not read it holds the
	// one aggregate slot no longer than this.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(aggregateWrite))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	out := bufio.NewWriterSize(w, 64<<10)
	a.write(out)
	_ = out.Flush()
}

// aggregateWait is how long an aggregate waits for the one under way;
// aggregateWrite bounds the writing of its answer.
const (
	aggregateWait  = 10 * time.Second
	aggregateWrite = time.Minute
)

// maxDepth bounds the nesting of a value read past (the JSON decoder
// keeps a word for each level open): Python's own parser stops near it.
const maxDepth = 1000

// aggregate is what /aggregate_metrics read: the replies, each its indexes
// and numeric fields (by number: names holds them).
type aggregate struct {
	names   []string
	number  map[string]int
	replies []reply
	values  int // the numeric fields of all the replies
}

type reply struct {
	task, index int64
	fields      []field
}

type field struct {
	name int
	v    float64
}

// readAggregate reads an AggregateMetricsRequest from r, a token at a time.
func readAggregate(ctx context.Context, r io.Reader, maxValues int) (*aggregate, error) {
	a := &aggregate{number: map[string]int{}}
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{', "the body"); err != nil {
		return nil, err
	}
	for dec.More() {
		k, err := key(dec)
		if err != nil {
			return nil, err
		}
		if k != "verify_responses" {
			if _, _, err := scalar(dec); err != nil {
				return nil, err
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		a.replies = a.replies[:0] // a key given twice: the last one counts, as in Python
		if tok == nil {
			continue
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, fmt.Errorf(`"verify_responses" is not a list`)
		}
		for dec.More() {
			if len(a.replies) >= MaxAggregateReplies {
				return nil, fmt.Errorf("more than %d verify responses", MaxAggregateReplies)
			}
			if len(a.replies)%4096 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rp, err := a.readReply(dec)
			if err != nil {
				return nil, fmt.Errorf("verify response %d: %w", len(a.replies), err)
			}
			if a.values += len(rp.fields); a.values > maxValues {
				return nil, fmt.Errorf("more than %d numeric values in all the verify responses", maxValues)
			}
			a.replies = append(a.replies, rp)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return a, nil
}

// readReply reads one verify reply (null reads as {}).
func (a *aggregate) readReply(dec *json.Decoder) (reply, error) {
	var rp reply
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return rp, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return rp, fmt.Errorf("not a JSON object")
	}
	var usage []field
	for dec.More() {
		k, err := key(dec)
		if err != nil {
			return rp, err
		}
		switch k {
		case taskIndexKey, rolloutIndexKey:
			v, ok, err := scalar(dec)
			if err != nil {
				return rp, err
			}
			if !ok || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
				return rp, fmt.Errorf("%q is not an integer", k)
			}
			if k == taskIndexKey {
				rp.task = int64(v)
			} else {
				rp.index = int64(v)
			}
		case "response":
			if usage, err = a.readUsage(dec, usage[:0]); err != nil { // the last response counts
				return rp, err
			}
		default:
			v, ok, err := scalar(dec)
			if err != nil {
				return rp, err
			}
			if ok {
				if rp.fields, err = a.set(rp.fields, k, v); err != nil {
					return rp, err
				}
			}
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return rp, err
	}
	for _, f := range usage { // NeMo Gym merges the usage over the reply's fields
		rp.fields = put(rp.fields, f)
	}
	return rp, nil
}

// readUsage reads a reply's response, keeping the numbers of its usage.
func (a *aggregate) readUsage(dec *json.Decoder, usage []field) ([]field, error) {
	tok, err := dec.Token()
	if err != nil {
		return usage, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		if ok {
			return usage, skip(dec)
		}
		return usage, nil
	}
	for dec.More() {
		k, err := key(dec)
		if err != nil {
			return usage, err
		}
		if k != "usage" {
			if _, _, err := scalar(dec); err != nil {
				return usage, err
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return usage, err
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			if ok {
				if err := skip(dec); err != nil {
					return usage, err
				}
			}
			continue
		}
		for dec.More() {
			k, err := key(dec)
			if err != nil {
				return usage, err
			}
			v, ok, err := scalar(dec)
			if err != nil {
				return usage, err
			}
			if ok {
				if usage, err = a.set(usage, k, v); err != nil {
					return usage, err
				}
			}
		}
		if _, err := dec.Token(); err != nil { // usage's '}'
			return usage, err
		}
	}
	_, err = dec.Token() // response's '}'
	return usage, err
}

// set sets field k of fs to v.
func (a *aggregate) set(fs []field, k string, v float64) ([]field, error) {
	n, ok := a.number[k]
	if !ok {
		if len(a.names) >= MaxAggregateFields {
			return fs, fmt.Errorf("more than %d distinct numeric fields", MaxAggregateFields)
		}
		n = len(a.names)
		a.number[k] = n
		a.names = append(a.names, k)
	}
	return put(fs, field{n, v}), nil
}

func put(fs []field, f field) []field {
	for i := range fs {
		if fs[i].name == f.name {
			fs[i].v = f.v
			return fs
		}
	}
	return append(fs, f)
}

func key(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("an object key is not a string")
	}
	return k, nil
}

// scalar reads the next value: a number, or a boolean (true is 1), with ok;
// anything else (a string, null, an object or a list) is read past.
func scalar(dec *json.Decoder) (v float64, ok bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, false, err
	}
	switch t := tok.(type) {
	case float64:
		return t, true, nil
	case bool:
		if t {
			return 1, true, nil
		}
		return 0, true, nil
	case json.Delim:
		return 0, false, skip(dec)
	}
	return 0, false, nil
}

// skip reads past the rest of an object or list whose opening it read,
// nested at most maxDepth deep.
func skip(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				if depth++; depth > maxDepth {
					return fmt.Errorf("values nested more than %d deep", maxDepth)
				}
			} else {
				depth--
			}
		}
	}
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%s is not a JSON object", what)
	}
	return nil
}

// write writes a's AggregateMetrics to w, the keys of each object in a
// fixed order.
func (a *aggregate) write(w *bufio.Writer) {
	slices.SortStableFunc(a.replies, func(x, y reply) int {
		return cmp.Or(cmp.Compare(x.task, y.task), cmp.Compare(x.index, y.index))
	})
	// Each field's name in key order, with its number.
	order := make([]int, len(a.names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(a.names[x], a.names[y]) })
	var b []byte
	var st stats
	b = append(b, `{"group_level_metrics":[`...)
	for i, j := 0, 0; i < len(a.replies); i = j {
		for j = i; j < len(a.replies) && a.replies[j].task == a.replies[i].task; j++ {
		}
		group := a.replies[i:j]
		if i > 0 {
			b = append(b, ',')
		}
		st.of(group, len(a.names))
		b = append(b, '{')
		b = append(b, `"_ng_task_index":`...)
		b = strconv.AppendInt(b, group[0].task, 10)
		b = append(b, `,"expected_num_rollouts":`...)
		b = strconv.AppendInt(b, int64(len(group)), 10)
		b = append(b, `,"missing_num_rollouts":0,"num_rollouts":`...)
		b = strconv.AppendInt(b, int64(len(group)), 10)
		b = append(b, `,"reward_profile_completion_pct":100,"rollout_infos":[`...)
		for k, rp := range group {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"_ng_rollout_index":`...)
			b = strconv.AppendInt(b, rp.index, 10)
			b = append(b, `,"_ng_task_index":`...)
			b = strconv.AppendInt(b, rp.task, 10)
			for _, n := range order {
				if a.names[n] == "rollout_id" {
					continue // the key below
				}
				for _, f := range rp.fields {
					if f.name == n {
						b = appendKey(b, a.names[n])
						b = appendFloat(b, f.v)
					}
				}
			}
			b = append(b, `,"rollout_id":"`...)
			b = strconv.AppendInt(b, rp.task, 10)
			b = append(b, ':')
			b = strconv.AppendInt(b, rp.index, 10)
			b = append(b, `"}`...)
			if len(b) > 32<<10 {
				_, _ = w.Write(b)
				b = b[:0]
			}
		}
		b = append(b, `],"sample":{"agent_ref":{"name":"agent"}}`...)
		b = st.append(b, a.names, order, "")
		b = append(b, '}')
	}
	st.of(a.replies, len(a.names))
	b = append(b, `],"agent_metrics":{`...)
	b = firstKey(b, st.append(b, a.names, order, ""))
	b = append(b, `},"key_metrics":{`...)
	b = firstKey(b, st.append(b, a.names, order, "mean"))
	b = append(b, "}}\n"...)
	_, _ = w.Write(b)
}

// firstKey is after, which is before with keys appended (each after a
// comma), without the comma before the first.
func firstKey(before, after []byte) []byte {
	if len(after) > len(before) {
		return append(after[:len(before)], after[len(before)+1:]...)
	}
	return after
}

// stats are the statistics of one set of replies, by field number.
type stats struct {
	values [][]float64 // each field's values, in the replies' order
	n      int         // the replies
	anyStd bool        // some field has two values or more
}

func (st *stats) of(rs []reply, fields int) {
	if cap(st.values) < fields {
		st.values = make([][]float64, fields)
	}
	st.values = st.values[:fields]
	for i := range st.values {
		st.values[i] = st.values[i][:0]
	}
	st.n, st.anyStd = len(rs), false
	for _, rp := range rs {
		for _, f := range rp.fields {
			st.values[f.name] = append(st.values[f.name], f.v)
		}
	}
	for _, xs := range st.values {
		if len(xs) > 1 {
			st.anyStd = true
		}
	}
}

// append appends ,"stat/field":value for each statistic of each field
// with values (only stat's when it is set), keys in order. As pandas
// does: the mean, max, min and median of the values a field has; the
// sample standard deviation of two or more, and 0 where no field has two
// and the field is in every reply. A statistic that overflows (values near
// the float64 limit) is left out: JSON has no infinity.
func (st *stats) append(b []byte, names []string, order []int, only string) []byte {
	type stat struct {
		name string
		of   func(xs, sorted []float64) (float64, bool)
	}
	all := []stat{ // in key order: "max/" < "mean/" < "median/" < "min/" < "std/"
		{"max", func(_, s []float64) (float64, bool) { return s[len(s)-1], true }},
		{"mean", func(xs, _ []float64) (float64, bool) { return mean(xs), true }},
		{"median", func(_, s []float64) (float64, bool) {
			n := len(s)
			if n%2 == 1 {
				return s[n/2], true
			}
			return s[n/2-1]/2 + s[n/2]/2, true
		}},
		{"min", func(_, s []float64) (float64, bool) { return s[0], true }},
		{"std", func(xs, _ []float64) (float64, bool) {
			if len(xs) > 1 {
				m, ss := mean(xs), 0.0
				for _, x := range xs {
					ss += (x - m) * (x - m)
				}
				return math.Sqrt(ss / float64(len(xs)-1)), true
			}
			return 0, !st.anyStd && len(xs) == st.n
		}},
	}
	var sorted []float64
	for _, s := range all {
		if only != "" && s.name != only {
			continue
		}
		for _, n := range order {
			xs := st.values[n]
			if len(xs) == 0 {
				continue
			}
			sorted = append(sorted[:0], xs...)
			slices.Sort(sorted)
			v, ok := s.of(xs, sorted)
			if !ok || math.IsInf(v, 0) || math.IsNaN(v) {
				continue
			}
			b = appendKey(b, s.name+"/"+names[n])
			b = appendFloat(b, v)
		}
	}
	return b
}

// mean is the sum over the count, as pandas makes it; a running mean
// where the sum overflows.
func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	if !math.IsInf(sum, 0) {
		return sum / float64(len(xs))
	}
	m := 0.0
	for i, x := range xs {
		m += (x - m) / float64(i+1)
	}
	return m
}

// appendKey appends ,"k": with k as a JSON string.
func appendKey(b []byte, k string) []byte {
	b = append(b, ',')
	q, _ := json.Marshal(k)
	b = append(b, q...)
	return append(b, ':')
}

func appendFloat(b []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
