package report_test

import (
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
	c := report.LatestCosts(root, "local", "")
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
	if report.LatestCosts(root, "kind", "") != nil || report.LatestCosts(root, "local", root+"/r1") != nil {
		t.Fatal("costs of another provider's run, or of the run being planned, were used")
	}
}
