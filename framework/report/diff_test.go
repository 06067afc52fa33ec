package report

import (
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// repeated is a latency overhead measured as steps.Repeat records it:
// Value is the mean, Runs the per-run values, Extra the per-run P50s.
func repeated(runs []float64, p50 []float64) verdict.Measurement {
	m := verdict.Measurement{Runs: runs, Extra: map[string]float64{}}
	s := 0.0
	for i, v := range runs {
		s += v
		m.Extra["p50_ms_run"+string(rune('1'+i))] = p50[i]
	}
	m.Value = verdict.Float64(s / float64(len(runs)))
	return m
}

func entry(m verdict.Measurement, r verdict.Result) Entry {
	return Entry{Verdict: verdict.Verdict{Claim: "latency.p50-overhead", Mode: mode.Sidecar, Result: r}, Metric: claims.LatencyOverhead, Measurement: m}
}

func TestCompareRepeatsUsesWelch(t *testing.T) {
	old := entry(repeated([]float64{0.60, 0.62, 0.58}, []float64{1.10, 1.12, 1.08}), verdict.Reproduced)
	slower := entry(repeated([]float64{0.90, 0.93, 0.88}, []float64{1.40, 1.43, 1.38}), verdict.Reproduced)
	noise := entry(repeated([]float64{0.61, 0.59, 0.62}, []float64{1.11, 1.09, 1.10}), verdict.Reproduced)

	c := compareEntry(old, slower)
	if c.Direction != Regression || c.Flipped {
		t.Fatalf("0.6 -> 0.9 ms over 3 repeats each: %+v", c)
	}
	var sawP50 bool
	for _, q := range c.Quantities {
		if q.Name == "p50_ms (mean of repeats)" {
			sawP50 = q.Change && q.Worse && q.CI != nil && q.CI.Low > 0
		}
	}
	if !sawP50 {
		t.Errorf("per-run P50 not compared with an interval: %+v", c.Quantities)
	}
	// Negative control: the same distribution again is no change.
	if c := compareEntry(old, noise); c.Direction != NoChange {
		t.Errorf("noise called %s: %+v", c.Direction, c.Quantities)
	}
	// One run each has no interval: a moved value is reported, not a change.
	one := func(v float64) Entry {
		return entry(verdict.Measurement{Value: verdict.Float64(v)}, verdict.Reproduced)
	}
	if c := compareEntry(one(0.6), one(0.9)); c.Direction != NoChange || c.Quantities[0].Note == "" {
		t.Errorf("single runs: %+v", c)
	}
}

func TestCompareRefusesOtherRegistry(t *testing.T) {
	a := &Results{SchemaVersion: SchemaVersion, Environment: Environment{RunID: "a", Registry: "testdata/claims.yaml"}}
	b := &Results{SchemaVersion: SchemaVersion, Environment: Environment{RunID: "b", Registry: "/elsewhere/claims.yaml"}}
	if _, err := Compare(a, b); err == nil {
		t.Fatal("different registries compared")
	}
	if _, err := Compare(a, a); err != nil {
		t.Fatalf("same run: %v", err)
	}
}

// Outcomes are compared as equal or not; a verdict flip decides the direction.
func TestCompareOutcomes(t *testing.T) {
	mk := func(out string, r verdict.Result) Entry {
		return Entry{Verdict: verdict.Verdict{Claim: "mtls.plaintext-blocked", Mode: mode.Sidecar, Result: r}, Metric: claims.Outcome, Measurement: verdict.Measurement{Outcome: out}}
	}
	c := compareEntry(mk("no-http-response", verdict.Reproduced), mk("http-200", verdict.NotReproduced))
	if c.Direction != Regression || !c.Flipped || !c.Quantities[0].Change {
		t.Errorf("blocked -> answered: %+v", c)
	}
	if c := compareEntry(mk("http-200", verdict.NotReproduced), mk("no-http-response", verdict.Reproduced)); c.Direction != Improvement {
		t.Errorf("answered -> blocked: %+v", c)
	}
	// Another wrong outcome, verdict unchanged: changed, neither better nor worse.
	if c := compareEntry(mk("http-200", verdict.NotReproduced), mk("http-403", verdict.NotReproduced)); c.Direction != Changed {
		t.Errorf("200 -> 403, both not reproduced: %+v", c)
	}
	if c := compareEntry(mk("http-200", verdict.NotReproduced), mk("http-200", verdict.NotReproduced)); c.Direction != NoChange {
		t.Errorf("same outcome: %+v", c)
	}
}

// A footprint's CPU is compared beside its working set, each one load's
// readings: reported, never called a change.
func TestCompareFootprintCPU(t *testing.T) {
	mk := func(mib, vcpu float64) Entry {
		return Entry{Verdict: verdict.Verdict{Claim: "resources.proxy-footprint", Mode: mode.Sidecar, Result: verdict.Reproduced}, Metric: claims.ProxyFootprint,
			Measurement: verdict.Measurement{Value: verdict.Float64(mib), VCPU: verdict.Float64(vcpu)}}
	}
	c := compareEntry(mk(60, 0.2), mk(61, 0.3))
	var saw bool
	for _, q := range c.Quantities {
		if q.Name == "vCPU" {
			saw = q.Old == "0.2" && q.New == "0.3" && !q.Change && q.Note != ""
		}
	}
	if !saw || c.Direction != NoChange {
		t.Errorf("vCPU not reported beside the working set: %+v", c)
	}
}
