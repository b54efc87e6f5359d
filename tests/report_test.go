package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/sim/app"
)

// chromium returns the headless browser the report tests render pages in.
// Without one the tests skip, unless CORPSIM_REQUIRE_BROWSER is set (CI
// installs chromium and sets it), when they fail.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CORPSIM_REQUIRE_BROWSER") != "" {
		t.Fatal("chromium is not installed, and CORPSIM_REQUIRE_BROWSER is set (apt-get install -y chromium)")
	}
	t.Skip("skipping the browser check: chromium is not installed (apt-get install -y chromium; set CORPSIM_REQUIRE_BROWSER=1 to fail instead)")
	return ""
}

// artifactDir is where the report tests leave their pages and screenshots:
// $CORPSIM_ARTIFACTS/report when set (CI keeps it), else a test temp folder.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("CORPSIM_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "report")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// browserProbe runs in a copy of the report: it records script errors from
// the start of the page and, at its end, measures every chart.
const (
	probeHead = `<script>window.__errors=[];window.addEventListener("error",function(e){window.__errors.push(String(e.message||e.error||e))});</script>`
	probeBody = `<script>(function(){
var out={errors:window.__errors,charts:[]};
document.querySelectorAll("section > .scroll > svg").forEach(function(svg){
  var r=svg.getBoundingClientRect(), drawn=0, total=0;
  svg.querySelectorAll("rect,line,polyline,path,circle,text").forEach(function(el){
    total++; var b=el.getBBox(); if(b.width>0||b.height>0){drawn++;}
  });
  out.charts.push({id:svg.parentNode.parentNode.id,width:r.width,height:r.height,drawn:drawn,total:total});
});
var pre=document.createElement("pre");pre.id="probe-result";pre.textContent=JSON.stringify(out);document.body.appendChild(pre);
})();</script>`
)

type probeResult struct {
	Errors []string `json:"errors"`
	Charts []struct {
		ID     string  `json:"id"`
		Width  float64 `json:"width"`
		Height float64 `json:"height"`
		Drawn  int     `json:"drawn"`
		Total  int     `json:"total"`
	} `json:"charts"`
}

func chromiumRun(t *testing.T, browser string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

var probeRE = regexp.MustCompile(`(?s)<pre id="probe-result">(.*?)</pre>`)

// checkInBrowser opens a report page in headless Chromium and checks that
// every chart drew something and no script failed; it saves a screenshot
// next to the page and returns its path.
func checkInBrowser(t *testing.T, page string) string {
	t.Helper()
	browser := chromium(t)
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probed := strings.Replace(string(src), "<head>", "<head>"+probeHead, 1)
	probed = strings.Replace(probed, "</body>", probeBody+"</body>", 1)
	probePath := filepath.Join(t.TempDir(), "probed.html")
	if err := os.WriteFile(probePath, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromiumRun(t, browser, "--dump-dom", "file://"+probePath)
	m := probeRE.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe left no result in the DOM (did the page load?):\n%.2000s", dom)
	}
	var res probeResult
	unescaped := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`, "&#39;", "'").Replace(string(m[1]))
	if err := json.Unmarshal([]byte(unescaped), &res); err != nil {
		t.Fatalf("probe result %q: %v", unescaped, err)
	}
	if len(res.Errors) > 0 {
		t.Errorf("script errors on the page: %q", res.Errors)
	}
	want := []string{"gantt", "dag", "queues", "reward", "approvals"}
	if len(res.Charts) != len(want) {
		t.Fatalf("got %d charts (%+v), want %d: %v", len(res.Charts), res.Charts, len(want), want)
	}
	for i, c := range res.Charts {
		if c.ID != want[i] {
			t.Errorf("chart %d is %q, want %q", i, c.ID, want[i])
		}
		if c.Width <= 0 || c.Height <= 0 || c.Drawn < 5 {
			t.Errorf("chart %s rendered %gx%g with %d of %d elements drawn; want a visible chart with at least 5 drawn", c.ID, c.Width, c.Height, c.Drawn, c.Total)
		}
	}
	shot := strings.TrimSuffix(page, ".html") + ".png"
	chromiumRun(t, browser, "--hide-scrollbars", "--window-size=1300,3200", "--screenshot="+shot, "file://"+page)
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10_000 {
		t.Fatalf("screenshot %s: %d bytes, err %v; want a PNG", shot, len(png), err)
	}
	t.Logf("charts: %+v", res.Charts)
	t.Logf("screenshot: %s", shot)
	return shot
}

// checkSelfContained: nothing on the page is fetched: no src or href, no
// URL but the SVG namespace.
func checkSelfContained(t *testing.T, page []byte) {
	t.Helper()
	if m := regexp.MustCompile(`(?i)\s(src|href)\s*=`).Find(page); m != nil {
		t.Errorf("the page refers to another resource: %q", m)
	}
	for _, u := range regexp.MustCompile(`https?://[^\s"'<>]+`).FindAll(page, -1) {
		if string(u) != "http://www.w3.org/2000/svg" {
			t.Errorf("the page names a URL: %s", u)
		}
	}
}

// TestReportInBrowser reports on a real session of the portfolio world
// (projects with deadlines and a critical path, tickets, approvals) and
// opens the page in headless Chromium.
func TestReportInBrowser(t *testing.T) {
	chromium(t) // skip before spending a run
	data := t.TempDir()
	out, err := exec.Command(corpsimBinary(t), "run", "--world", "portfolio", "--seed", "2", "--data", data, "--json").Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var res app.RunResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(artifactDir(t), "portfolio.html")
	mustCLI(t, "report", res.Session, "--data", data, "-o", page)
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, src)
	for _, want := range []string{res.Session, "critical path", `class="node critical`, `class="node late`, "tasks done late",
		`<polyline class="series" data-series="q1"`, "project tasks shown"} {
		if !bytes.Contains(src, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	score := regexp.MustCompile(`<b>([-0-9.]+)</b><span>team score</span>`).FindSubmatch(src)
	if want := fmt.Sprintf("%.2f", res.Score.TeamScore); score == nil || string(score[1]) != want {
		t.Errorf("the page's team score is %q, want %s", score, want)
	}
	browserStart := time.Now()
	checkInBrowser(t, page)
	t.Logf("browser checks took %s", time.Since(browserStart))
}

// TestReportOf100kEvents reports on a stored session of over 100,000 events
// (the support-desk-bench world at load 0.2: 40,000 tickets served
// by 20 NPCs, ~3.4 events each in log format 3) and checks the page stays small, comes quickly and renders.
func TestReportOf100kEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100,000-event session takes a while")
	}
	bin := corpsimBinary(t)
	data := t.TempDir()
	runStart := time.Now()
	out, err := exec.Command(bin, "run", "--world", "support-desk-bench", "--load", "0.2", "--data", data, "--json").Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("run took %s", time.Since(runStart))
	var res app.RunResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Events < 100_000 {
		t.Fatalf("the session has %d events, want at least 100,000", res.Events)
	}
	page := filepath.Join(artifactDir(t), "support-desk-bench-100k.html")
	start := time.Now()
	cmd := exec.Command(bin, "report", res.Session, "--data", data, "-o", page)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, msg)
	}
	took := time.Since(start)
	st, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report of %d events: %d bytes in %s", res.Events, st.Size(), took)
	if st.Size() > 3<<20 {
		t.Errorf("the page is %d bytes, want at most 3 MiB", st.Size())
	}
	if took > 60*time.Second {
		t.Errorf("the report took %s, want well under a minute", took)
	}
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, src)
	for _, s := range regexp.MustCompile(`(?s)<polyline class="series".*?points="([^"]*)"`).FindAllSubmatch(src, -1) {
		if n := len(bytes.Fields(s[1])); n > 2*(2*300+2) {
			t.Errorf("a series has %d vertices, want the downsampled bound %d", n, 2*(2*300+2))
		}
	}
	browserStart := time.Now()
	checkInBrowser(t, page)
	t.Logf("browser checks took %s", time.Since(browserStart))
}
