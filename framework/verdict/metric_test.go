package verdict

import (
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
)

// Every metric has one shape, and every claim of the shipped registry is
// judged by the shape registered for its metric, never by the fallback.
func TestEveryMetricHasOneShape(t *testing.T) {
	seen := map[string]bool{}
	for _, x := range metrics {
		if seen[string(x.name)] {
			t.Errorf("metric %s is listed twice", x.name)
		}
		seen[string(x.name)] = true
	}
	for _, c := range claimstest.Registry(t).Claims {
		if !seen[string(c.Metric)] {
			t.Errorf("%s: metric %s has no shape", c.ID, c.Metric)
		}
	}
}

// A report reads a rate by its shape's name for it, and the direction of a
// value's change by its shape: times are better lower, throughput higher.
func TestReading(t *testing.T) {
	for _, tc := range []struct {
		metric string
		want   Reading
	}{
		{"error_rate", Reading{Rate: "503 rate"}},
		{"connect_failure_rate", Reading{Rate: "connect failure rate"}},
		{"latency_percentiles_ms", Reading{Better: -1}},
		{"time_to_ready_s", Reading{Better: -1}},
		{"throughput_qps", Reading{Better: +1}},
		{"cost_share", Reading{}},
		{"no_such_metric", Reading{}},
	} {
		if got := MetricOf(claims.Metric(tc.metric)).Reading(); got != tc.want {
			t.Errorf("%s: reading %+v, want %+v", tc.metric, got, tc.want)
		}
	}
}
