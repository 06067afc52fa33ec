package loadplan_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
)

var t1 = loadplan.Load{Name: "rollout-sidecar-baseline", Mode: mode.Sidecar, Duration: 30 * time.Second, QPS: 100, Connections: 16, Restarts: true}

func ran(l loadplan.Load, shared bool) loadplan.LoadRan {
	return loadplan.LoadRan{Load: l, Took: l.Duration, Requests: 3000, Shared: shared}
}

func TestDriftAgreesWhenTheDeclaredLoadsRan(t *testing.T) {
	if err := loadplan.Drift([]loadplan.Load{t1}, []loadplan.LoadRan{ran(t1, false)}); err != nil {
		t.Fatal(err)
	}
	// Shared from another spec counts as ran.
	if err := loadplan.Drift([]loadplan.Load{t1}, []loadplan.LoadRan{ran(t1, true)}); err != nil {
		t.Fatal(err)
	}
}

// Negative controls: each way the run can differ from its plan fires.
func TestDriftFiresOnEveryDifference(t *testing.T) {
	longer := t1
	longer.Duration = time.Minute
	other := t1
	other.Name = "rollout-sidecar-drain"
	noLoop := t1
	noLoop.Restarts = false
	for name, c := range map[string]struct {
		declared []loadplan.Load
		ran      []loadplan.LoadRan
		want     string
	}{
		"undeclared load ran":   {[]loadplan.Load{t1}, []loadplan.LoadRan{ran(t1, false), ran(other, false)}, "does not declare"},
		"declared load not run": {[]loadplan.Load{t1, other}, []loadplan.LoadRan{ran(t1, false)}, "did not run"},
		"other duration":        {[]loadplan.Load{t1}, []loadplan.LoadRan{ran(longer, false)}, "declared as"},
		"no restart loop":       {[]loadplan.Load{t1}, []loadplan.LoadRan{ran(noLoop, false)}, "declared as"},
		"nothing declared":      {nil, []loadplan.LoadRan{ran(t1, false)}, "does not declare"},
	} {
		t.Run(name, func(t *testing.T) {
			err := loadplan.Drift(c.declared, c.ran)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Drift = %v, want an error saying %q", err, c.want)
			}
		})
	}
}

func TestWriteCountsSharedLoadsOnceAndStatesUnknownCosts(t *testing.T) {
	cal := loadplan.Load{Name: "steady-none-calibration", Mode: mode.None, Duration: 6 * time.Second, QPS: 200, Connections: 16}
	steady := loadplan.Load{Name: "steady-none", Mode: mode.None, Duration: time.Minute, QPS: 200, Connections: 16}
	specs := []loadplan.Spec{
		{Claim: "latency.all-ok", Mode: mode.None, Loads: []loadplan.Load{cal, steady}},
		{Claim: "latency.percentiles", Mode: mode.None, Loads: []loadplan.Load{cal, steady}},
		{Claim: "rollout.baseline", Mode: mode.Sidecar, Loads: []loadplan.Load{t1}},
		{Claim: "rollout.no-response-cause", Mode: mode.Sidecar, Loads: []loadplan.Load{t1}},
		{Claim: "mtls.plaintext-blocked", Mode: mode.Sidecar, Undeclared: true},
	}
	var b bytes.Buffer
	e := loadplan.Write(&b, []mode.Mode{mode.None, mode.Sidecar}, 0.05, specs, nil, loadplan.Concurrency{})
	out := b.String()
	if want := 6*time.Second + time.Minute + 30*time.Second; e.Loads != want || e.Shared != 3 {
		t.Fatalf("loads %s (want %s), shared %d (want 3)\n%s", e.Loads, want, e.Shared, out)
	}
	for _, s := range []string{"suite set-up and per-spec costs beyond loads: unknown", "loads not declared", "shared with latency.all-ok [none]", "estimated total: 1m36s"} {
		if !strings.Contains(out, s) {
			t.Errorf("plan lacks %q:\n%s", s, out)
		}
	}
	// With an earlier run's costs: known ones are added, missing ones named.
	b.Reset()
	costs := &loadplan.Costs{Run: "r1", Scale: 0.05, SetUp: 5 * time.Minute, Beyond: map[string]time.Duration{
		loadplan.Key("rollout.baseline", mode.Sidecar):       20 * time.Second,
		loadplan.Key("mtls.plaintext-blocked", mode.Sidecar): 40 * time.Second,
	}}
	e = loadplan.Write(&b, []mode.Mode{mode.None, mode.Sidecar}, 0.05, specs, costs, loadplan.Concurrency{})
	if want := 5*time.Minute + time.Minute; e.Known != want || e.Unknown != 3 {
		t.Fatalf("known %s (want %s), unknown %d (want 3)\n%s", e.Known, want, e.Unknown, b.String())
	}
	if !strings.Contains(b.String(), "suite set-up: 5m0s (measured)") || !strings.Contains(b.String(), "beyond loads unknown") {
		t.Errorf("plan with costs:\n%s", b.String())
	}
	if strings.Contains(b.String(), "is not this plan's") {
		t.Errorf("a record of the plan's own scale is said to differ:\n%s", b.String())
	}
	// A record of another scale is named as such.
	b.Reset()
	loadplan.Write(&b, []mode.Mode{mode.None, mode.Sidecar}, 1, specs, costs, loadplan.Concurrency{})
	if !strings.Contains(b.String(), "that run's -duration-scale (0.05) is not this plan's (1)") {
		t.Errorf("plan at scale 1 with a record at 0.05 does not say so:\n%s", b.String())
	}
	// The loads are counted at the plan's scale, and it says so; what no
	// record measures is named.
	if !strings.Contains(out, "loads 1m36s at -duration-scale=0.05, each to its end") || strings.Contains(out, "full duration") || !strings.Contains(out, "not included: building the test binary") {
		t.Errorf("plan's total line:\n%s", out)
	}
	// Costs from the project's records name each record and what they do
	// not tell the plan, in place of the one run's line.
	b.Reset()
	costs.From = []string{"r1 (testdata/r1): local provider, -duration-scale=0.05"}
	costs.Notes = []string{"these are the local provider's costs"}
	loadplan.Write(&b, []mode.Mode{mode.None, mode.Sidecar}, 0.05, specs, costs, loadplan.Concurrency{})
	for _, want := range []string{"from the project's records", "    r1 (testdata/r1): local provider", "  note: these are the local provider's costs"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "costs beyond loads from run r1") {
		t.Errorf("plan from records names one run:\n%s", b.String())
	}
}

// Sidecar's T1 baseline run, declared by its four readers (rollout.baseline,
// rollout.no-response-cause, rollout.503-attribution and, from ambient-l7,
// rollout.l7-vs-sidecar beside ambient-l7's own run), is counted once and
// shared three times. The negative control declares the attribution's run
// under a name of its own (the old rollout-sidecar-accesslog): the same
// load otherwise, it is counted as a second run.
func TestWriteCountsOneRunForEveryReaderOfTheSameLoad(t *testing.T) {
	l7 := t1
	l7.Name, l7.Mode = "rollout-ambient-l7-baseline", mode.AmbientL7
	specs := func(attribution loadplan.Load) []loadplan.Spec {
		return []loadplan.Spec{
			{Claim: "rollout.baseline", Mode: mode.Sidecar, Loads: []loadplan.Load{t1}},
			{Claim: "rollout.no-response-cause", Mode: mode.Sidecar, Loads: []loadplan.Load{t1}},
			{Claim: "rollout.503-attribution", Mode: mode.Sidecar, Loads: []loadplan.Load{attribution}},
			{Claim: "rollout.l7-vs-sidecar", Mode: mode.AmbientL7, Loads: []loadplan.Load{l7, t1}},
		}
	}
	modes := []mode.Mode{mode.Sidecar, mode.AmbientL7}
	var b bytes.Buffer
	e := loadplan.Write(&b, modes, 0.05, specs(t1), nil, loadplan.Concurrency{})
	if e.Loads != 2*t1.Duration || e.Shared != 3 || !strings.Contains(b.String(), "(2 distinct, 3 uses shared)") {
		t.Fatalf("loads %s (want %s), shared %d (want 3)\n%s", e.Loads, 2*t1.Duration, e.Shared, b.String())
	}
	if n := strings.Count(b.String(), "rollout-sidecar-baseline (shared with rollout.baseline [sidecar])"); n != 3 {
		t.Errorf("%d uses shared with rollout.baseline, want 3:\n%s", n, b.String())
	}
	own := t1
	own.Name = "rollout-sidecar-accesslog"
	b.Reset()
	e = loadplan.Write(&b, modes, 0.05, specs(own), nil, loadplan.Concurrency{})
	if e.Loads != 3*t1.Duration || e.Shared != 2 {
		t.Fatalf("a run of its own: loads %s (want %s), shared %d (want 2)\n%s", e.Loads, 3*t1.Duration, e.Shared, b.String())
	}
}

// Two runs, one per mode, give the plan of both modes every cost: each
// spec's from the first run that measured it, the longer set-up; runs at
// different scales are refused with both named.
func TestMergeCostsJoinsRunsOfSeparateModes(t *testing.T) {
	none := &loadplan.Costs{Run: "bench-0-sequential-none", Scale: 1, SetUp: 20 * time.Second, Beyond: map[string]time.Duration{
		loadplan.Key("conntrack.table-full", mode.None): 3 * time.Minute,
		loadplan.Key("latency.all-ok", mode.None):       10 * time.Second,
	}}
	sidecar := &loadplan.Costs{Run: "bench-0-sequential-sidecar", Scale: 1, SetUp: 50 * time.Second, Beyond: map[string]time.Duration{
		loadplan.Key("latency.all-ok", mode.Sidecar):         12 * time.Second,
		loadplan.Key("latency.all-ok", mode.None):            99 * time.Second, // measured twice: the first run's wins
		loadplan.Key("mtls.plaintext-blocked", mode.Sidecar): 40 * time.Second,
	}}
	c, err := loadplan.MergeCosts([]*loadplan.Costs{none, sidecar})
	if err != nil {
		t.Fatal(err)
	}
	if c.SetUp != 50*time.Second || len(c.Beyond) != 4 || c.Beyond[loadplan.Key("latency.all-ok", mode.None)] != 10*time.Second ||
		c.Run != "bench-0-sequential-none + bench-0-sequential-sidecar" || c.Scale != 1 {
		t.Errorf("merged %+v", c)
	}
	specs := []loadplan.Spec{
		{Claim: "conntrack.table-full", Mode: mode.None, Undeclared: true},
		{Claim: "mtls.plaintext-blocked", Mode: mode.Sidecar, Undeclared: true},
	}
	var b bytes.Buffer
	if e := loadplan.Write(&b, []mode.Mode{mode.None, mode.Sidecar}, 1, specs, c, loadplan.Concurrency{}); e.Unknown != 0 || e.Known != 50*time.Second+3*time.Minute+40*time.Second {
		t.Errorf("plan with the merged costs: known %s, unknown %d\n%s", e.Known, e.Unknown, b.String())
	}
	// The negative control: with one run alone, the other mode's cost is unknown.
	b.Reset()
	if e := loadplan.Write(&b, []mode.Mode{mode.None, mode.Sidecar}, 1, specs, none, loadplan.Concurrency{}); e.Unknown != 1 {
		t.Errorf("plan with the none run alone: unknown %d, want 1\n%s", e.Unknown, b.String())
	}
	half := *sidecar
	half.Scale = 0.05
	if _, err := loadplan.MergeCosts([]*loadplan.Costs{none, &half}); err == nil || !strings.Contains(err.Error(), "run bench-0-sequential-sidecar at 0.05") {
		t.Errorf("runs of two scales: %v", err)
	}
}

// A spec that does not declare its loads costs the plan its whole wall
// time, since the plan counts none of its loads; a declared one costs its
// time beyond them. Records kept before Whole fall back to Beyond.
func TestWriteCountsUndeclaredSpecsWhole(t *testing.T) {
	c := &loadplan.Costs{Run: "r", Scale: 1, SetUp: time.Second, Beyond: map[string]time.Duration{
		loadplan.Key("sidecar.l4-vs-l7-cost", mode.Sidecar): 6 * time.Second,
		loadplan.Key("retry.fired", mode.Sidecar):           15 * time.Second,
	}, Whole: map[string]time.Duration{
		loadplan.Key("sidecar.l4-vs-l7-cost", mode.Sidecar): 66 * time.Second,
		loadplan.Key("retry.fired", mode.Sidecar):           318 * time.Second,
	}}
	specs := []loadplan.Spec{
		{Claim: "sidecar.l4-vs-l7-cost", Mode: mode.Sidecar, Undeclared: true},
		{Claim: "retry.fired", Mode: mode.Sidecar, Loads: []loadplan.Load{{Name: "orders-sidecar", Mode: mode.Sidecar, Duration: 5 * time.Minute, Restarts: true}}},
	}
	var b bytes.Buffer
	e := loadplan.Write(&b, []mode.Mode{mode.Sidecar}, 1, specs, c, loadplan.Concurrency{})
	if e.Known != time.Second+66*time.Second+15*time.Second || e.Loads != 5*time.Minute || !strings.Contains(b.String(), "wall time with its loads 1m6s (measured)") {
		t.Errorf("known %s, loads %s, want 1m22s and 5m\n%s", e.Known, e.Loads, b.String())
	}
	// The negative control: without Whole (an older record), Beyond.
	c.Whole = nil
	b.Reset()
	if e := loadplan.Write(&b, []mode.Mode{mode.Sidecar}, 1, specs, c, loadplan.Concurrency{}); e.Known != 22*time.Second {
		t.Errorf("without Whole: known %s, want 22s\n%s", e.Known, b.String())
	}
	// Merged, Whole comes with its run's Beyond.
	c.Whole = map[string]time.Duration{loadplan.Key("sidecar.l4-vs-l7-cost", mode.Sidecar): 66 * time.Second}
	m, err := loadplan.MergeCosts([]*loadplan.Costs{c})
	if err != nil || m.Whole[loadplan.Key("sidecar.l4-vs-l7-cost", mode.Sidecar)] != 66*time.Second {
		t.Errorf("merged %+v, %v", m, err)
	}
}
