package all

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/junit"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/resume"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// -resume as a user runs it: the e2e binary with -provider=existing against
// a real API server. The first part is a real live run that claims its
// results directory and stops at the NetworkPolicy enforcer check (envtest
// runs no CNI), before any cluster write. Continuing it with another
// -mode or -duration-scale, from a directory without a run record, or
// with -overwrite is refused with exit 2, naming what differs, and leaves
// the directory as it was; the same invocation (the control) is accepted:
// it goes on to set-up, counts the spec the directory already holds a
// record of as measured, skips it, and the report, environment, run
// record and JUnit say the run was resumed.
func TestResumeRefusesAnotherRunAndContinuesTheSame(t *testing.T) {
	bin := e2eBinary(t)
	srv := apiserver.NewForTest(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kc, "envtest"); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	runDir := filepath.Join(results, "first")
	base := []string{"-mode=none", "-provider=existing", "-kubeconfig=" + kc, "-context=envtest", "-duration-scale=0.05", "-fail-on=error"}
	exec1 := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: exit %d after %v", args[len(base):], code, time.Since(start).Round(time.Millisecond))
		return string(out), code
	}

	// The first part: a live run that claims the directory, then stops
	// at its first cluster check.
	out, code := exec1(t, append(base, "-results="+results, "-run-id=first")...)
	if code == 0 || !strings.Contains(out, "this cluster shows no enforcer") {
		t.Fatalf("first part: exit %d, want the enforcer check's failure:\n%s", code, lastLinesOf(out, 30))
	}
	first, err := resume.Open(runDir)
	if err != nil {
		t.Fatalf("the first part left no run record: %v", err)
	}
	for k, want := range map[string]string{"-mode": "none", "-duration-scale": "0.05", "-provider": "existing", "-fail-on": "error"} {
		if got := first.Decides[k]; got != want {
			t.Errorf("run.json %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"-claims", "suite version", "go", "timeout RolloutComplete"} {
		if first.Decides[k] == "" {
			t.Errorf("run.json records no %q: %v", k, first.Decides)
		}
	}
	// A record of one selected spec, as an earlier part writes it as
	// the spec ends: the resumed part must not run it again.
	d := &report.Dir{Path: runDir}
	planted := report.Record{Claim: "latency.percentiles", Mode: mode.None, Measurement: verdict.Measurement{Unmet: "planted: a record of the first part"}}
	if err := d.Record(planted); err != nil {
		t.Fatal(err)
	}
	snapshot := dirSnapshot(t, runDir)

	refusals := []struct {
		name string
		args []string
		want []string
	}{
		{"another mode", []string{"-mode=sidecar", "-resume=" + runDir},
			[]string{"differs from the run it would continue", "-mode: the run has none, this invocation sidecar"}},
		{"another duration scale", []string{"-duration-scale=0.1", "-resume=" + runDir},
			[]string{"-duration-scale: the run has 0.05, this invocation 0.1"}},
		{"another label filter", []string{"-resume=" + runDir, "-ginkgo.label-filter=area:latency"},
			[]string{`-ginkgo.label-filter: the run has "", this invocation area:latency`}},
		{"with -overwrite", []string{"-resume=" + runDir, "-overwrite"},
			[]string{"with -overwrite: -overwrite deletes the results directory a resumed run continues"}},
		{"with another -run-id", []string{"-resume=" + runDir, "-run-id=second"},
			[]string{`-run-id="second": the resumed run's id is its directory's name, "first"`}},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			out, code := exec1(t, append(append([]string{}, base...), c.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2:\n%s", code, lastLinesOf(out, 30))
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, lastLinesOf(out, 30))
				}
			}
			if strings.Contains(out, "set-up:") {
				t.Errorf("a refused resume began its set-up:\n%s", lastLinesOf(out, 30))
			}
			if after := dirSnapshot(t, runDir); after != snapshot {
				t.Errorf("a refused resume changed the directory:\nbefore %s\nafter  %s", snapshot, after)
			}
		})
	}
	t.Run("a directory without a run record", func(t *testing.T) {
		noRecord := filepath.Join(results, "older")
		if err := os.MkdirAll(noRecord, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(noRecord, "environment.json"), []byte(`{"run_id":"older"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := exec1(t, append(append([]string{}, base...), "-resume="+noRecord)...)
		if code != 2 || !strings.Contains(out, "holds no run.json") || !strings.Contains(out, "holds environment.json but no run record") {
			t.Errorf("exit %d:\n%s", code, lastLinesOf(out, 30))
		}
		if b, _ := os.ReadFile(filepath.Join(noRecord, "environment.json")); string(b) != `{"run_id":"older"}` {
			t.Errorf("the directory was touched: %q", b)
		}
	})

	// The control: the same invocation is accepted and continues the run.
	t.Run("the same invocation continues the run", func(t *testing.T) {
		out, code := exec1(t, append(append([]string{}, base...), "-resume="+runDir)...)
		if code == 0 || code == 2 {
			t.Fatalf("exit %d, want the first part's own failure (1):\n%s", code, lastLinesOf(out, 40))
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "resume") || strings.Contains(l, "set-up") || strings.Contains(l, "finished") {
				t.Logf("| %s", l)
			}
		}
		for _, w := range []string{
			"resume: part 2 of run first",
			"1 of the 18 selected specs were measured in earlier parts and are not run again; 17 to run",
			"resume: latency.percentiles [none] inconclusive, measured in part 1 of this run (record measured/latency.percentiles__none.json",
			"set-up: cluster",
			"this cluster shows no enforcer",
			"1 spec(s) measured in earlier parts of this run fail under -fail-on=error",
			"resumed: the report and junit.xml also hold the 1 specs measured in earlier parts (verdicts: 1 inconclusive)",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("output does not say %q:\n%s", w, lastLinesOf(out, 60))
			}
		}
		run, err := resume.Open(runDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Parts) != 2 || run.Parts[0].Cluster != srv.Config.Host || !strings.Contains(run.Parts[0].SetupError, "no enforcer") || run.Parts[0].Finished.IsZero() {
			t.Errorf("run.json's parts: %+v; want the first with its cluster %s, its end and its set-up error, and a second", run.Parts, srv.Config.Host)
		}
		env, err := d.LoadEnvironment()
		if err != nil {
			t.Fatal(err)
		}
		if len(env.Parts) != 1 || !env.Parts[0].Started.Equal(run.Parts[0].Started) || !env.Started.After(env.Parts[0].Started) {
			t.Errorf("environment.json's parts: %+v (started %v); want the first part's", env.Parts, env.Started)
		}
		md, err := os.ReadFile(filepath.Join(runDir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), "| resumed | resumed: the run was made in 2 parts (-resume); part 1: started ") || !strings.Contains(string(md), "on cluster "+srv.Config.Host) {
			t.Errorf("report.md does not say the run was resumed:\n%s", md)
		}
		res, err := report.LoadResults(filepath.Join(runDir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Entries) != 1 || res.Entries[0].Claim != "latency.percentiles" || len(res.Environment.Parts) != 1 {
			t.Errorf("results.json: %d entries, %d parts; want the first part's record and part", len(res.Entries), len(res.Environment.Parts))
		}
		judged, err := junit.Check(filepath.Join(runDir, "junit.xml"))
		if err != nil || judged != 1 {
			t.Errorf("junit.xml: %d specs with a verdict, %v; want the first part's one", judged, err)
		}
		b, _ := os.ReadFile(filepath.Join(runDir, "junit.xml"))
		if !strings.Contains(string(b), "measured in part 1 of this run") {
			t.Errorf("junit.xml does not say where the earlier spec was measured")
		}
	})
}

// dirSnapshot is every file under dir with its content digest, one string.
func dirSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var parts []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		parts = append(parts, fmt.Sprintf("%s=%x", rel, sha256.Sum256(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(parts, " ")
}

// unreachableKubeconfig is a kubeconfig whose one context, "none", points
// at a loopback port nothing listens on (1, 2: privileged, unused): a live run on it claims its
// results directory and stops at its first cluster read, having written
// nothing anywhere else.
func unreachableKubeconfig(t *testing.T, port int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:%d\n", port) +
		"contexts:\n- name: none\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: none\n"
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// plannedClaims are the claims a plan lists (its "  claim: ..." and
// "  claim; ..." lines under a mode).
func plannedClaims(out string) map[string]bool {
	got := map[string]bool{}
	inMode := false
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, " ") {
			inMode = strings.HasPrefix(l, "mode ")
		}
		if !inMode || !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") {
			continue
		}
		if i := strings.IndexAny(l, ":;"); i > 2 && !strings.Contains(l[2:i], " ") {
			got[l[2:i]] = true
		}
	}
	return got
}

// -plan and -ginkgo.dry-run with -resume look and write nothing: the plan
// of a resumed run lists only the specs without a measured record (the
// same invocation without -resume, the control, lists them all), the dry
// run runs only those, and a differing -duration-scale or -mode is
// refused with exit 2, both values named, the directory unchanged.
func TestResumedPlanListsOnlyTheSpecsLeft(t *testing.T) {
	bin := e2eBinary(t)
	results := filepath.Join(t.TempDir(), "results")
	runDir := filepath.Join(results, "first")
	base := []string{"-mode=none", "-provider=existing", "-kubeconfig=" + unreachableKubeconfig(t, 1), "-context=none", "-duration-scale=0.05"}
	run := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), bin, append(append([]string{}, base...), args...)...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := run(t, "-results="+results, "-run-id=first")
	if code != 1 || !strings.Contains(out, "connection refused") {
		t.Fatalf("first part: exit %d, want its set-up's failure at the first cluster read:\n%s", code, lastLinesOf(out, 30))
	}
	if _, err := resume.Open(runDir); err != nil {
		t.Fatalf("the first part left no run record: %v", err)
	}
	d := &report.Dir{Path: runDir}
	for _, c := range []string{"rollout.baseline", "conntrack.table-full"} {
		if err := d.Record(report.Record{Claim: c, Mode: mode.None, Measurement: verdict.Measurement{Unmet: "planted: a record of the first part"}}); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := dirSnapshot(t, runDir)
	unchanged := func(t *testing.T) {
		t.Helper()
		if after := dirSnapshot(t, runDir); after != snapshot {
			t.Errorf("the directory changed:\nbefore %s\nafter  %s", snapshot, after)
		}
	}

	full, code := run(t, "-plan")
	if code != 0 {
		t.Fatalf("-plan: exit %d\n%s", code, full)
	}
	all := plannedClaims(full)
	if !all["rollout.baseline"] || !all["conntrack.table-full"] || !all["rollout.hardened"] || len(all) != 18 {
		t.Fatalf("the control, -plan without -resume, lists %d claims %v; want the 18 of mode none", len(all), all)
	}

	t.Run("plan", func(t *testing.T) {
		out, code := run(t, "-plan", "-resume="+runDir)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		left := plannedClaims(out)
		if left["rollout.baseline"] || left["conntrack.table-full"] || !left["rollout.hardened"] || len(left) != 16 {
			t.Errorf("the resumed plan lists %d claims %v; want the 16 without a record", len(left), left)
		}
		for _, w := range []string{
			"resume: run first (begun ",
			"2 of the 18 selected specs have a measured record and are not run again; the plan lists the 16 planned specs without one",
			"plan: -mode=none -duration-scale=0.05, 16 specs",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("the resumed plan does not say %q:\n%s", w, lastLinesOf(out, 40))
			}
		}
		unchanged(t)
	})
	t.Run("dry run", func(t *testing.T) {
		out, code := run(t, "-ginkgo.dry-run", "-resume="+runDir)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, lastLinesOf(out, 30))
		}
		if !strings.Contains(out, "Will run 16 of 18 specs") || strings.Contains(out, ": rollout.baseline [none]") || !strings.Contains(out, ": rollout.hardened [none]") {
			t.Errorf("the resumed dry run does not run only the 16 specs left:\n%s", lastLinesOf(out, 60))
		}
		unchanged(t)
	})
	for _, c := range []struct{ arg, want string }{
		{"-duration-scale=0.1", "-duration-scale: the run has 0.05, this invocation 0.1"},
		{"-mode=none,sidecar", "-mode: the run has none, this invocation none,sidecar"},
		{"-kubeconfig=" + unreachableKubeconfig(t, 2), "cluster: the run has API server https://127.0.0.1:1, this invocation API server https://127.0.0.1:2"},
	} {
		t.Run("refused "+strings.SplitN(c.arg, "=", 2)[0], func(t *testing.T) {
			out, code := run(t, "-plan", "-resume="+runDir, c.arg)
			if code != 2 || !strings.Contains(out, c.want) || strings.Contains(out, "plan: ") {
				t.Errorf("exit %d, want 2 naming %q and no plan:\n%s", code, c.want, lastLinesOf(out, 20))
			}
			unchanged(t)
		})
	}
}
