package report_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
)

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

// The project's records give a fresh clone's plan its costs: none at 0.05
// from the first sample run (its set-up built the images, as a first run
// does), sidecar at 0.05 from the none-and-sidecar sample, at 1 from the
// fixed scale-1 record, at a scale no record has with a note that the
// record's scale differs; a plan of both modes from the two samples; a plan for kind says the
// records are the local provider's; a mode no record measured has none.
func TestShippedCosts(t *testing.T) {
	root := repoRoot()
	keys := func(m mode.Mode, claims ...string) []string {
		var ks []string
		for _, c := range claims {
			ks = append(ks, loadplan.Key(c, m))
		}
		return ks
	}
	none := keys(mode.None, "rollout.baseline", "latency.percentiles")
	sidecar := keys(mode.Sidecar, "rollout.baseline", "mtls.plaintext-blocked")
	for _, tc := range []struct {
		name     string
		provider string
		scale    float64
		modes    []mode.Mode
		keys     []string
		from     []string
		notes    []string
	}{
		{"none at 0.05 on local", "local", 0.05, []mode.Mode{mode.None}, none, []string{"(testdata/examples/local-none): local provider, -duration-scale=0.05, set-up 2m1s, 2 of this plan's 2 specs"}, nil},
		{"none at 0.05 on kind", "kind", 0.05, []mode.Mode{mode.None}, none, []string{"(testdata/examples/local-none)"}, []string{"kind's set-up also creates"}},
		{"none at 1", "local", 1, []mode.Mode{mode.None}, none, []string{"(testdata/bench/scale1/bench-0-fixed-none)"}, nil},
		{"sidecar at 0.05", "local", 0.05, []mode.Mode{mode.Sidecar}, sidecar, []string{"(testdata/examples/local-none-sidecar): local provider, -duration-scale=0.05, set-up 1m22s, 2 of this plan's 2 specs"}, nil},
		{"sidecar at 1", "local", 1, []mode.Mode{mode.Sidecar}, sidecar, []string{"(testdata/bench/scale1/bench-0-fixed-sidecar): local provider, -duration-scale=1"}, nil},
		{"sidecar at 0.2", "local", 0.2, []mode.Mode{mode.Sidecar}, sidecar, []string{"-duration-scale="}, []string{"those of the record's scale"}},
		{"all at 0.05", "local", 0.05, []mode.Mode{mode.None, mode.Sidecar, mode.AmbientL4, mode.AmbientL7}, append(append([]string{}, none...), sidecar...), []string{"(testdata/examples/local-none)", "(testdata/examples/local-none-sidecar)"}, []string{"no record measured the mode(s) ambient-l4, ambient-l7"}},
		{"none,sidecar at 0.05", "existing", 0.05, []mode.Mode{mode.None, mode.Sidecar}, append(append([]string{}, none...), sidecar...), []string{"(testdata/examples/local-none)", "(testdata/examples/local-none-sidecar)"}, []string{"an existing cluster's set-up creates no cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := report.ShippedCosts(root, tc.provider, tc.scale, tc.modes, tc.keys)
			if c == nil {
				t.Fatal("no costs")
			}
			if len(c.From) != len(tc.from) {
				t.Fatalf("from %q, want %d records", c.From, len(tc.from))
			}
			for i, want := range tc.from {
				if !strings.Contains(c.From[i], want) {
					t.Errorf("from[%d] = %q, want %q in it", i, c.From[i], want)
				}
			}
			notes := strings.Join(c.Notes, "\n")
			for _, want := range tc.notes {
				if !strings.Contains(notes, want) {
					t.Errorf("notes %q lack %q", c.Notes, want)
				}
			}
			if len(tc.notes) == 0 && len(c.Notes) > 0 {
				t.Errorf("notes %q for a plan the record matches", c.Notes)
			}
			for _, k := range tc.keys {
				if _, ok := c.Beyond[k]; !ok {
					t.Errorf("%s: no cost", k)
				}
			}
			if c.SetUp <= 0 {
				t.Error("no set-up")
			}
			// Scale is the plan's only when every record is of it, so a
			// run of the user's own at another scale is not outranked by
			// records that are not all of the plan's scale either.
			if sameScale := !strings.Contains(notes, "those of the record's scale"); sameScale != (c.Scale == tc.scale) {
				t.Errorf("scale %g for a plan at %g with notes %q", c.Scale, tc.scale, c.Notes)
			}
		})
	}
	if c := report.ShippedCosts(root, "kind", 0.05, []mode.Mode{mode.AmbientL4}, keys(mode.AmbientL4, "rollout.baseline")); c != nil {
		t.Errorf("costs for a mode no record measured: %+v", c.From)
	}
}
