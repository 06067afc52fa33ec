package steps

import (
	"context"
	"testing"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/spec"
)

func baselineRun(t *testing.T, m mode.Mode, concurrent bool, modes ...mode.Mode) *spec.Run {
	reg := claimstest.Registry(t)
	cfg := &config.Config{RunID: "t", Modes: modes, DurationScale: 0.05, ConcurrentModes: concurrent}
	return spec.NewRun(reg.MustGet("rollout.baseline"), m, &spec.Env{Config: cfg, Registry: reg}, nil)
}

// T1's declared load carries the key it runs at once by: the same in every
// mode for one hardening, another for another hardening, so loadplan.Groups
// joins the modes' baseline runs and keeps the hardened ones apart.
func TestRolloutLoadsGroupAcrossModesByHardening(t *testing.T) {
	var specs []loadplan.Spec
	for _, m := range []mode.Mode{mode.None, mode.Sidecar} {
		r := baselineRun(t, m, true, mode.None, mode.Sidecar)
		base, err := RolloutDeclared(r, m, fixtures.Hardening{})
		if err != nil {
			t.Fatal(err)
		}
		hard, err := RolloutDeclared(r, m, fixtures.GUIDEHardening(m))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, loadplan.Spec{Claim: "rollout.baseline", Mode: m, Loads: []loadplan.Load{base, hard}})
	}
	if specs[0].Loads[0].Alongside != specs[1].Loads[0].Alongside || specs[0].Loads[0].Alongside == "" {
		t.Fatalf("baseline keys %q and %q", specs[0].Loads[0].Alongside, specs[1].Loads[0].Alongside)
	}
	g := loadplan.Groups(specs)
	if len(g) != 1 || len(g[specs[0].Loads[0].Alongside]) != 2 {
		t.Fatalf("groups %+v: want the baseline pair only (sidecar's hardening adds the drain)", g)
	}
	// The latency load declares no key: it never runs at once.
	for _, l := range mustSteady(t) {
		if l.Alongside != "" {
			t.Errorf("steady load %s has key %q", l.Name, l.Alongside)
		}
	}
}

func mustSteady(t *testing.T) []loadplan.Load {
	reg := claimstest.Registry(t)
	cfg := &config.Config{RunID: "t", Modes: []mode.Mode{mode.None, mode.Sidecar}, DurationScale: 0.05, ConcurrentModes: true}
	r := spec.NewRun(reg.MustGet("latency.percentiles"), mode.Sidecar, &spec.Env{Config: cfg, Registry: reg}, nil)
	ls, err := SteadyLoads(nil)(r)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// The hook leaves the serial path alone when the flag is off or the load
// has no group (one mode selected): ok is false before any cluster work.
func TestConcurrentRolloutStaysOutOfTheSerialPath(t *testing.T) {
	for name, r := range map[string]*spec.Run{
		"flag off": baselineRun(t, mode.Sidecar, false, mode.None, mode.Sidecar),
		"one mode": baselineRun(t, mode.Sidecar, true, mode.Sidecar),
	} {
		s, err := rolloutSpec(r, mode.Sidecar)
		if err != nil {
			t.Fatal(err)
		}
		if res, ok, err := concurrentRollout(context.Background(), r, mode.Sidecar, fixtures.Hardening{}, s); ok || res != nil || err != nil {
			t.Errorf("%s: ok %v, %v, %v", name, ok, res, err)
		}
	}
}

// A rollout run becomes the interference check's input: per restart
// cycle (start to the next start) the requests at the achieved rate and
// the 503s and -1s timed in it; the latency histogram as it is.
func TestInterferenceRunCountsPerCycle(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	cycles := []rollout.Cycle{{Index: 0, Start: at(1), End: at(10)}, {Index: 1, Start: at(15), End: at(25)}}
	run := &load.Run{
		Name: "rollout-sidecar-baseline",
		Spec: load.Spec{QPS: 100},
		Result: &load.Result{ActualQPS: 100, DurationHistogram: &fstats.HistogramData{Count: 30, Data: []fstats.Bucket{
			{Interval: fstats.Interval{Start: 0.001, End: 0.002}, Count: 10}, {Interval: fstats.Interval{Start: 0.002, End: 0.003}, Count: 20}}}},
		NonOK:    []load.Event{{Time: at(2), Code: 503}, {Time: at(12), Code: 503}, {Time: at(16), Code: 503}, {Time: at(17), Code: 500}},
		Failures: []load.Event{{Time: at(20)}, {Time: at(0.5)}},
	}
	got := interferenceRun(&RolloutResult{Load: run, Cycles: cycles})
	if len(got.Cycles) != 2 || got.Cycles[0].Requests != 1400 || got.Cycles[1].Requests != 1000 {
		t.Fatalf("cycles %+v: want 1400 requests (14 s to the next start) and 1000 (the last, 10 s)", got.Cycles)
	}
	if got.Cycles[0].Unavailable != 2 || got.Cycles[1].Unavailable != 1 || got.Cycles[0].NoResponse != 0 || got.Cycles[1].NoResponse != 1 {
		t.Fatalf("cycles %+v: want 503s 2, 1 (the 500 not counted) and -1s 0, 1 (the one before the first cycle left out)", got.Cycles)
	}
	if len(got.Latency) != 2 || got.Latency[1].Count != 20 || got.Latency[1].Low != 0.002 {
		t.Fatalf("latency %+v", got.Latency)
	}
}

// Every claim that read a load run at once says so in its measurement.
func TestAtOnceMarksTheMeasurement(t *testing.T) {
	run := &load.Run{Name: "x", Result: &load.Result{RetCodes: map[int]int64{200: 10}, DurationHistogram: &fstats.HistogramData{Count: 10}}}
	res := &RolloutResult{Load: run}
	if _, ok := res.Measurement().Extra["ran_alongside_modes"]; ok {
		t.Fatal("a load alone says it ran alongside")
	}
	res.AtOnce = &AtOnce{With: []mode.Mode{mode.None, mode.AmbientL4}}
	if m := res.Measurement(); m.Extra["ran_alongside_modes"] != 2 {
		t.Fatalf("extra %v", m.Extra)
	}
}

// A claim that reads several rollout loads and states its own setup
// (rollout.hardening-factors) keeps each at-once load's note and
// placement: in the concurrent bench record of 2026-12-05 its preStop and grace runs
// ran at once with sidecar's, and its setup and record said nothing.
func TestStateAtOnceKeepsEachLoadsNote(t *testing.T) {
	load1 := func() *RolloutResult {
		return &RolloutResult{Load: &load.Run{Name: "x", Result: &load.Result{RetCodes: map[int]int64{200: 10}, DurationHistogram: &fstats.HistogramData{Count: 10}}}}
	}
	note := "ran at once with the same load in sidecar (-concurrent-modes; 9m51s of its 10m0s overlapped by another mode's load)"
	prestop, grace, alone := load1(), load1(), load1()
	// The two notes read the same: each is stated, labelled.
	prestop.AtOnce = &AtOnce{With: []mode.Mode{mode.Sidecar}, Note: note}
	grace.AtOnce = &AtOnce{With: []mode.Mode{mode.Sidecar}, Note: note}
	r := spec.NewRun(nil, mode.None, nil, nil)
	r.SetSetup("one T1 run per setting alone (prestop, grace, sidecar_drain)")
	extra := map[string]float64{}
	StateAtOnce(r, extra, []string{"prestop", "grace", "sidecar_drain"}, []*RolloutResult{prestop, grace, alone})
	want := "one T1 run per setting alone (prestop, grace, sidecar_drain); prestop: " + note + "; grace: " + note
	if r.Setup() != want {
		t.Errorf("setup\n%q\nwant\n%q", r.Setup(), want)
	}
	if extra["prestop_ran_alongside_modes"] != 1 || extra["grace_ran_alongside_modes"] != 1 || len(extra) != 2 {
		t.Errorf("extra %v; want the two at-once loads' placement, not the one alone", extra)
	}
	// A note the setup already has (the load read last) is not repeated;
	// loads alone leave the setup as it was.
	r.SetSetup("T1 in sidecar; %s", note)
	StateAtOnce(r, map[string]float64{}, []string{"sidecar", "alone"}, []*RolloutResult{grace, alone})
	if r.Setup() != "T1 in sidecar; "+note {
		t.Errorf("setup %q; want it unchanged", r.Setup())
	}
}
