package sequential

import (
	"math/rand/v2"
	"testing"
)

// The monitor as the rollout driver uses it, on the simulated
// cycle-clustered loads, including a documented zero's band [0, max_rate]
// where a run of error-free cycles is the trap: false verdicts stay under
// the 5% bound's Monte Carlo allowance (see allowed).
func TestRateMonitorFalseVerdicts(t *testing.T) {
	const perCycle, n = 2000, 40
	narrow, zero := Band{Low: 0.0005, High: 0.002}, Band{Low: 0, High: 0.002}
	for _, sc := range []struct {
		name       string
		band       Band
		mu         float64
		falseStops func(stopped bool, reason string, inside bool) bool
	}{
		{"zero band, true rate just above max", zero, 0.0024, func(stopped bool, _ string, inside bool) bool { return stopped && inside }},
		{"zero band, true rate just under max", zero, 0.0017, func(stopped bool, _ string, inside bool) bool { return stopped && !inside }},
		{"narrow band, inside near the top", narrow, 0.0019, func(stopped bool, _ string, inside bool) bool { return stopped && !inside }},
		{"narrow band, just below", narrow, 0.00045, func(stopped bool, _ string, inside bool) bool { return stopped && inside }},
	} {
		t.Run(sc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(sc.mu*1e7)))
			falses, stops := 0, 0
			for range replicates {
				m, err := NewRateMonitor(0.05, n, []string{"503 rate"}, []Band{sc.band})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range cycles(rng, n, perCycle, sc.mu) {
					stop, reason, err := m.AddCycle([]int64{e}, perCycle)
					if err != nil {
						t.Fatal(err)
					}
					if stop {
						stops++
						inside := Decide(m.cs[0].Interval().Clip(0, 1), sc.band) == Inside
						if sc.falseStops(stop, reason, inside) {
							falses++
						}
						break
					}
				}
			}
			t.Logf("%d of %d loads stopped early, %d with a false verdict", stops, replicates, falses)
			if falses > allowed(replicates) {
				t.Errorf("%d false verdicts of %d, more than the %d a 5%% rate allows", falses, replicates, allowed(replicates))
			}
		})
	}
}

func TestRateMonitorStopsNoEarlierThanMinCyclesAndRefusesBadInput(t *testing.T) {
	m, err := NewRateMonitor(0.05, 40, []string{"503 rate", "no-response rate"}, []Band{{0, 0.005}, {0, 0.005}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 40; i++ {
		stop, reason, err := m.AddCycle([]int64{0, 0}, 2000)
		if err != nil {
			t.Fatal(err)
		}
		if stop {
			if i < MinCycles {
				t.Fatalf("stopped after %d cycles", i)
			}
			t.Logf("stopped after %d cycles: %s", i, reason)
			break
		}
		if i == 40 {
			t.Fatal("40 error-free cycles against [0, 0.5%] never stopped")
		}
	}
	if _, err := NewRateMonitor(0.05, 40, []string{"a"}, []Band{{0.1, 0.1}}); err == nil {
		t.Error("an empty band was accepted")
	}
	if _, _, err := m.AddCycle([]int64{5}, 2000); err == nil {
		t.Error("one count for two rates was accepted")
	}
	if _, _, err := m.AddCycle([]int64{3000, 0}, 2000); err == nil {
		t.Error("more errors than requests were accepted")
	}
}
