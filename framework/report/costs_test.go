package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
)

// A later run's plan reads an earlier run's costs: the set-up, and each
// spec's wall time minus the loads it ran itself (a shared load cost the
// spec that read it nothing).
func TestCostsAreWallTimeBeyondOwnLoads(t *testing.T) {
	root := t.TempDir()
	d, err := report.Create(root + "/r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SaveEnvironment(report.Environment{RunID: "r1", Provider: "local", Started: time.Now(), DurationScale: 0.05, SetUp: 4 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	l := loadplan.Load{Name: "rollout-sidecar-baseline", Mode: mode.Sidecar, Duration: 30 * time.Second}
	for _, r := range []report.Record{
		{Claim: "rollout.baseline", Mode: mode.Sidecar, Took: 50 * time.Second, Loads: []loadplan.LoadRan{{Load: l, Took: 31 * time.Second}}},
		{Claim: "rollout.no-response-cause", Mode: mode.Sidecar, Took: 2 * time.Second, Loads: []loadplan.LoadRan{{Load: l, Took: 31 * time.Second, Shared: true}}},
		{Claim: "mtls.plaintext-blocked", Mode: mode.Sidecar},
	} {
		if err := d.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	c := report.LatestCosts(root, "local", "", 0.05, nil)
	if c == nil {
		t.Fatal("no costs found")
	}
	want := map[string]time.Duration{"rollout.baseline [sidecar]": 19 * time.Second, "rollout.no-response-cause [sidecar]": 2 * time.Second}
	if c.SetUp != 4*time.Minute || len(c.Beyond) != 2 || c.Beyond["rollout.baseline [sidecar]"] != want["rollout.baseline [sidecar]"] || c.Beyond["rollout.no-response-cause [sidecar]"] != want["rollout.no-response-cause [sidecar]"] {
		t.Fatalf("costs %+v, want set-up 4m and %v", c, want)
	}
	// The whole wall time too, for a plan that does not count the spec's loads.
	if c.Whole["rollout.baseline [sidecar]"] != 50*time.Second || c.Whole["rollout.no-response-cause [sidecar]"] != 2*time.Second {
		t.Fatalf("whole wall times %v, want 50s and 2s", c.Whole)
	}
	if report.LatestCosts(root, "kind", "", 0.05, nil) != nil || report.LatestCosts(root, "local", root+"/r1", 0.05, nil) != nil {
		t.Fatal("costs of another provider's run, or of the run being planned, were used")
	}
}

// The plan reads the earlier run that suits it: the same scale first, then
// the run that measured most of its specs, then the newest. Each rule is
// shown against a newer run that the rule ranks below (the negative
// control: newest alone would take that run).
func TestLatestCostsPrefersSameScaleThenCoverage(t *testing.T) {
	root := t.TempDir()
	t0 := time.Now()
	mk := func(id string, scale float64, age time.Duration, claims ...string) {
		t.Helper()
		d, err := report.Create(root + "/" + id)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SaveEnvironment(report.Environment{RunID: id, Provider: "local", Started: t0.Add(-age), DurationScale: scale, SetUp: time.Minute}); err != nil {
			t.Fatal(err)
		}
		for _, c := range claims {
			if err := d.Record(report.Record{Claim: c, Mode: mode.Sidecar, Took: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("sidecar-scale1", 1, 3*time.Hour, "rollout.baseline", "retry.fired")
	mk("sidecar-scale1-partial", 1, 2*time.Hour, "rollout.baseline")
	mk("none-scale0.05", 0.05, time.Hour, "rollout.baseline", "latency.all-ok")
	keys := []string{"rollout.baseline [sidecar]", "retry.fired [sidecar]"}
	for _, tc := range []struct {
		scale float64
		keys  []string
		want  string
	}{
		{1, keys, "sidecar-scale1"},        // same scale, most covered, though older
		{1, nil, "sidecar-scale1-partial"}, // same scale, nothing to cover: the newest of that scale
		{0.05, keys, "none-scale0.05"},     // the only run of that scale
		{0.5, keys, "sidecar-scale1"},      // no run of that scale: the one covering most, though older
		{0.5, keys[:1], "none-scale0.05"},  // a tie in coverage: the newest
	} {
		c := report.LatestCosts(root, "local", "", tc.scale, tc.keys)
		if c == nil || !strings.HasPrefix(c.Run, tc.want+" ") {
			t.Errorf("scale %g, keys %v: costs of %v, want %s", tc.scale, tc.keys, c, tc.want)
		}
	}
}
