package loadplan_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// rollout is a T1 run of mode m and hardening h as steps declares it.
func rollout(m mode.Mode, h string, d time.Duration) loadplan.Load {
	return loadplan.Load{Name: "rollout-" + string(m) + "-" + h, Mode: m, Duration: d, QPS: 100, Connections: 16, Restarts: true, Alongside: "rollout-" + h + "/100/16/" + d.String()}
}

// A plan of two modes' baseline and hardened rollouts, each read by two
// claims, beside a steady latency load that must stay alone.
func concurrentSpecs() []loadplan.Spec {
	d := 10 * time.Minute
	steady := loadplan.Load{Name: "steady-none", Mode: mode.None, Duration: time.Minute, QPS: 200, Connections: 16}
	var specs []loadplan.Spec
	for _, m := range []mode.Mode{mode.None, mode.Sidecar} {
		specs = append(specs,
			loadplan.Spec{Claim: "rollout.baseline", Mode: m, Loads: []loadplan.Load{rollout(m, "baseline", d)}},
			loadplan.Spec{Claim: "rollout.no-response-cause", Mode: m, Loads: []loadplan.Load{rollout(m, "baseline", d)}},
			loadplan.Spec{Claim: "rollout.hardened", Mode: m, Loads: []loadplan.Load{rollout(m, "baseline", d), rollout(m, "prestop-grace", d)}},
		)
	}
	return append(specs, loadplan.Spec{Claim: "latency.percentiles", Mode: mode.None, Loads: []loadplan.Load{steady}})
}

// With -concurrent-modes a group of loads counts once at its longest (the
// wall time of loads at once), the interference reference is added once,
// latency loads stay alone; without it the same plan sums every load.
func TestPlanCountsLoadsAtOnceAtTheirLongest(t *testing.T) {
	specs := concurrentSpecs()
	modes := []mode.Mode{mode.None, mode.Sidecar}
	var serial, concurrent bytes.Buffer
	es := loadplan.Write(&serial, modes, 1, specs, nil, loadplan.Concurrency{})
	ec := loadplan.Write(&concurrent, modes, 1, specs, nil, loadplan.Concurrency{On: true, Reference: func(d time.Duration) time.Duration { return d / 4 }})
	if want := 4*10*time.Minute + time.Minute; es.Total() != want || es.Groups != 0 || strings.Contains(serial.String(), "at once") {
		t.Fatalf("serial plan: total %s (want %s), %d groups\n%s", es.Total(), want, es.Groups, serial.String())
	}
	// Two groups (baseline, prestop-grace) of 10 min each, the reference
	// of 2m30s, and the steady minute alone.
	if want := 2*10*time.Minute + time.Minute + 150*time.Second; ec.Total() != want || ec.Groups != 2 || ec.AtOnce != 4 || ec.Reference != 150*time.Second {
		t.Fatalf("concurrent plan: total %s (want %s), %d groups, %d at once, reference %s\n%s", ec.Total(), want, ec.Groups, ec.AtOnce, ec.Reference, concurrent.String())
	}
	out := concurrent.String()
	for _, want := range []string{
		"rollout-none-baseline: 10m0s, 100 qps x 16 connections, restart loop (at once with rollout-sidecar-baseline: 10m0s for the 2; -concurrent-modes)",
		"rollout-sidecar-baseline: 10m0s, 100 qps x 16 connections, restart loop (at once with rollout-none-baseline, counted there)",
		"interference check: one reference run alone of the first group to run (in this order: rollout-none-baseline), 2m30s",
		"4 run at once in 2 groups",
		"    steady-none: 1m0s, 200 qps x 16 connections\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("concurrent plan lacks %q:\n%s", want, out)
		}
	}
}

// Groups join only loads of two or more modes with one Alongside key: a
// load alone in its key (one mode selected, or another hardening per mode)
// and a spec whose selection need is unmet join none.
func TestGroupsNeedTwoModesOfOneKey(t *testing.T) {
	d := time.Minute
	specs := []loadplan.Spec{
		{Claim: "rollout.hardened", Mode: mode.Sidecar, Loads: []loadplan.Load{rollout(mode.Sidecar, "prestop-grace-drain", d)}},
		{Claim: "rollout.hardened", Mode: mode.AmbientL4, Loads: []loadplan.Load{rollout(mode.AmbientL4, "prestop-grace", d)}},
		{Claim: "rollout.hardened", Mode: mode.AmbientL7, Loads: []loadplan.Load{rollout(mode.AmbientL7, "prestop-grace", d)}},
		{Claim: "rollout.baseline", Mode: mode.AmbientL4, Loads: []loadplan.Load{rollout(mode.AmbientL4, "baseline", d)}},
		{Claim: "rollout.baseline", Mode: mode.AmbientL7, Unmet: "selection", Loads: []loadplan.Load{rollout(mode.AmbientL7, "baseline", d)}},
	}
	g := loadplan.Groups(specs)
	if len(g) != 1 {
		t.Fatalf("groups %v, want the ambient prestop-grace pair only", g)
	}
	for _, ls := range g {
		if ms := loadplan.GroupModes(ls); len(ms) != 2 || ms[0] != mode.AmbientL4 || ms[1] != mode.AmbientL7 {
			t.Fatalf("group modes %v", ms)
		}
	}
}
