package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

// The tests in this file run corpsim diagnose through cli.Main: on sessions
// of small worlds whose cause of failure is known, and on a sweep of
// support-desk over loads.

// diagnosisJSON is one line of corpsim diagnose --json.
type diagnosisJSON struct {
	Session  string  `json:"session"`
	World    string  `json:"world"`
	Load     float64 `json:"load"`
	Agents   string  `json:"agents"`
	Seed     uint64  `json:"seed"`
	Sessions int     `json:"sessions"`
	Lost     float64 `json:"lost"`
	Causes   []struct {
		Cause  string  `json:"cause"`
		Hours  float64 `json:"hours"`
		Points float64 `json:"points"`
	} `json:"causes"`
}

func (d diagnosisJSON) share(cause string) float64 {
	for _, c := range d.Causes {
		if c.Cause == cause && d.Lost > 0 {
			return c.Points / d.Lost
		}
	}
	return 0
}

// checkSums fails unless d's causes add up to its lost value.
func (d diagnosisJSON) checkSums(t *testing.T, what string) {
	t.Helper()
	sum := 0.0
	for _, c := range d.Causes {
		sum += c.Points
		if c.Points < 0 || c.Hours < 0 {
			t.Errorf("%s: cause %+v is negative", what, c)
		}
	}
	if math.Abs(sum-d.Lost) > 1e-4 {
		t.Errorf("%s: causes add up to %v; want the lost value %v (%+v)", what, sum, d.Lost, d.Causes)
	}
}

func parseDiagnoses(t *testing.T, out string) []diagnosisJSON {
	t.Helper()
	var ds []diagnosisJSON
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var d diagnosisJSON
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("diagnose --json line %q: %v", sc.Text(), err)
		}
		ds = append(ds, d)
	}
	return ds
}

// TestDiagnoseNamesTheKnownCause runs worlds built to fail for one reason
// and checks that diagnose names it first, with whom or what in its
// detail, and that the causes add up to the lost value.
func TestDiagnoseNamesTheKnownCause(t *testing.T) {
	cases := []struct {
		name, world, agents string
		first               string
		detail              string // in the human table's row of the first cause
		also                string // elsewhere in the table, if set
	}{
		{"outage", "diagnose-outage.yaml", "greedy", "outage", "queue q", ""},
		{"leave without a delegate", "diagnose-leave.yaml", "greedy", "leave", "ann", ""},
		{"approver who never answers", "diagnose-approver.yaml", "greedy,ann=idle", "approval", "ann", "licence (held by bob)"},
		{"purchase beyond the budget", "diagnose-budget.yaml", "greedy", "budget", "team t", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := t.TempDir()
			res := cliResult(t, "run", "--world", filepath.Join("testdata", "worlds", c.world), "--agents", c.agents, "--data", data)
			ds := parseDiagnoses(t, mustCLI(t, "diagnose", res.Session, "--data", data, "--json"))
			if len(ds) != 1 {
				t.Fatalf("got %d JSON objects for one session; want 1", len(ds))
			}
			d := ds[0]
			d.checkSums(t, c.world)
			if d.Lost <= 0 || len(d.Causes) == 0 {
				t.Fatalf("lost %v, causes %+v: the world is built to lose value", d.Lost, d.Causes)
			}
			if d.Causes[0].Cause != c.first {
				t.Fatalf("first cause %q; want %q (%+v)", d.Causes[0].Cause, c.first, d.Causes)
			}
			if want := res.Score.TeamScore + d.Lost; want <= 0 {
				t.Fatalf("team score %v + lost %v: no possible value", res.Score.TeamScore, d.Lost)
			}
			text := mustCLI(t, "diagnose", res.Session, "--data", data)
			var row string
			for _, l := range strings.Split(text, "\n") {
				if f := strings.Fields(l); len(f) > 0 && f[0] == c.first {
					row = l
					break
				}
			}
			if !strings.Contains(row, c.detail) {
				t.Fatalf("the %s row %q does not name %q:\n%s", c.first, row, c.detail, text)
			}
			if !strings.Contains(text, c.also) {
				t.Fatalf("the table does not name %q:\n%s", c.also, text)
			}
		})
	}
}

// TestDiagnoseSweepSupportDesk sweeps support-desk with greedy agents at
// loads 0.5, 1 and 2 over 3 seeds, and reads the sweep's folder with
// diagnose --sweep: every run's causes add up to its lost value, and the
// share of the lost value put down to capacity grows with the load.
func TestDiagnoseSweepSupportDesk(t *testing.T) {
	dir := t.TempDir()
	mustCLI(t, "sweep", "--world", "support-desk", "--loads", "0.5,1,2", "--agents", "greedy", "--seeds", "3", "-o", dir)
	ds := parseDiagnoses(t, mustCLI(t, "diagnose", "--sweep", dir, "--json"))
	// 9 runs, 3 (load, agents) means, 1 mean of all.
	if len(ds) != 13 {
		t.Fatalf("got %d JSON lines; want 9 runs + 3 loads + 1 overall", len(ds))
	}
	for _, d := range ds[:9] {
		if d.World != "support-desk" || d.Agents != "greedy" || d.Seed == 0 {
			t.Fatalf("run line %+v lacks world, agents or seed", d)
		}
		d.checkSums(t, "run")
	}
	var shares []float64
	for i, d := range ds[9:12] {
		if want := []float64{0.5, 1, 2}[i]; d.Load != want || d.Sessions != 3 {
			t.Fatalf("aggregate %d: load %v over %d sessions; want load %v over 3", i, d.Load, d.Sessions, want)
		}
		d.checkSums(t, "aggregate")
		mean := 0.0
		for _, r := range ds[3*i : 3*i+3] {
			mean += r.Lost / 3
		}
		if math.Abs(mean-d.Lost) > 1e-4 {
			t.Errorf("load %v: aggregate lost %v; want the mean of its runs %v", d.Load, d.Lost, mean)
		}
		shares = append(shares, d.share("capacity"))
	}
	t.Logf("capacity share of the lost value at loads 0.5, 1, 2: %.3f", shares)
	if !(shares[0] < shares[1] && shares[1] < shares[2]) {
		t.Fatalf("capacity shares %v; want them to grow with load", shares)
	}
	if all := ds[12]; all.Sessions != 9 || all.Load != 0 {
		t.Fatalf("last line %+v; want the mean of all 9 runs", all)
	} else {
		all.checkSums(t, "overall")
	}
	text := mustCLI(t, "diagnose", "--sweep", dir)
	for _, want := range []string{"load 2 · greedy · 3 seeds", "all 9 runs", "share of the lost value by cause", "CAPACITY"} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnose --sweep output lacks %q:\n%s", want, text)
		}
	}
}

// TestDiagnoseUsage: sessions and --sweep together, neither, or a folder
// that is no sweep's are usage errors (exit 2).
func TestDiagnoseUsage(t *testing.T) {
	notSweep := t.TempDir()
	if err := os.WriteFile(filepath.Join(notSweep, "sweep.csv"), []byte("world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"diagnose"},
		{"diagnose", "S", "--sweep", notSweep},
		{"diagnose", "--sweep", notSweep},
		{"diagnose", "--sweep", t.TempDir()},
	} {
		_, errs, code := runCLI(t, args...)
		if code != cli.ExitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("corpsim %s: exit %d, stderr %q; want exit 2 and one line", strings.Join(args, " "), code, errs)
		}
	}
}

// TestDiagnoseAddsUpEverywhere diagnoses every shipped world but the bench
// with every built-in agent: in each, the lost value is the world's
// possible value minus the rubric's team score, and the causes' points add
// up to it — whatever the agents did (violations, refusals, leaves,
// outages, unverified work).
func TestDiagnoseAddsUpEverywhere(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	for _, w := range []string{"startup", "procurement", "product-launch", "support-desk", "portfolio", "claims"} {
		for _, a := range []string{"greedy", "planner", "random", "cheater", "idle"} {
			t.Run(w+"-"+a, func(t *testing.T) {
				log := memlog.New()
				res := mustRun(t, app.RunOptions{World: w, Agents: a, Seed: 2, Log: log, Bus: srv, CheckpointEvery: -1})
				s, err := analyze.Load(log.Read(context.Background(), res.Session, 1))
				if err != nil {
					t.Fatal(err)
				}
				d := s.Diagnose()
				possible := 0.0
				for _, tk := range s.State.AllTasks() {
					possible += tk.Value
				}
				for _, p := range s.World.Projects {
					possible += p.Value
				}
				for _, c := range s.State.Cases {
					possible += c.Value
				}
				if want := possible - res.Score.TeamScore; math.Abs(d.Lost-want) > 1e-5 {
					t.Errorf("lost %v; want possible %v - team score %v", d.Lost, possible, res.Score.TeamScore)
				}
				sum := 0.0
				for _, c := range d.Causes {
					sum += c.Points
					if c.Points < -1e-9 || c.Hours < 0 {
						t.Errorf("negative cause %+v", c)
					}
				}
				if math.Abs(sum-d.Lost) > 1e-4 {
					t.Errorf("causes add up to %v; want the lost %v (%+v)", sum, d.Lost, d.Causes)
				}
				if d.Lost > 0 && len(d.Causes) == 0 {
					t.Errorf("lost %v with no cause", d.Lost)
				}
			})
		}
	}
}
