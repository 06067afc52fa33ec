package stats

import (
	"math"
	"strings"
	"testing"
)

func TestOverheadOfGuideP50(t *testing.T) {
	// GUIDE §3: P50 over the no-mesh baseline, milliseconds.
	cases := []struct {
		value, delta float64
	}{{2.11, 1.29}, {0.86, 0.04}, {2.68, 1.86}}
	for _, c := range cases {
		o := OverheadOf(c.value, 0.82)
		if math.Abs(o.Delta-c.delta) > 1e-12 || o.Baseline != 0.82 || o.Value != c.value {
			t.Errorf("OverheadOf(%v, 0.82) = %+v, want Delta %v", c.value, o, c.delta)
		}
		if !close(o.Factor, c.value/0.82, 1e-15) {
			t.Errorf("OverheadOf(%v, 0.82).Factor = %v", c.value, o.Factor)
		}
	}
	// HYBRID: 0.241 vs 2.450 ms, "about 10x".
	o := OverheadOf(2.450, 0.241)
	if o.Factor < 10 || o.Factor > 10.2 {
		t.Errorf("HYBRID factor = %v, want about 10.17", o.Factor)
	}
	if got, want := o.String(), "2.45 over 0.241: +2.209 (10.2x)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// A zero baseline never yields a finite factor that could pass a tolerance.
	if f := OverheadOf(1, 0).Factor; !math.IsInf(f, 1) {
		t.Errorf("OverheadOf(1, 0).Factor = %v, want +Inf", f)
	}
	if f := OverheadOf(0, 0).Factor; !math.IsNaN(f) {
		t.Errorf("OverheadOf(0, 0).Factor = %v, want NaN", f)
	}
}

const ms1 = 1e-3

// HYBRID's saturation run: 16 connections, 217476 qps, no qps limit.
func TestLittlesLawHybridSaturated(t *testing.T) {
	expected := 16 / 217476.0 // 0.0736 ms
	if math.Abs(expected/ms1-0.0736) > 0.00005 {
		t.Fatalf("test arithmetic: %v ms", expected/ms1)
	}
	c := LittlesLaw(16, 217476, 0, expected*1.02, 0.232*ms1, 0.0001*ms1, 0.1)
	if !c.Saturated || !close(c.ExpectedMean, expected, 1e-15) {
		t.Errorf("saturated=%v expected=%v, want true and %v", c.Saturated, c.ExpectedMean, expected)
	}
	if !close(c.RelativeError, 0.02, 1e-9) || !c.Consistent || c.CoarseHistogram || !c.OK() || c.Err != nil {
		t.Errorf("fine resolution, mean within 2%%: %+v", c)
	}
	if !strings.Contains(c.Reason, "matches Little's law 16 connections / 217476.0 qps = 0.0736 ms") {
		t.Errorf("Reason = %q", c.Reason)
	}
}

// HYBRID's lesson: P50 0.232 ms read from a 1 ms histogram is a bucket
// position, and the check must say so; at 0.0001 ms it must not.
func TestLittlesLawHybridResolution(t *testing.T) {
	coarse := LittlesLaw(16, 500, 500, 0.241*ms1, 0.232*ms1, 1*ms1, 0.1)
	if !coarse.CoarseHistogram || coarse.OK() {
		t.Errorf("1 ms resolution with P50 0.232 ms not flagged: %+v", coarse)
	}
	if want := "histogram resolution 1.000 ms is coarser than a tenth of P50 0.232 ms: percentiles are bucket positions"; !strings.Contains(coarse.Reason, want) {
		t.Errorf("Reason = %q, want it to contain %q", coarse.Reason, want)
	}
	// 500 of 500 qps is paced, not saturated: Little's law does not apply.
	if coarse.Saturated || coarse.ExpectedMean != 0 || !coarse.Consistent {
		t.Errorf("paced run treated as saturated: %+v", coarse)
	}
	if !strings.Contains(coarse.Reason, "not saturated (500.0 of 500.0 requested qps)") {
		t.Errorf("Reason = %q", coarse.Reason)
	}

	fine := LittlesLaw(16, 500, 500, 0.241*ms1, 0.232*ms1, 0.0001*ms1, 0.1)
	if fine.CoarseHistogram || !fine.OK() {
		t.Errorf("0.0001 ms resolution flagged coarse: %+v", fine)
	}
}

// Negative controls: each detector fires on the input that should trip it.
func TestLittlesLawDetectorsFire(t *testing.T) {
	expected := 16 / 217476.0
	// Mean from 1 ms buckets (HYBRID saw sub-ms means that the bucket
	// arithmetic inflated): 0.5 ms against an expected 0.0736 ms.
	c := LittlesLaw(16, 217476, 0, 0.5*ms1, 0.232*ms1, 0.0001*ms1, 0.1)
	if c.Consistent || c.OK() || c.CoarseHistogram {
		t.Errorf("mean 0.5 ms vs Little 0.0736 ms not caught: %+v", c)
	}
	if !close(c.RelativeError, (0.5*ms1-expected)/expected, 1e-12) || !strings.Contains(c.Reason, "disagrees with Little's law") {
		t.Errorf("RelativeError %v, Reason %q", c.RelativeError, c.Reason)
	}
	// Just outside and just inside the tolerance.
	if c := LittlesLaw(10, 1000, 0, 0.01*1.11, 0.01, 1e-6, 0.1); c.Consistent {
		t.Errorf("11%% off with 10%% tolerance passed: %+v", c)
	}
	if c := LittlesLaw(10, 1000, 0, 0.01*1.09, 0.01, 1e-6, 0.1); !c.Consistent {
		t.Errorf("9%% off with 10%% tolerance failed: %+v", c)
	}
	// Saturation by falling short of the requested rate (< 95%).
	if c := LittlesLaw(16, 900, 1000, 0.5, 0.4, 1e-6, 0.1); !c.Saturated || c.Consistent {
		t.Errorf("900 of 1000 qps must count as saturated and 0.5 s vs 0.0178 s fail: %+v", c)
	}
	// Fell short with connections mostly idle (16 x 0.5 ms at 900 qps is
	// 3% busy): the client was starved, the law does not apply, and it says so.
	if c := LittlesLaw(16, 900, 1000, 0.0005, 0.0004, 1e-6, 0.1); c.Saturated || !c.ClientLimited || c.Law() != LawNotApplicable ||
		!strings.Contains(c.LawReason, "the client, not the server, fell behind") {
		t.Errorf("client-limited paced run judged by Little's law: %+v", c)
	}
	if c := LittlesLaw(16, 960, 1000, 0.5, 0.4, 1e-6, 0.1); c.Saturated {
		t.Errorf("960 of 1000 qps counted as saturated: %+v", c)
	}
	// Coarse relative to the mean while fine relative to P50.
	c = LittlesLaw(16, 500, 500, 0.5*ms1, 2*ms1, 0.1*ms1, 0.1)
	if !c.CoarseHistogram || !strings.Contains(c.Reason, "coarser than a tenth of mean 0.500 ms") {
		t.Errorf("resolution 0.1 ms vs mean 0.5 ms not flagged: %+v", c)
	}
	// Both fire at once: both are reported.
	c = LittlesLaw(16, 217476, 0, 0.5*ms1, 0.5*ms1, 1*ms1, 0.1)
	if c.Consistent || !c.CoarseHistogram || strings.Count(c.Reason, ";") != 1 {
		t.Errorf("both detectors: %+v", c)
	}
}

func TestLittlesLawBadInput(t *testing.T) {
	cases := []struct {
		name                                   string
		conns                                  int
		actual, requested, mean, p50, res, tol float64
		want                                   string
	}{
		{"no connections", 0, 100, 0, 1, 1, 1e-6, 0.1, "connections 0"},
		{"zero qps", 16, 0, 0, 1, 1, 1e-6, 0.1, "actual qps 0"},
		{"NaN mean", 16, 100, 0, math.NaN(), 1, 1e-6, 0.1, "mean latency NaN"},
		{"negative p50", 16, 100, 0, 1, -1, 1e-6, 0.1, "P50 -1"},
		{"zero resolution", 16, 100, 0, 1, 1, 0, 0.1, "resolution 0"},
		{"negative tolerance", 16, 100, 0, 1, 1, 1e-6, -0.1, "tolerance -0.1"},
		{"infinite requested", 16, 100, math.Inf(1), 1, 1, 1e-6, 0.1, "requested qps +Inf"},
	}
	for _, c := range cases {
		got := LittlesLaw(c.conns, c.actual, c.requested, c.mean, c.p50, c.res, c.tol)
		if got.Err == nil || !strings.Contains(got.Err.Error(), c.want) || got.OK() || got.Consistent || got.Reason != got.Err.Error() {
			t.Errorf("%s: %+v, want an error containing %q and OK false", c.name, got, c.want)
		}
	}
}

func TestErrorsPerCycle(t *testing.T) {
	// GUIDE baseline: sidecar 324 503s in 42 cycles, ambient-l7 1528 in 65.
	sidecar, err := ErrorsPerCycle(324, 42)
	if err != nil {
		t.Fatal(err)
	}
	l7, _ := ErrorsPerCycle(1528, 65)
	if !close(sidecar.PerCycle, 324.0/42, 1e-15) || !close(l7.PerCycle, 1528.0/65, 1e-15) {
		t.Errorf("per cycle: %+v %+v", sidecar, l7)
	}
	if sidecar.Errors != 324 || sidecar.Cycles != 42 {
		t.Errorf("fields not kept: %+v", sidecar)
	}
	for _, c := range []struct {
		errs   int64
		cycles int
		want   string
	}{{5, 0, "cycles 0"}, {5, -2, "cycles -2"}, {-1, 3, "errors -1"}} {
		if _, err := ErrorsPerCycle(c.errs, c.cycles); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ErrorsPerCycle(%d, %d) error = %v, want %q", c.errs, c.cycles, err, c.want)
		}
	}
}

// Law separates Little's law from the histogram check: a paced run is "not
// applicable" (never a failure, whatever its resolution), a saturated one
// holds or is violated, and bad input is unchecked.
func TestLittlesLawVerdict(t *testing.T) {
	for _, c := range []struct {
		name string
		c    LittleCheck
		want LawVerdict
	}{
		{"saturated, mean = C/qps", LittlesLaw(16, 217476, 0, 16/217476.0, 0.232*ms1, 1e-6, 0.1), LawHolds},
		{"saturated, mean 7x C/qps", LittlesLaw(16, 217476, 0, 0.5*ms1, 0.232*ms1, 1e-6, 0.1), LawViolated},
		{"paced at its target, fine histogram", LittlesLaw(16, 500, 500, 0.241*ms1, 0.232*ms1, 0.01*ms1, 0.1), LawNotApplicable},
		{"paced at its target, coarse histogram", LittlesLaw(16, 500, 500, 0.241*ms1, 0.232*ms1, 1*ms1, 0.1), LawNotApplicable},
		{"no throughput", LittlesLaw(16, 0, 500, 0.241*ms1, 0.232*ms1, 1*ms1, 0.1), LawUnchecked},
	} {
		if got := c.c.Law(); got != c.want {
			t.Errorf("%s: Law() = %q, want %q (%+v)", c.name, got, c.want, c.c)
		}
		if c.want != LawUnchecked && (c.c.LawReason == "" || c.c.HistogramReason == "" ||
			c.c.Reason != c.c.LawReason+"; "+c.c.HistogramReason) {
			t.Errorf("%s: reasons %q / %q / %q", c.name, c.c.LawReason, c.c.HistogramReason, c.c.Reason)
		}
	}
	paced := LittlesLaw(16, 500, 500, 0.241*ms1, 0.232*ms1, 1*ms1, 0.1)
	if !strings.HasPrefix(paced.LawReason, "not saturated (500.0 of 500.0 requested qps)") ||
		!strings.Contains(paced.HistogramReason, "percentiles are bucket positions") {
		t.Errorf("paced coarse run: law %q, histogram %q", paced.LawReason, paced.HistogramReason)
	}
}

func TestShareOf(t *testing.T) {
	s, err := ShareOf(2.459-1.585, 2.459-0.238)
	if err != nil || math.Abs(s-0.3935) > 1e-4 {
		t.Fatalf("HYBRID's parsing share = %v, %v; want 0.3935", s, err)
	}
	for _, whole := range []float64{0, -0.1, math.NaN(), math.Inf(1)} {
		if _, err := ShareOf(0.1, whole); err == nil || !strings.Contains(err.Error(), "the whole must be a positive") {
			t.Errorf("ShareOf(0.1, %v) = %v; want an error naming the whole", whole, err)
		}
	}
	if _, err := ShareOf(math.NaN(), 1); err == nil {
		t.Error("ShareOf(NaN, 1) accepted")
	}
}
