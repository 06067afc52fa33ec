package report_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
)

// A run whose records keep no wall times is read from its junit.xml: the
// [BeforeSuite] time is the set-up, each spec's [It] time its whole wall
// time, and the fortio results it wrote itself (not their options or
// timeline files, not those of another spec) its own loads. A run with
// wall times in its records is read from them, not from JUnit.
func TestCostsFromJUnitWhenRecordsKeepNone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	d, err := report.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SaveEnvironment(report.Environment{RunID: "r", Provider: "local", DurationScale: 0.05}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []report.Record{
		{Claim: "rollout.baseline", Mode: mode.None},
		{Claim: "rollout.no-response-cause", Mode: mode.None},
		{Claim: "netpol.app-port-only", Mode: mode.None},
	} {
		if err := d.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	const junit = `<testsuites><testsuite name="meshclaims none">
<testcase name="[BeforeSuite]" time="121.5"></testcase>
<testcase name="[It] rollout rollout.baseline [none] 503 rates [area:rollout]" time="41"></testcase>
<testcase name="[It] rollout rollout.no-response-cause [none] -1 causes" time="0.5"></testcase>
<testcase name="[It] netpol netpol.app-port-only [none] policy" time="7.5"></testcase>
<testcase name="[It] netpol netpol.app-port-only [sidecar] policy" time="99"><skipped message="not selected"></skipped></testcase>
<testcase name="[AfterSuite]" time="16"></testcase>
</testsuite></testsuites>`
	files := map[string]string{
		"junit.xml": junit,
		"raw/rollout.baseline__none__rollout-none-baseline.json":          `{"ActualDuration": 30500000000}`,
		"raw/rollout.baseline__none__rollout-none-baseline.options.json":  `{"ActualDuration": 99000000000}`,
		"raw/rollout.baseline__none__rollout-none-baseline.timeline.json": `{"ActualDuration": 99000000000}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := d.Costs()
	if err != nil {
		t.Fatal(err)
	}
	wantBeyond := map[string]time.Duration{
		"rollout.baseline [none]":          10500 * time.Millisecond,
		"rollout.no-response-cause [none]": 500 * time.Millisecond,
		"netpol.app-port-only [none]":      7500 * time.Millisecond,
	}
	if c.SetUp != 121500*time.Millisecond || len(c.Beyond) != len(wantBeyond) {
		t.Fatalf("set-up %s, beyond %v; want 2m1.5s and %v", c.SetUp, c.Beyond, wantBeyond)
	}
	for k, want := range wantBeyond {
		if c.Beyond[k] != want {
			t.Errorf("%s: beyond %s, want %s", k, c.Beyond[k], want)
		}
	}
	if c.Whole["rollout.baseline [none]"] != 41*time.Second {
		t.Errorf("whole %v, want rollout.baseline 41s", c.Whole)
	}
	// Records with their wall times win over JUnit.
	if err := d.Record(report.Record{Claim: "rollout.baseline", Mode: mode.None, Took: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if c, err = d.Costs(); err != nil || c.SetUp != 0 || len(c.Beyond) != 1 || c.Beyond["rollout.baseline [none]"] != 3*time.Second {
		t.Fatalf("with a record's wall time: %+v, %v; want only that record's 3s", c, err)
	}
}
