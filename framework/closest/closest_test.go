package closest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"rollout.baseline", "rollout.baselin", 1}, {"ä", "a", 1}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestNames(t *testing.T) {
	known := []string{"rollout.baseline", "rollout.hardened", "latency.percentiles", "netpol.app-port-only"}
	if got := Names("rollout.baselin", known, 3); len(got) == 0 || got[0] != "rollout.baseline" || slices.Contains(got, "latency.percentiles") {
		t.Errorf("typo: got %v", got)
	}
	if got := Names("rollout.baselin", known, 1); !slices.Equal(got, []string{"rollout.baseline"}) {
		t.Errorf("nearest first: got %v", got)
	}
	if got := Names("latency", known, 3); !slices.Equal(got, []string{"latency.percentiles"}) {
		t.Errorf("prefix: got %v", got)
	}
	// Negative control: nothing near is no suggestion.
	if got := Names("kubeproxy.endpoint-change", known, 3); len(got) != 0 {
		t.Errorf("unrelated name suggested %v", got)
	}
}
