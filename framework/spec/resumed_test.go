package spec

import (
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// ExcludeMeasured keeps what the user's filter runs and leaves out only
// the specs an earlier part measured.
func TestExcludeMeasured(t *testing.T) {
	for _, c := range []struct {
		filter string
		labels []string
		runs   bool
	}{
		{"", []string{"area:latency"}, true},
		{"", []string{"area:latency", LabelMeasured}, false},
		{"area:latency", []string{"area:latency"}, true},
		{"area:latency", []string{"area:rollout"}, false},
		{"area:latency", []string{"area:latency", LabelMeasured}, false},
		{"area:latency || area:rollout", []string{"area:rollout"}, true},
	} {
		f, err := types.ParseLabelFilter(ExcludeMeasured(c.filter))
		if err != nil {
			t.Fatalf("%q: %v", ExcludeMeasured(c.filter), err)
		}
		if got := f(c.labels); got != c.runs {
			t.Errorf("filter %q on %v: runs %v, want %v", ExcludeMeasured(c.filter), c.labels, got, c.runs)
		}
	}
}
