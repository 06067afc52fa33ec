package resume_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/junit"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/resume"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

func parse(t *testing.T, args ...string) *config.Config {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := config.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(repoRoot(), time.Date(2026, 11, 29, 21, 48, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return c
}

// Differences names each setting that differs, or that only one side
// records, with both values; equal settings give none.
func TestDifferences(t *testing.T) {
	run := map[string]string{"-mode": "none", "-duration-scale": "1", "-repeats": "1", "old": "x"}
	if d := resume.Differences(run, run); len(d) != 0 {
		t.Fatalf("equal settings differ: %v", d)
	}
	now := map[string]string{"-mode": "sidecar", "-duration-scale": "1", "-repeats": "", "new": "y"}
	want := []string{
		`-mode: the run has none, this invocation sidecar`,
		`-repeats: the run has 1, this invocation ""`,
		`new: the run has (not recorded), this invocation y`,
		`old: the run has x, this invocation (not recorded)`,
	}
	if got := resume.Differences(run, now); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	err := resume.Refusal("results/r1", want)
	if !strings.Contains(err.Error(), "differs from the run it would continue in 4 setting(s)") || !strings.Contains(err.Error(), filepath.Join("results/r1", resume.File)) {
		t.Fatalf("refusal: %v", err)
	}
}

// What decides a measurement is compared; what only places or gates the
// output is not. The same modes written two ways are the same run, a
// claims file copied elsewhere is the same claims, and one changed by a
// byte is not.
func TestDecides(t *testing.T) {
	sel := spec.Selection{}
	base := resume.Decides(parse(t, "-mode=all", "-provider=local"), sel, repoRoot())
	same := []string{"-mode=none,sidecar,ambient-l4,ambient-l7", "-provider=local", "-results=" + t.TempDir(), "-run-id=other", "-evidence-max=3", "-keep-cluster", "-cluster-name=other"}
	if d := resume.Differences(base, resume.Decides(parse(t, same...), sel, repoRoot())); len(d) != 0 {
		t.Errorf("%v: %v; want no difference", same, d)
	}
	for flagArg, key := range map[string]string{
		"-duration-scale=0.5":   "-duration-scale",
		"-repeats=3":            "-repeats",
		"-sequential=false":     "-sequential",
		"-fail-on=error":        "-fail-on",
		"-istio-version=1.30.3": "-istio-version",
		"-istio-tag=1.30.2-x":   "-istio-tag",
		"-rollout-timeout=2m":   "timeout RolloutComplete",
	} {
		d := resume.Differences(base, resume.Decides(parse(t, "-mode=all", "-provider=local", flagArg), sel, repoRoot()))
		if len(d) != 1 || !strings.HasPrefix(d[0], key+": ") {
			t.Errorf("%s: %v; want one difference, %s", flagArg, d, key)
		}
	}
	if d := resume.Differences(base, resume.Decides(parse(t, "-mode=all", "-provider=local"), spec.Selection{LabelFilter: "area:latency"}, repoRoot())); len(d) != 1 || !strings.HasPrefix(d[0], "-ginkgo.label-filter: ") {
		t.Errorf("label filter: %v", d)
	}

	claimsFile, err := os.ReadFile(filepath.Join(repoRoot(), "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "claims.yaml")
	os.WriteFile(copied, claimsFile, 0o644)
	if d := resume.Differences(base, resume.Decides(parse(t, "-mode=all", "-provider=local", "-claims="+copied), sel, repoRoot())); len(d) != 0 {
		t.Errorf("the same claims elsewhere: %v", d)
	}
	os.WriteFile(copied, append(claimsFile, '\n'), 0o644)
	if d := resume.Differences(base, resume.Decides(parse(t, "-mode=all", "-provider=local", "-claims="+copied), sel, repoRoot())); len(d) != 1 || !strings.HasPrefix(d[0], "-claims: ") {
		t.Errorf("changed claims: %v", d)
	}
	// An existing cluster is the API server its context points at, read
	// from the kubeconfig: the same context name pointing elsewhere
	// differs, the same server in another file does not.
	kubeconfig := func(server string) string {
		p := filepath.Join(t.TempDir(), "kubeconfig")
		os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "+server+
			"\ncontexts:\n- name: qual\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: qual\n"), 0o600)
		return p
	}
	existing := func(kc string) map[string]string {
		return resume.Decides(parse(t, "-mode=all", "-provider=existing", "-kubeconfig="+kc, "-context=qual"), sel, repoRoot())
	}
	first := existing(kubeconfig("https://10.0.0.1:6443"))
	if got := first["cluster"]; got != "API server https://10.0.0.1:6443" {
		t.Errorf("cluster %q", got)
	}
	if d := resume.Differences(first, existing(kubeconfig("https://10.0.0.1:6443"))); len(d) != 0 {
		t.Errorf("the same API server in another kubeconfig: %v", d)
	}
	if d := resume.Differences(first, existing(kubeconfig("https://10.0.0.2:6443"))); len(d) != 1 ||
		d[0] != "cluster: the run has API server https://10.0.0.1:6443, this invocation API server https://10.0.0.2:6443" {
		t.Errorf("another API server: %v", d)
	}
	if v := base["suite version"]; !strings.HasPrefix(v, "commit ") && !strings.HasPrefix(v, "unknown") {
		t.Errorf("suite version %q", v)
	}
}

func planned(claim string, m mode.Mode) spec.Planned {
	return spec.Planned{Claim: &claims.Claim{ID: claim, Title: "title of " + claim}, Mode: m, Def: spec.Def{Area: "area"}}
}

// Split keeps the selection's order and puts each spec on the side its
// record says; a record of a spec the selection does not hold changes
// nothing.
func TestSplit(t *testing.T) {
	sel := []spec.Planned{planned("a", mode.None), planned("a", mode.Sidecar), planned("b", mode.None), planned("c", mode.None)}
	measured := map[string]resume.Earlier{
		loadplan.Key("a", mode.Sidecar): {}, loadplan.Key("c", mode.None): {}, loadplan.Key("z", mode.None): {},
	}
	toRun, done := resume.Split(sel, measured)
	names := func(ps []spec.Planned) string {
		var s []string
		for _, p := range ps {
			s = append(s, loadplan.Key(p.Claim.ID, p.Mode))
		}
		return strings.Join(s, ", ")
	}
	if names(toRun) != "a [none], b [none]" || names(done) != "a [sidecar], c [none]" {
		t.Fatalf("to run %s; done %s", names(toRun), names(done))
	}
	if toRun, done := resume.Split(sel, nil); len(toRun) != 4 || len(done) != 0 {
		t.Fatalf("nothing measured: %d to run, %d done", len(toRun), len(done))
	}
}

// Measured attributes each record to the part running when it was
// written; Continue gives the last part its end and cluster from an
// environment written after it began (not from an older one), counts
// every part's records, and appends the new part.
func TestMeasuredAndContinue(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if err := resume.Begin(dir, "r1", map[string]string{"-mode": "none"}, t0); err != nil {
		t.Fatal(err)
	}
	d, _ := report.Create(dir)
	write := func(claim string, at time.Time) {
		if err := d.Record(report.Record{Claim: claim, Mode: mode.None}); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(dir, "measured", claim+"__none.json"), at, at)
	}
	write("a", t0.Add(time.Minute))
	write("b", t0.Add(2*time.Minute))
	run, err := resume.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	measured, err := resume.Measured(dir, run.Parts)
	if err != nil || len(measured) != 2 || measured["a [none]"].Part != 0 || measured["a [none]"].File != filepath.Join("measured", "a__none.json") {
		t.Fatalf("measured: %+v, %v", measured, err)
	}
	env := &report.Environment{Started: t0.Add(time.Second), Finished: t0.Add(3 * time.Minute), Cluster: "https://127.0.0.1:6443", Kubernetes: "v1.36.3"}
	t1 := t0.Add(time.Hour)
	run.Continue(env, measured, t1)
	p := run.Parts
	if len(p) != 2 || p[0].Cluster != env.Cluster || !p[0].Finished.Equal(env.Finished) || p[0].Measured != 2 || !p[0].LastRecord.Equal(t0.Add(2*time.Minute)) || !p[1].Started.Equal(t1) {
		t.Fatalf("after the first resume: %+v", p)
	}
	if err := run.Save(dir); err != nil {
		t.Fatal(err)
	}
	// The second part is killed before its set-up writes environment.json
	// but after it measured c: the environment is still the first part's.
	write("c", t1.Add(time.Minute))
	run, _ = resume.Open(dir)
	measured, _ = resume.Measured(dir, run.Parts)
	if measured["c [none]"].Part != 1 || measured["b [none]"].Part != 0 {
		t.Fatalf("parts of the records: %+v", measured)
	}
	run.Continue(env, measured, t1.Add(time.Hour))
	p = run.Parts
	if len(p) != 3 || p[1].Cluster != "" || !p[1].Finished.IsZero() || p[1].Measured != 1 || p[0].Measured != 2 || !p[1].LastRecord.Equal(t1.Add(time.Minute)) {
		t.Fatalf("after the second resume: %+v", p)
	}
	if e := run.Earlier(); len(e) != 2 {
		t.Fatalf("earlier parts: %+v", e)
	}
	text := report.Resumed(report.Environment{Parts: run.Earlier(), Started: t1.Add(time.Hour), Cluster: "https://127.0.0.1:7443"})
	for _, w := range []string{"made in 3 parts", "part 1: started 2026-12-01 10:00:00Z, ended 2026-12-01 10:03:00Z, on cluster https://127.0.0.1:6443 (Kubernetes v1.36.3), 2 specs measured",
		"part 2: started 2026-12-01 11:00:00Z, killed (no clean end; its last record at 2026-12-01 11:01:00Z), on cluster -, 1 specs measured",
		"part 3 (the last): started 2026-12-01 12:00:00Z, on cluster https://127.0.0.1:7443"} {
		if !strings.Contains(text, w) {
			t.Errorf("report's resumed text lacks %q:\n%s", w, text)
		}
	}
}

// Open refuses what is not a run's results directory, naming what is
// missing.
func TestOpenRefuses(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	older := filepath.Join(root, "older")
	os.Mkdir(older, 0o755)
	os.WriteFile(filepath.Join(older, "environment.json"), []byte("{}"), 0o644)
	other := filepath.Join(root, "other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o644)
	schema := filepath.Join(root, "schema")
	os.Mkdir(schema, 0o755)
	os.WriteFile(filepath.Join(schema, resume.File), []byte(`{"schema":99}`), 0o644)
	for dir, want := range map[string]string{
		filepath.Join(root, "absent"): "no such directory",
		file:                          "is a file, not a results directory",
		empty:                         "holds no run.json (the record a live run writes when it claims its results directory): it is empty: the run stopped before it claimed the directory",
		older:                         "holds environment.json but no run record",
		other:                         "it is not a meshclaims results directory",
		schema:                        "run.json has schema 99",
	} {
		if _, err := resume.Open(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", filepath.Base(dir), err, want)
		}
	}
}

// The JUnit report of a resumed run holds each spec an earlier part
// measured with its recorded verdict (passed, or failed under -fail-on),
// whether Ginkgo reported it as skipped or not at all; junit.Check reads
// every verdict. A spec that ran in this part is left as it is.
func TestWithEarlierGivesJUnitTheRecordedVerdicts(t *testing.T) {
	reg, err := claims.Load(filepath.Join(repoRoot(), "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ps []spec.Planned
	for _, id := range []string{"latency.percentiles", "netpol.app-port-only"} {
		c, ok := reg.Get(id)
		if !ok {
			t.Fatalf("claim %s", id)
		}
		ps = append(ps, spec.Planned{Claim: c, Mode: mode.None, Def: spec.Def{Area: strings.Split(id, ".")[0]}})
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	measured := map[string]resume.Earlier{
		"latency.percentiles [none]":  {Record: report.Record{Claim: "latency.percentiles", Mode: mode.None, Measurement: verdict.Measurement{Unmet: "planted: no load"}}, File: "measured/latency.percentiles__none.json", At: at},
		"netpol.app-port-only [none]": {Record: report.Record{Claim: "netpol.app-port-only", Mode: mode.None, Measurement: verdict.Measurement{Unmet: "planted: none"}}, File: "measured/netpol.app-port-only__none.json", At: at},
	}
	judged := resume.Judge(ps, measured, config.FailOnError)
	if len(judged) != 2 || len(resume.Failures(judged)) != 2 {
		t.Fatalf("judged %d, failures %v; want both failing (a missing precondition fails under any -fail-on)", len(judged), resume.Failures(judged))
	}
	skipped := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: ps[0].Name(), LeafNodeLabels: append(ps[0].Labels(), spec.LabelMeasured), State: types.SpecStateSkipped,
		ContainerHierarchyTexts: []string{"latency"}}
	ran := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "other [none]", LeafNodeLabels: []string{"claim:other", "mode:none"}, State: types.SpecStateSkipped}
	r := types.Report{SuiteDescription: "meshclaims none", SpecReports: types.SpecReports{skipped, ran}}
	out := resume.WithEarlier(r, judged, config.FailOnError)
	if r.SpecReports[0].State != types.SpecStateSkipped {
		t.Fatal("WithEarlier changed its input")
	}
	if len(out.SpecReports) != 3 || out.SpecReports[1].State != types.SpecStateSkipped {
		t.Fatalf("specs: %d, the other's state %v; want 3 (one added) and the other untouched", len(out.SpecReports), out.SpecReports[1].State)
	}
	for _, i := range []int{0, 2} {
		sr := out.SpecReports[i]
		if sr.State != types.SpecStateFailed || spec.VerdictOf(sr) == nil || !strings.Contains(sr.CapturedStdOutErr, "measured in part 1 of this run") || !strings.Contains(sr.Failure.Message, "precondition not met: planted") {
			t.Errorf("spec %d: state %v, verdict %v, out %q, failure %q", i, sr.State, spec.VerdictOf(sr), sr.CapturedStdOutErr, sr.Failure.Message)
		}
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := junit.Write(out, path); err != nil {
		t.Fatal(err)
	}
	if n, err := junit.Check(path); err != nil || n != 2 {
		t.Fatalf("junit.Check: %d with a verdict, %v; want 2", n, err)
	}
}

// Images keys each image by where it came from and its reference, not by
// the pod's name (new in every part); only an image both parts used is
// compared.
func TestImageDifferences(t *testing.T) {
	env := func(pod, id string) report.Environment {
		return report.Environment{Notes: []string{"workload image meshclaims/workload:dev, config digest sha256:aa"}, Images: []report.ImageRan{
			{Where: "pod istio-system/istiod-" + pod + "/discovery", Image: "docker.io/istio/pilot:1.30.2", ID: id},
			{Where: "archive pilot.tar", Image: "localhost/istio/pilot:1.30.3-dev", ID: "sha256:cc"},
		}}
	}
	first := resume.Images(env("abc", "sha256:11"), "meshclaims/workload:dev")
	if d := resume.ImageDifferences(first, resume.Images(env("xyz", "sha256:11"), "meshclaims/workload:dev")); len(d) != 0 {
		t.Fatalf("the same images in other pods: %v", d)
	}
	d := resume.ImageDifferences(first, resume.Images(env("xyz", "sha256:22"), "meshclaims/workload:dev"))
	if len(d) != 1 || d[0] != "image docker.io/istio/pilot:1.30.2 (pod): the run had sha256:11, this part sha256:22" {
		t.Fatalf("another image ID: %v", d)
	}
	other := env("xyz", "sha256:11")
	other.Notes = []string{"workload image meshclaims/workload:dev, config digest sha256:bb"}
	other.Images = other.Images[:1]
	if d := resume.ImageDifferences(first, resume.Images(other, "meshclaims/workload:dev")); len(d) != 1 || !strings.HasPrefix(d[0], "workload image built: ") {
		t.Fatalf("another workload build: %v", d)
	}
}

// A spec an interrupt cut short runs again even when it wrote a record;
// a later record of it (a part that ran it to its end) stands, and so
// does every record of a spec never cut.
func TestCutSpecsRunAgain(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if err := resume.Begin(dir, "r1", map[string]string{"-mode": "none"}, t0); err != nil {
		t.Fatal(err)
	}
	d, _ := report.Create(dir)
	write := func(claim string, at time.Time) {
		if err := d.Record(report.Record{Claim: claim, Mode: mode.None}); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(dir, "measured", claim+"__none.json"), at, at)
	}
	write("a", t0.Add(time.Minute))
	write("b", t0.Add(2*time.Minute))
	if err := resume.MarkCut(dir, "b [none]", t0.Add(2*time.Minute+time.Second)); err != nil {
		t.Fatal(err)
	}
	left := func() string {
		run, err := resume.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		measured, err := resume.Measured(dir, run.Parts)
		if err != nil {
			t.Fatal(err)
		}
		toRun, _ := resume.Split([]spec.Planned{planned("a", mode.None), planned("b", mode.None)}, run.Uncut(measured))
		var s []string
		for _, p := range toRun {
			s = append(s, loadplan.Key(p.Claim.ID, p.Mode))
		}
		return strings.Join(s, ", ")
	}
	if got := left(); got != "b [none]" {
		t.Fatalf("after b was cut short, left to run: %q; want b [none]", got)
	}
	write("b", t0.Add(time.Hour))
	if got := left(); got != "" {
		t.Fatalf("after a later part measured b, left to run: %q; want none", got)
	}
	if err := resume.MarkCut(t.TempDir(), "b [none]", t0); err == nil {
		t.Fatal("MarkCut in a directory without run.json: no error")
	}
}
