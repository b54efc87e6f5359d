package policies_test

import (
	"math"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// lateBy returns the instant that is d of working time past the startup
// project's deadline (Wednesday 2026-01-21 17:00).
func lateBy(s *script, d clock.Duration) int64 {
	p := &s.w.Projects[0]
	return int64(s.w.Calendar.AddWork(p.Deadline, d))
}

func TestScoreLateDecay(t *testing.T) {
	halfLife := 40 * clock.Hour // the startup world's late_half_life: 5d
	tests := []struct {
		name       string
		late       clock.Duration // working time past the deadline; -1 for an hour early
		want       float64        // spec's value, 8, after decay
		wantOnTime int
	}{
		{"an hour early", -1, 8, 1},
		{"at the deadline", 0, 8, 1},
		{"half a half-life late", halfLife / 2, 8 / math.Sqrt2, 0},
		// Five working days past Wednesday 17:00 is the next Wednesday 17:00:
		// seven days of wall time, which must not count.
		{"one half-life late", halfLife, 4, 0},
		{"two half-lives late", 2 * halfLife, 2, 0},
		{"four half-lives late", 4 * halfLife, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(t, nil)
			at := lateBy(s, tt.late)
			if tt.late < 0 {
				at = int64(s.w.Projects[0].Deadline) - hour
			}
			st := s.claim("alice", "spec").work("alice", "spec", 8*clock.Hour).at(at).complete("alice", "spec").state()
			c := policies.Score(st)
			want := math.Round(tt.want*1e6) / 1e6
			if c.Delivered != want || c.TeamScore != want {
				t.Errorf("Delivered %v TeamScore %v, want %v for both", c.Delivered, c.TeamScore, want)
			}
			if c.TasksDone != 1 || c.OnTime != tt.wantOnTime {
				t.Errorf("TasksDone %d OnTime %d, want 1 and %d", c.TasksDone, c.OnTime, tt.wantOnTime)
			}
			if c.Projects[0].Completed {
				t.Errorf("project completed with 1 of 14 tasks: got true, want false")
			}
		})
	}
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name   string
		script func(*script) *script
		task   string
		want   string // "" when the completion counts
	}{
		{"done properly", func(s *script) *script { return s.do("alice", "spec") }, "spec", ""},
		{"not done", func(s *script) *script { return s.claim("alice", "spec") }, "spec", "not done"},
		{"before its dependency", func(s *script) *script { return s.do("bob", "api").do("alice", "spec") }, "api", "completed before its dependency spec"},
		{"dependency never done", func(s *script) *script { return s.do("bob", "api") }, "api", "completed before its dependency spec"},
		{"after its dependencies", func(s *script) *script { return s.do("alice", "spec").do("bob", "api") }, "api", ""},
		{"by the wrong role", func(s *script) *script { return s.do("dave", "spec") }, "spec", "completed by dave, who does not hold role lead"},
		{"with part of the effort", func(s *script) *script {
			return s.claim("alice", "spec").work("alice", "spec", 4*clock.Hour).complete("alice", "spec")
		}, "spec", "only 4h of 8h effort spent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.script(newScript(t, nil)).state()
			if got := policies.Verify(st, st.Task(tt.task)); got != tt.want {
				t.Errorf("Verify(%s): got %q, want %q", tt.task, got, tt.want)
			}
		})
	}
}

// TestScoreOutOfOrder: a task done before its dependency earns nothing and
// is listed as unverified.
func TestScoreOutOfOrder(t *testing.T) {
	st := newScript(t, nil).do("bob", "api").do("alice", "spec").state()
	c := policies.Score(st)
	if want := []string{"api: completed before its dependency spec"}; !slices.Equal(c.Unverified, want) {
		t.Errorf("Unverified: got %q, want %q", c.Unverified, want)
	}
	if c.TasksDone != 1 || c.Delivered != 8 {
		t.Errorf("TasksDone %d Delivered %v, want 1 and 8 (spec only; api's 30 is not earned)", c.TasksDone, c.Delivered)
	}
}

// TestScorePurchases: a purchase counts only with a request approved, in
// full and by eligible approvers, before the task was completed.
func TestScorePurchases(t *testing.T) {
	const noApproval = "purchase completed without an approved request"
	// servers does build-servers' work after spec; the cases add the
	// approval, if any, and the completion.
	servers := func(s *script) *script {
		return s.do("alice", "spec").claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour)
	}
	tests := []struct {
		name   string
		script func(*script) *script
		task   string
		want   string // the reason, "" when verified
	}{
		{"approved", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers")
		}, "build-servers", ""},
		{"no request", func(s *script) *script { return servers(s).complete("bob", "build-servers") }, "build-servers", noApproval},
		{"request pending", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").complete("bob", "build-servers")
		}, "build-servers", noApproval},
		{"request rejected", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").reject("alice", "r1", 0, "no").complete("bob", "build-servers")
		}, "build-servers", noApproval},
		{"approved after completion", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").complete("bob", "build-servers").at(hour).grant("alice", "r1", 0)
		}, "build-servers", noApproval},
		{"approved for less than the purchase", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers").
				tamper(func(st *org.State) { st.Request("r1").Amount = 2000 })
		}, "build-servers", "request r1 does not cover this purchase"},
		{"approved by someone without the role", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers").
				tamper(func(st *org.State) { st.Request("r1").Steps[0].Approver = "carol" })
		}, "build-servers", "approval step 1 (lead) not granted by an eligible approver"},
		{"approved by the requester", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers").
				tamper(func(st *org.State) { st.Request("r1").Requester = "alice" })
		}, "build-servers", "request r1 was made by alice, not by bob who completed the task"},
		{"approved by its own requester", func(s *script) *script {
			return servers(s).request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers").
				tamper(func(st *org.State) { st.Request("r1").Steps[0].Approver = "bob" })
		}, "build-servers", "approval step 1 (lead) not granted by an eligible approver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.script(newScript(t, nil)).state()
			c := policies.Score(st)
			var want []string
			if tt.want != "" {
				want = []string{tt.task + ": " + tt.want}
			}
			if !slices.Equal(c.Unverified, want) {
				t.Errorf("Unverified: got %q, want %q", c.Unverified, want)
			}
		})
	}
}

// TestVerifyApprovalSteps checks the approval rules on a purchase whose
// dependencies are done, so only the approval decides.
func TestVerifyApprovalSteps(t *testing.T) {
	// kitReady does every dependency of load-test-kit, then its work.
	kitReady := func(s *script) *script {
		s.do("alice", "spec").claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour).
			request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers")
		return s.do("bob", "ci").claim("bob", "load-test-kit").work("bob", "load-test-kit", 2*clock.Hour)
	}
	tests := []struct {
		name   string
		script func(*script) *script
		want   string
	}{
		{"both steps granted", func(s *script) *script {
			return kitReady(s).request("bob", "r2", "load-test-kit", 8000, "lead:alice", "finance:frank").
				grant("alice", "r2", 0).grant("frank", "r2", 1).complete("bob", "load-test-kit")
		}, ""},
		{"only the first step asked for", func(s *script) *script {
			return kitReady(s).request("bob", "r2", "load-test-kit", 8000, "lead:alice", "finance:frank").
				grant("alice", "r2", 0).grant("frank", "r2", 1).complete("bob", "load-test-kit").
				tamper(func(st *org.State) { r := st.Request("r2"); r.Steps = r.Steps[:1] })
		}, "request r2 has 1 approval steps; the chain needs 2"},
		{"steps in the wrong roles", func(s *script) *script {
			return kitReady(s).request("bob", "r2", "load-test-kit", 8000, "lead:alice", "finance:frank").
				grant("alice", "r2", 0).grant("frank", "r2", 1).complete("bob", "load-test-kit").
				tamper(func(st *org.State) { r := st.Request("r2"); r.Steps[0], r.Steps[1] = r.Steps[1], r.Steps[0] })
		}, "approval step 1 (lead) not granted by an eligible approver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.script(newScript(t, nil)).state()
			if got := policies.Verify(st, st.Task("load-test-kit")); got != tt.want {
				t.Errorf("Verify(load-test-kit): got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScorePenalties(t *testing.T) {
	tests := []struct {
		name           string
		edits          []string // to the startup world
		policy, state  int      // rejections of each kind
		specDone       bool
		wantPenalties  float64
		wantTeamScore  float64
		wantViolations int
	}{
		{"no violations", nil, 0, 2, true, 0, 8, 0},
		{"three violations", nil, 3, 1, true, 3, 5, 3},
		{"penalty weight from the world", []string{"violation_penalty: 1 ", "violation_penalty: 2.5 "}, 3, 0, true, 7.5, 0.5, 3},
		{"below zero", nil, 2, 0, false, 2, -2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(t, mustWorld(t, tt.edits...))
			for range tt.policy {
				s.rejected("bob", org.KindPolicy, "role-required")
			}
			for range tt.state {
				s.rejected("bob", org.KindState, "")
			}
			if tt.specDone {
				s.do("alice", "spec")
			}
			c := policies.Score(s.state())
			if c.Penalties != tt.wantPenalties || c.TeamScore != tt.wantTeamScore {
				t.Errorf("Penalties %v TeamScore %v, want %v and %v", c.Penalties, c.TeamScore, tt.wantPenalties, tt.wantTeamScore)
			}
			if c.Violations != tt.wantViolations || c.Rejections != tt.policy+tt.state {
				t.Errorf("Violations %d Rejections %d, want %d and %d", c.Violations, c.Rejections, tt.wantViolations, tt.policy+tt.state)
			}
		})
	}
}

// doAll completes every startup task in world order (a topological order),
// with approvals for the purchases. Task late is completed lateness past the
// deadline; unapproved names a purchase completed without a request.
func doAll(s *script, late string, lateness clock.Duration, unapproved string) *script {
	who := map[string]string{"lead": "alice", "engineer": "bob", "designer": "dave"}
	for _, spec := range s.w.Projects[0].Tasks {
		m := who[spec.Role]
		if spec.ID == late {
			s.at(lateBy(s, lateness))
		}
		s.claim(m, spec.ID).work(m, spec.ID, spec.Effort)
		if spec.Purchase > 0 && spec.ID != unapproved {
			id := "r-" + spec.ID
			if spec.Purchase > 5000 {
				s.request(m, id, spec.ID, spec.Purchase, "lead:alice", "finance:frank").grant("alice", id, 0).grant("frank", id, 1)
			} else {
				s.request(m, id, spec.ID, spec.Purchase, "lead:alice").grant("alice", id, 0)
			}
		}
		s.complete(m, spec.ID)
	}
	return s
}

// TestScoreProjectBonus: the project's value is earned only when every task
// is verified and on time. The tasks' values add up to 198; the bonus is 40.
func TestScoreProjectBonus(t *testing.T) {
	tests := []struct {
		name          string
		late          string
		unapproved    string
		wantDelivered float64
		wantOnTime    int
		wantCompleted bool
	}{
		{"every task on time", "", "", 198 + 40, 14, true},
		{"launch one half-life late", "launch", "", 198 - 20 + 10, 13, false},
		// beta depends on load-test-kit and launch on beta: neither counts either.
		{"a purchase unverified", "", "load-test-kit", 198 - 2 - 12 - 20, 11, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(t, nil)
			st := doAll(s, tt.late, 40*clock.Hour, tt.unapproved).state()
			c := policies.Score(st)
			p := c.Projects[0]
			if c.Delivered != tt.wantDelivered || p.Value != tt.wantDelivered {
				t.Errorf("Delivered %v project value %v, want %v for both", c.Delivered, p.Value, tt.wantDelivered)
			}
			if c.OnTime != tt.wantOnTime || p.OnTime != tt.wantOnTime {
				t.Errorf("OnTime %d (project %d), want %d", c.OnTime, p.OnTime, tt.wantOnTime)
			}
			if p.Completed != tt.wantCompleted {
				t.Errorf("Completed: got %v, want %v", p.Completed, tt.wantCompleted)
			}
			if c.Tasks != 14 || p.Tasks != 14 {
				t.Errorf("Tasks %d (project %d), want 14", c.Tasks, p.Tasks)
			}
			if c.Rubric != policies.RubricVersion || c.World != "startup" {
				t.Errorf("Rubric %q World %q, want %q and startup", c.Rubric, c.World, policies.RubricVersion)
			}
		})
	}
}

// TestScoreBuiltOnUnverifiedWork: work that depends on a skipped step earns
// nothing either — api and db-schema are done before spec, so backend, done
// after both, is built on work that does not count.
func TestScoreBuiltOnUnverifiedWork(t *testing.T) {
	st := newScript(t, nil).do("bob", "api").do("carol", "db-schema").do("alice", "spec").do("bob", "backend").state()
	c := policies.Score(st)
	want := []string{
		"api: completed before its dependency spec",
		"db-schema: completed before its dependency spec",
		"backend: its dependency api does not count (completed before its dependency spec)",
	}
	if !slices.Equal(c.Unverified, want) {
		t.Errorf("Unverified: got %q, want %q", c.Unverified, want)
	}
	if c.TasksDone != 1 || c.Delivered != 8 {
		t.Errorf("TasksDone %d Delivered %v, want 1 and 8 (spec only)", c.TasksDone, c.Delivered)
	}
}

// deltaSum replays a script's events one by one and adds up policies.Delta:
// the dense reward of the same events.
func deltaSum(s *script) float64 {
	s.tb.Helper()
	st := org.New(s.w)
	sum := 0.0
	for _, e := range s.evs {
		if err := st.Apply(e); err != nil {
			s.tb.Fatalf("Apply(seq %d %s): %v", e.Seq, e.Type, err)
		}
		d := policies.Delta(st, e, nil)
		sum += d.Team
	}
	return sum
}

// TestScoreBudgetOverrun: spending beyond a team's budget — a purchase, or
// work at a role's hourly rate — costs budget_penalty per unit over, and the
// dense rewards of the same events add up to the same score.
func TestScoreBudgetOverrun(t *testing.T) {
	tests := []struct {
		name        string
		edits       []string
		script      func(*script) *script
		wantOverrun int64
		wantPenalty float64
	}{
		{"within budget", nil, func(s *script) *script { return s.do("alice", "spec") }, 0, 0},
		{"a purchase beyond the budget", []string{"budget: 20000", "budget: 2000"}, func(s *script) *script {
			return s.do("alice", "spec").claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour).
				request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers")
		}, 1000, 10},
		{"work at an hourly rate", []string{"budget: 20000", "budget: 100", "{id: engineer, title: Software engineer}", "{id: engineer, title: Software engineer, rate: 40}"},
			func(s *script) *script {
				return s.do("alice", "spec").claim("bob", "api").work("bob", "api", 4*clock.Hour)
			}, 60, 0.6},
		// 1e15 an hour for 4h is 4e15, which fits an int64; rate × the stint's milliseconds (1.44e22) does not.
		{"work at an hourly rate whose product with the stint passes int64", []string{"budget: 20000", "budget: 100", "{id: engineer, title: Software engineer}", "{id: engineer, title: Software engineer, rate: 1000000000000000}"},
			func(s *script) *script {
				return s.do("alice", "spec").claim("bob", "api").work("bob", "api", 4*clock.Hour)
			}, 4e15 - 100, (4e15 - 100) * 0.01},
		// 4e18 an hour: the first 2h cost 8e18, the next saturate the spending at the largest int64.
		{"work whose pay saturates the spending", []string{"budget: 20000", "budget: 100", "{id: engineer, title: Software engineer}", "{id: engineer, title: Software engineer, rate: 4000000000000000000}"},
			func(s *script) *script {
				return s.do("alice", "spec").claim("bob", "api").work("bob", "api", 2*clock.Hour).work("bob", "api", 2*clock.Hour)
			}, math.MaxInt64 - 100, float64(math.MaxInt64-100) * 0.01},
		{"penalty weight from the world", []string{"budget: 20000", "budget: 2000", "violation_penalty: 1 ", "violation_penalty: 1\n  budget_penalty: 0.5 "}, func(s *script) *script {
			return s.do("alice", "spec").claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour).
				request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers")
		}, 1000, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.script(newScript(t, mustWorld(t, tt.edits...)))
			c := policies.Score(s.state())
			if c.BudgetOverrun != tt.wantOverrun || c.Penalties != tt.wantPenalty {
				t.Errorf("BudgetOverrun %d Penalties %v, want %d and %v", c.BudgetOverrun, c.Penalties, tt.wantOverrun, tt.wantPenalty)
			}
			// Exact but for float64's rounding, which scores of 1e16 show.
			if got := deltaSum(s); math.Abs(got-c.TeamScore) > 1e-9*max(1, math.Abs(c.TeamScore)) {
				t.Errorf("dense rewards add up to %v, the team score is %v", got, c.TeamScore)
			}
		})
	}
}
