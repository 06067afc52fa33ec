package report_test

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/report/reporttest"
)

// noneRun is a real local none-mode run, rebuilt, shared by the HTML tests
// (the loads take a few seconds); TestMain removes it.
var noneRunDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if noneRunDir != "" {
		os.RemoveAll(filepath.Dir(noneRunDir))
	}
	os.Exit(code)
}

func noneRun(t *testing.T) string {
	t.Helper()
	if noneRunDir != "" {
		return noneRunDir
	}
	dir, err := os.MkdirTemp("", "meshclaims-report-html-")
	if err != nil {
		t.Fatal(err)
	}
	d := reporttest.NoneRun(t, filepath.Join(dir, "run"), reporttest.Run{ID: "html-none", BaselineAbrupt: true, RolloutStatus: "503:3"})
	if _, err := d.Rebuild(claimstest.Registry(t)); err != nil {
		t.Fatal(err)
	}
	noneRunDir = d.Path
	return d.Path
}

// externalRef finds src/href/url() that would fetch or open anything not
// beside the report: a scheme-qualified or protocol-relative address.
var externalRef = regexp.MustCompile(`(?i)(?:src|href|xlink:href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)|url\(\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)`)

func TestHTMLReportOfARealNoneRun(t *testing.T) {
	dir := noneRun(t)
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<meta http-equiv="Content-Security-Policy" content="` + html.EscapeString(report.ContentSecurityPolicy) + `">`,
		`<table id="decision-summary">`,
		`<a href="#claim-latency.all-ok"><code>latency.all-ok</code></a>`, // summary row links to the claim's section
		`<section id="claim-latency.all-ok">`,
		`<a href="#rollout.baseline--none">`, // summary cell links to the mode's row
		`<tr id="rollout.baseline--none">`,
		`<figure id="fig-latency.percentiles--none">`,
		`<figure id="fig-rollout.baseline--none--rollout-none-baseline">`,
		`<figure id="fig-rollout.hardened--none--rollout-none-prestop-grace">`,
		`href="raw/rollout.baseline__none__rollout-none-baseline.timeline.json"`,
		`href="results.json"`,
		"latency (ms, log scale)",
		"documented P50…P99.9", // documented percentiles marked on the CDF
		"errors in the cycle (503, -1)",
		"-1 reset", // the abrupt baseline's resets, by cause
		">503<",    // and its injected 503s, placed in time (legend)
		"cycle start",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(page, `id="not-drawn"`) {
		i := strings.Index(page, `id="not-drawn"`)
		t.Errorf("report.html could not draw something: %.600s", page[i:])
	}
	if n := strings.Count(page, "<svg"); n != 3 {
		t.Errorf("%d inline SVG plots, want 3 (one latency CDF, two rollout timelines)", n)
	}
	if m := externalRef.FindAllString(page, -1); len(m) > 0 {
		t.Errorf("report.html refers outside itself: %q", m)
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("report.html has a script")
	}
}

// Negative control for the self-containment check: it fires on the
// references a careless edit would add.
func TestExternalRefDetectorFires(t *testing.T) {
	for _, bad := range []string{`<img src="https://cdn.example/x.png">`, `<link href='//fonts.example/css'>`,
		`<a href="http://other.host/raw">`, `style="background:url(https://x)"`, `<use xlink:href="http://x/#a"/>`} {
		if !externalRef.MatchString(bad) {
			t.Errorf("not caught: %s", bad)
		}
	}
	for _, ok := range []string{`<a href="raw/x.json">`, `<a href="#claim-a">`, `xmlns="http://www.w3.org/2000/svg"`} {
		if externalRef.MatchString(ok) {
			t.Errorf("false alarm: %s", ok)
		}
	}
}

// The no-mesh baseline of the same run is drawn beside a mesh mode's CDF.
// (Modes other than none cannot be produced without a cluster; the second
// mode here is a copy of the none record relabelled, which is enough to
// test the pairing, and says so in its setup.)
func TestHTMLDrawsTheNoMeshBaselineBeside(t *testing.T) {
	src := noneRun(t)
	d, err := report.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := d.Records()
	if err != nil {
		t.Fatal(err)
	}
	res, err := report.Judge(mustEnv(t, d), recs, claimstest.Registry(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Entries {
		if e.Claim == "latency.percentiles" {
			e.Mode = "sidecar"
			e.Setup = "the none record relabelled, to test the pairing"
			res.Entries = append(res.Entries, e)
			break
		}
	}
	res.Environment.Modes = append(res.Environment.Modes, "sidecar")
	var b strings.Builder
	if err := report.HTML(&b, src, res, claimstest.Registry(t)); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	i := strings.Index(html, `<figure id="fig-latency.percentiles--sidecar">`)
	if i < 0 {
		t.Fatal("no sidecar latency figure")
	}
	fig := html[i : i+strings.Index(html[i:], "</figure>")]
	if !strings.Contains(fig, "none (no-mesh baseline)") {
		t.Error("sidecar CDF lacks the no-mesh baseline curve")
	}
	j := strings.Index(html, `<figure id="fig-latency.percentiles--none">`)
	if j < 0 {
		t.Fatal("no none latency figure")
	}
	if own := html[j : j+strings.Index(html[j:], "</figure>")]; strings.Contains(own, "no-mesh baseline") {
		t.Error("the none CDF draws itself again as its own baseline")
	}
}

func mustEnv(t *testing.T, d *report.Dir) report.Environment {
	t.Helper()
	env, err := d.LoadEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// Fields others add to Environment appear in the report without a template
// change; the known ones are not repeated.
func TestOtherEnvironmentFieldsShown(t *testing.T) {
	var b strings.Builder
	res := &report.Results{Environment: report.Environment{RunID: "x", Provider: "kind", Istio: "1.29.0"}}
	if err := report.HTML(&b, t.TempDir(), res, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "<th>provider</th>") != 1 || strings.Contains(b.String(), "<th>run_id</th>") {
		t.Errorf("known fields repeated:\n%s", b.String())
	}
}

// Durations are shown as durations, not as the nanoseconds environment.json
// stores (planned_ns 147500000000, set_up_ns 16534000000).
func TestEnvironmentDurationsReadable(t *testing.T) {
	var b strings.Builder
	start := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	res := &report.Results{Environment: report.Environment{RunID: "x", Provider: "kind", Started: start, Finished: start.Add(408 * time.Second),
		Planned: 147500 * time.Millisecond, SetUp: 16534 * time.Millisecond}}
	if err := report.HTML(&b, t.TempDir(), res, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<th>wall time, planned / actual</th><td>2m28s / 6m48s (plan.txt)</td>", "<th>suite set-up</th><td>17s</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, raw := range []string{"147500000000", "16534000000", "planned_ns", "set_up_ns"} {
		if strings.Contains(page, raw) {
			t.Errorf("report.html shows %q raw", raw)
		}
	}
}

// A run on a cluster it did not create states its inventories' summary
// in both reports under a name, with a link to the file beside them, not
// as a raw environment.json key.
func TestClusterInventoryStated(t *testing.T) {
	sum := "350 objects of 82 resource types before the run, 350 after; 0 foreign objects changed by others than the cluster's own components; 0 removed; 0 of the run's left"
	res := &report.Results{Environment: report.Environment{RunID: "x", Provider: "existing", ClusterChanges: sum, ClusterChangesFile: "inventory-changes.json"}}
	var h strings.Builder
	if err := report.HTML(&h, t.TempDir(), res, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), `<th>cluster inventory, before and after</th><td>350 objects`) || !strings.Contains(h.String(), `<a href="inventory-changes.json">`) ||
		strings.Contains(h.String(), "cluster_changes") {
		t.Errorf("report.html does not state the inventory by name")
	}
	var m strings.Builder
	if err := report.Markdown(&m, res, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.String(), "| cluster inventory, before and after | 350 objects") {
		t.Errorf("report.md does not state the inventory:\n%s", m.String())
	}
	// Where the run created its cluster there is nothing to state.
	res.Environment.ClusterChanges, res.Environment.ClusterChangesFile = "", ""
	h.Reset()
	if err := report.HTML(&h, t.TempDir(), res, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.String(), "cluster inventory") {
		t.Errorf("a run without inventories states one")
	}
}
