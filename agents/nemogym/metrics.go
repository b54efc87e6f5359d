package nemogym

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
)

// NeMo Gym's resources servers also answer two routes that hold no
// session: /aggregate_metrics, which its rollout collection calls (through
// simple_agent, which forwards it to the resources server) once every
// rollout is verified, and /reverify_mode, which `gym eval reverify` asks
// before it verifies stored rollouts again. Without them a collection
// against corpsim failed at its last step.

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

// aggregateRequest is /aggregate_metrics' body (NeMo Gym's
// AggregateMetricsRequest): verify's replies, stripped of their response
// (all but its usage) and input, each with its task and rollout index.
type aggregateRequest struct {
	VerifyResponses []map[string]json.RawMessage `json:"verify_responses"`
}

// Aggregate is /aggregate_metrics' reply (NeMo Gym's AggregateMetrics, as
// its default RewardProfiler makes it): for every numeric field of the
// replies (reward, reward_components' own top-level copies, a usage's
// counts; true counts 1), its mean, max, min, median and sample standard
// deviation, keyed "stat/field", over each task's rollouts
// (group_level_metrics, by task index) and over all (agent_metrics);
// key_metrics are agent_metrics' means.
type Aggregate struct {
	GroupLevel []map[string]any `json:"group_level_metrics"`
	Agent      map[string]any   `json:"agent_metrics"`
	Key        map[string]any   `json:"key_metrics"`
}

func (s *Server) handleAggregate(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r, s.cfg.MaxVerifyBytes)
	if !ok {
		return
	}
	var req aggregateRequest
	if err := json.Unmarshal(b, &req); err != nil {
		s.fail(w, http.StatusUnprocessableEntity, CodeBadRequest, "aggregate_metrics: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, aggregate(req.VerifyResponses))
}

// rollout is one verify reply's numbers: its indexes and its numeric fields.
type rollout struct {
	task, index int64
	fields      map[string]float64
}

// numbersOf reads a reply's numeric fields, and those of its
// response.usage (NeMo Gym merges the usage into the reply's fields).
func numbersOf(vr map[string]json.RawMessage) rollout {
	r := rollout{fields: map[string]float64{}}
	add := func(k string, raw json.RawMessage) {
		if x, ok := numberOf(raw); ok {
			r.fields[k] = x
		}
	}
	if resp, ok := vr["response"]; ok {
		var rs struct {
			Usage map[string]json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(resp, &rs) == nil {
			for k, v := range rs.Usage { // order: into a map
				add(k, v)
			}
		}
	}
	for k, v := range vr { // order: into a map
		switch k {
		case taskIndexKey:
			x, _ := numberOf(v)
			r.task = int64(x)
		case rolloutIndexKey:
			x, _ := numberOf(v)
			r.index = int64(x)
		default:
			add(k, v)
		}
	}
	return r
}

// numberOf reads a JSON number or boolean (true is 1), as NeMo Gym keeps
// a reply's int, float and bool fields.
func numberOf(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return 0, false
	case string(raw) == "true":
		return 1, true
	case string(raw) == "false":
		return 0, true
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		var x float64
		if json.Unmarshal(raw, &x) != nil {
			return 0, false
		}
		return x, true
	}
	return 0, false
}

// aggregate computes what /aggregate_metrics answers for replies vrs.
func aggregate(vrs []map[string]json.RawMessage) Aggregate {
	out := Aggregate{GroupLevel: []map[string]any{}, Agent: map[string]any{}, Key: map[string]any{}}
	if len(vrs) == 0 {
		return out
	}
	all := make([]rollout, len(vrs))
	for i, vr := range vrs {
		all[i] = numbersOf(vr)
	}
	byTask := map[int64][]rollout{}
	for _, r := range all {
		byTask[r.task] = append(byTask[r.task], r)
	}
	tasks := make([]int64, 0, len(byTask))
	for t := range byTask { // order: sorted below
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	for _, t := range tasks {
		rs := byTask[t]
		g := describe(rs)
		g[taskIndexKey] = t
		g["sample"] = map[string]any{"agent_ref": map[string]string{"name": "agent"}}
		g["num_rollouts"], g["expected_num_rollouts"], g["missing_num_rollouts"] = len(rs), len(rs), 0
		g["reward_profile_completion_pct"] = 100.0
		infos := make([]map[string]any, len(rs))
		for i, r := range rs {
			info := map[string]any{"rollout_id": jsonInt(r.task) + ":" + jsonInt(r.index), taskIndexKey: r.task, rolloutIndexKey: r.index}
			for k, x := range r.fields { // order: into a map
				info[k] = x
			}
			infos[i] = info
		}
		slices.SortStableFunc(infos, func(a, b map[string]any) int {
			return cmp.Compare(a[rolloutIndexKey].(int64), b[rolloutIndexKey].(int64))
		})
		g["rollout_infos"] = infos
		out.GroupLevel = append(out.GroupLevel, g)
	}
	out.Agent = describe(all)
	for k, v := range out.Agent { // order: into a map
		if strings.HasPrefix(k, "mean/") {
			out.Key[k] = v
		}
	}
	return out
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// describe is RewardProfiler's describe_dataframe over rollouts rs: for
// each field any of them has, "mean/", "max/", "min/", "median/" and
// "std/" of the values they have (a rollout without it is left out, as
// pandas skips NaN). The standard deviation is the sample's (n-1); of a
// single value it is undefined and left out, unless no field has one, when
// the fields every rollout has get 0 (as NeMo Gym does).
func describe(rs []rollout) map[string]any {
	values := map[string][]float64{}
	for _, r := range rs {
		for k, x := range r.fields { // order: each field's values are in rs's order
			values[k] = append(values[k], x)
		}
	}
	out := map[string]any{}
	anyStd := false
	for _, xs := range values { // order: a boolean
		if len(xs) > 1 {
			anyStd = true
		}
	}
	// A statistic that overflows (values near the float64 limit) is left
	// out: JSON has no infinity.
	put := func(k string, v float64) {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			out[k] = v
		}
	}
	for k, xs := range values { // order: into a map
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		mean := 0.0
		for i, x := range xs {
			mean += (x - mean) / float64(i+1) // a running mean: no sum to overflow
		}
		put("mean/"+k, mean)
		put("max/"+k, sorted[len(sorted)-1])
		put("min/"+k, sorted[0])
		n := len(sorted)
		if n%2 == 1 {
			put("median/"+k, sorted[n/2])
		} else {
			put("median/"+k, sorted[n/2-1]/2+sorted[n/2]/2)
		}
		switch {
		case n > 1:
			ss := 0.0
			for _, x := range xs {
				ss += (x - mean) * (x - mean)
			}
			put("std/"+k, math.Sqrt(ss/float64(n-1)))
		case !anyStd && n == len(rs):
			out["std/"+k] = 0.0
		}
	}
	return out
}
