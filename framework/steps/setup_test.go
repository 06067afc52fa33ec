package steps

import (
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Every load-driven claim's load comes from its registry setup: the numbers
// the registry states, the duration scaled, never below the floor.
func TestSetupLoadFromRegistry(t *testing.T) {
	reg := claimstest.Registry(t)
	env := &spec.Env{Config: &config.Config{DurationScale: 0.5}}
	cases := []struct {
		claim string
		floor time.Duration
		qps   float64
		conns int
		dur   time.Duration
	}{
		{"latency.percentiles", SteadyFloor, 200, 16, 30 * time.Second},
		{"latency.p50-overhead", SteadyFloor, 200, 16, 30 * time.Second},
		{"latency.l7-over-sidecar-p50", SteadyFloor, 200, 16, 30 * time.Second},
		{"rollout.baseline", RolloutFloor, 100, 16, 300 * time.Second},
		{"rollout.hardened", RolloutFloor, 100, 16, 300 * time.Second},
		{"rollout.l7-vs-sidecar", RolloutFloor, 100, 16, 300 * time.Second},
		{"rollout.hardening-factors", RolloutFloor, 100, 16, 300 * time.Second},
		{"sidecar.cost-latency", 5 * time.Second, 500, 16, 12500 * time.Millisecond},
		{"sidecar.l4-vs-l7-cost", 5 * time.Second, 500, 16, 10 * time.Second},
		{"sidecar.cost-throughput", 5 * time.Second, 0, 16, 10 * time.Second},
	}
	for _, c := range cases {
		r := spec.NewRun(reg.MustGet(c.claim), mode.Sidecar, env, nil)
		s, err := SetupLoad(r, "http://echo/", c.floor)
		if err != nil {
			t.Errorf("%s: %v", c.claim, err)
			continue
		}
		if s.QPS != c.qps || s.Connections != c.conns || s.Duration != c.dur || s.URL != "http://echo/" {
			t.Errorf("%s: load %+v, want %g qps, %d connections, %s", c.claim, s, c.qps, c.conns, c.dur)
		}
	}
	// The floor holds when the scale is small.
	small := &spec.Env{Config: &config.Config{DurationScale: 0.01}}
	if s, _ := SetupLoad(spec.NewRun(reg.MustGet("latency.percentiles"), mode.None, small, nil), "u", SteadyFloor); s.Duration != SteadyFloor {
		t.Errorf("scaled below the floor: %s", s.Duration)
	}
	// A claim whose setup states no load is an error naming what is missing.
	r := spec.NewRun(reg.MustGet("mtls.plaintext-blocked"), mode.Sidecar, env, nil)
	if _, err := SetupLoad(r, "u", time.Second); err == nil || !strings.Contains(err.Error(), "claim mtls.plaintext-blocked: its registry setup states no qps (or saturate: true), connections, duration") {
		t.Errorf("setup without a load: %v", err)
	}
}
