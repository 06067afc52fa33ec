package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/report/reporttest"
)

// realRun writes and judges a real none-mode run (fortio on loopback).
func realRun(t *testing.T, path string, cfg reporttest.Run) string {
	t.Helper()
	reg, err := claims.Load(registry)
	if err != nil {
		t.Fatal(err)
	}
	d := reporttest.NoneRun(t, path, cfg)
	if _, err := d.Rebuild(reg); err != nil {
		t.Fatal(err)
	}
	return d.Path
}

func copyRun(t *testing.T, src, dst string, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(src, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if edit != nil {
		s = edit(s)
	}
	if err := os.WriteFile(filepath.Join(dst, "results.json"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Two real runs with known changes: OLD restarts its baseline backends
// abruptly (resets: -1s) and serves all 200; NEW restarts them gracefully
// (no -1: an improvement) and injects 10% 503s into the steady load (a
// regression of latency.all-ok). rollout.hardened is the same in both.
func TestDiffOfRealRuns(t *testing.T) {
	base := t.TempDir()
	old := realRun(t, filepath.Join(base, "old"), reporttest.Run{ID: "old", BaselineAbrupt: true})
	cur := realRun(t, filepath.Join(base, "new"), reporttest.Run{ID: "new", EchoStatus: "503:10"})

	code, out, errs := runCLI("diff", old, cur)
	if code != 0 {
		t.Fatalf("diff without --fail-on: exit %d, stderr %q", code, errs)
	}
	t.Logf("\n%s", out)
	code, js, errs := runCLI("diff", "--json", "--fail-on=regression", old, cur)
	if code != 1 || !strings.Contains(errs, "regression(s)") {
		t.Fatalf("--fail-on=regression with a regression: exit %d, stderr %q", code, errs)
	}
	var d report.Diff
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	got := map[string]report.Comparison{}
	for _, c := range d.Comparisons {
		got[c.Claim] = c
	}
	if c := got["latency.all-ok"]; c.Direction != report.Regression {
		t.Errorf("latency.all-ok with 10%% 503s injected: %+v", c)
	}
	if c := got["rollout.baseline"]; c.Direction != report.Improvement {
		t.Errorf("rollout.baseline abrupt -> graceful: %+v", c)
	}
	if c := got["rollout.hardened"]; c.Direction != report.NoChange {
		t.Errorf("rollout.hardened, graceful in both: %+v", c)
	}
	// Flipped verdicts come first.
	flippedDone := false
	for _, c := range d.Comparisons {
		if !c.Flipped {
			flippedDone = true
		} else if flippedDone {
			t.Errorf("flipped %s listed after an unflipped comparison", c.Claim)
		}
	}
	for _, want := range []string{"REGRESSION  latency.all-ok (none)", "IMPROVEMENT  rollout.baseline (none)", "no-response (-1) rate"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q", want)
		}
	}

	// Negative control: a run against an identical copy of itself is no
	// change at all, and --fail-on passes.
	same := copyRun(t, old, filepath.Join(base, "same"), nil)
	for _, fail := range []string{"--fail-on=regression", "--fail-on=change"} {
		code, out, errs := runCLI("diff", fail, old, same)
		if code != 0 || !strings.Contains(out, "0 regression(s), 0 improvement(s), 0 changed, 4 unchanged") {
			t.Errorf("identical runs %s: exit %d\n%s\n%s", fail, code, out, errs)
		}
	}

	// Refusals: another registry, another schema version.
	other := copyRun(t, old, filepath.Join(base, "other-registry"), func(s string) string {
		return strings.Replace(s, `"registry": "testdata/claims.yaml"`, `"registry": "other/claims.yaml"`, 1)
	})
	if code, _, errs := runCLI("diff", old, other); code != 2 || !strings.Contains(errs, `registry "testdata/claims.yaml", new run "old" with "other/claims.yaml"`) {
		t.Errorf("different registries: exit %d, stderr %q", code, errs)
	}
	v99 := copyRun(t, old, filepath.Join(base, "v99"), func(s string) string {
		return strings.Replace(s, `"schema_version": 1`, `"schema_version": 99`, 1)
	})
	if code, _, errs := runCLI("diff", old, v99); code != 2 || !strings.Contains(errs, "schema_version 99, this meshclaims reads 1") {
		t.Errorf("schema 99: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI("diff", "--fail-on=worse", old, cur); code != 2 || !strings.Contains(errs, "accepted: none, regression, change") {
		t.Errorf("bad --fail-on: exit %d, stderr %q", code, errs)
	}
}

// A results.json diff cannot read (broken, or of another schema) in a
// results directory: diff says that report rebuilds it, and after report
// the same diff compares. A results.json outside a results directory has
// no records to rebuild from, and gets no such advice.
func TestDiffOfABrokenRunSuggestsReport(t *testing.T) {
	base := t.TempDir()
	old := realRun(t, filepath.Join(base, "old"), reporttest.Run{ID: "old"})
	cur := realRun(t, filepath.Join(base, "new"), reporttest.Run{ID: "new"})
	if err := os.WriteFile(filepath.Join(cur, "results.json"), []byte(`{"schema_version": 1, "entries": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI("diff", old, cur)
	if code != 2 || !strings.Contains(errs, "cannot compare") || !strings.Contains(errs, "`meshclaims report "+cur+"` rebuilds its results.json") {
		t.Fatalf("diff of a broken run: exit %d, stderr %q", code, errs)
	}
	code, out, errs := runCLI("report", "--file", registry, cur)
	if code != 0 || strings.Contains(out, "map[") || !regexp.MustCompile(`entries \(\d+ (reproduced|not reproduced|inconclusive|recorded)(, \d+ [a-z ]+)*\)`).MatchString(out) {
		t.Fatalf("report: exit %d, stdout %q, stderr %q; want the counts in words", code, out, errs)
	}
	if code, _, errs := runCLI("diff", old, cur); code != 0 {
		t.Fatalf("diff after report: exit %d, stderr %q", code, errs)
	}
	// Negative control: a lone broken results.json.
	lone := copyRun(t, old, filepath.Join(base, "lone"), func(string) string { return "{" })
	code, _, errs = runCLI("diff", old, filepath.Join(lone, "results.json"))
	if code != 2 || strings.Contains(errs, "meshclaims report") {
		t.Errorf("diff of a lone broken results.json: exit %d, stderr %q; want no report advice", code, errs)
	}
}
