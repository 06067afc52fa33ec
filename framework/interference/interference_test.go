package interference

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/stats"
)

// burstShape is the gamma shape of the errors' bursts per cycle.
const burstShape = 1

// perCycle is GUIDE T1's: 100 qps over a 14 s restart cycle.
const perCycle = 1400

// gamma draws from Gamma(shape, 1) (Marsaglia and Tsang; shape < 1 by
// boosting).
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		if u := rng.Float64(); math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

func poisson(rng *rand.Rand, mean float64) int64 {
	l, k, p := math.Exp(-mean), int64(0), 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// clustered is a run of n restart cycles whose errors come in bursts per
// cycle, as the real runs' do: each cycle's expected errors are drawn from
// an exponential around the rate (gamma of shape 1: most cycles have few,
// some many; a standard deviation per cycle as large as the mean).
func clustered(rng *rand.Rand, name string, n int, rate503, rateNoResponse, median float64) Run {
	r := Run{Name: name}
	burst := func(rate float64) int64 {
		return min(perCycle, poisson(rng, rate*perCycle*gamma(rng, burstShape)/burstShape))
	}
	for range n {
		r.Cycles = append(r.Cycles, Cycle{Requests: perCycle, Unavailable: burst(rate503), NoResponse: burst(rateNoResponse)})
	}
	r.Latency = histogram(rng, n*perCycle, median)
	return r
}

// histogram is n lognormal latencies around median in fortio's 1 ms
// buckets (the rollout loads' resolution).
func histogram(rng *rand.Rand, n int, median float64) []stats.Bucket {
	h := make([]stats.Bucket, 200)
	for i := range h {
		h[i] = stats.Bucket{Low: float64(i) * 1e-3, High: float64(i+1) * 1e-3}
	}
	for range n {
		x := median * math.Exp(0.5*rng.NormFloat64())
		h[min(len(h)-1, int(x/1e-3))].Count++
	}
	return h
}

// Positive control: one run compared with itself reports no interference.
func TestIdenticalRunsReportNone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	run := clustered(rng, "rollout-sidecar-baseline", 12, 0.005, 0.001, 0.004)
	c, err := Compare("sidecar", []string{"none", "ambient-l4"}, run, run, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if c.Disturbed {
		t.Fatalf("identical runs reported interference: %s", c)
	}
	for _, want := range []string{"no interference found", "sidecar alone", "vs alongside none, ambient-l4", "503 rate", "per-cycle difference", "permutation p", "P50"} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("check lacks %q: %s", want, c)
		}
	}
}

// Negative controls: a disturbance of the run alongside is reported, for
// the 503 rate tripled and five-fold under the other modes' restarts
// (slower endpoint updates), and for a median 3 ms slower (a busy node;
// the rollout loads' 1 ms buckets hide shifts of less than about two
// buckets). With 12 cycles alone (GUIDE's 150 s reference) and errors in
// bursts, a tripling is found about three times in four: the power those
// cycles give, which the check's printed interval shows.
func TestDisturbanceIsReported(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const sims = 300
	var tripled, fivefold, latency int
	found := func(alone, alongside Run, rate bool) bool {
		c, err := Compare("sidecar", []string{"none"}, alone, alongside, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if rate {
			return c.Disturbed && c.Rates[0].PerCycle.Estimate > 0
		}
		return c.Disturbed && c.Latency.Difference.Estimate > 0
	}
	for range sims {
		alone := clustered(rng, "alone", 12, 0.005, 0.001, 0.004)
		if found(alone, clustered(rng, "alongside", 42, 0.015, 0.001, 0.004), true) {
			tripled++
		}
		if found(alone, clustered(rng, "alongside", 42, 0.025, 0.001, 0.004), true) {
			fivefold++
		}
		if found(alone, clustered(rng, "alongside", 42, 0.005, 0.001, 0.007), false) {
			latency++
		}
	}
	for _, c := range []struct {
		what  string
		n     int
		least float64
	}{{"a tripled 503 rate", tripled, 0.65}, {"a five-fold 503 rate", fivefold, 0.9}, {"a median 3 ms slower", latency, 0.95}} {
		if f := float64(c.n) / sims; f < c.least {
			t.Errorf("%s was reported in %.0f%% of runs, want >= %.0f%%", c.what, 100*f, 100*c.least)
		}
	}
	c, _ := Compare("sidecar", []string{"none"}, clustered(rng, "alone", 12, 0.005, 0.001, 0.004), clustered(rng, "alongside", 42, 0.005, 0.001, 0.008), 0.95)
	if !strings.Contains(c.String(), "INTERFERENCE") {
		t.Errorf("a 4 ms slower median does not say INTERFERENCE: %s", c)
	}
}

// Positive control over many runs: the reference alone and the run
// alongside drawn from one distribution (cycle-clustered errors like the
// real runs') report interference at most 5% of the time, the family
// confidence. TestRequestLevelIntervalsCryWolf is its negative control.
func TestSameDistributionsKeepFalseInterferenceUnderFivePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const sims = 1000
	disturbed := 0
	for range sims {
		c, err := Compare("sidecar", []string{"none"}, clustered(rng, "alone", 12, 0.005, 0.001, 0.004), clustered(rng, "alongside", 42, 0.005, 0.001, 0.004), 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if c.Disturbed {
			disturbed++
		}
	}
	// 5% plus two standard errors of the simulation (0.7 pp at 1000).
	if f := float64(disturbed) / sims; f > 0.064 {
		t.Fatalf("identical distributions reported interference in %.1f%% of %d runs, want <= 5%%", 100*f, sims)
	}
}

// Negative control of the unit of independence: judging the pooled rates
// by Newcombe's interval, as if requests were independent, reports
// interference between runs of one distribution far more often than 5%;
// that is why the check judges per restart cycle.
func TestRequestLevelIntervalsCryWolf(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const sims = 500
	naive := 0
	for range sims {
		c, err := Compare("sidecar", []string{"none"}, clustered(rng, "alone", 12, 0.005, 0.001, 0.004), clustered(rng, "alongside", 42, 0.005, 0.001, 0.004), 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if c.Rates[0].PerRequest.Significant() || c.Rates[1].PerRequest.Significant() {
			naive++
		}
	}
	if f := float64(naive) / sims; f < 0.2 {
		t.Fatalf("request-level intervals reported interference in only %.1f%% of runs of one distribution; the control expects far more than 5%%", 100*f)
	}
}

func TestTooFewCyclesAreNotJudged(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	alone := clustered(rng, "alone", 1, 0.005, 0.001, 0.004)
	alone.Latency = nil
	c, err := Compare("none", []string{"sidecar"}, alone, clustered(rng, "alongside", 3, 0.005, 0.001, 0.004), 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if c.Disturbed || !strings.Contains(c.String(), "interference not judged") || !strings.Contains(c.String(), "1 restart cycles alone") {
		t.Fatalf("%s", c)
	}
	// 2 cycles alone (a 30 s reference at -duration-scale=0.05) and 3
	// alongside: no relabelling of 5 cycles is rare enough, so the rates
	// are not judged instead of "no interference found".
	c, err = Compare("none", []string{"sidecar"}, clustered(rng, "alone", 2, 0.005, 0.001, 0.004), clustered(rng, "alongside", 3, 0.05, 0.001, 0.004), 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rates[0].Unchecked == "" || !strings.Contains(c.String(), "no difference of so few could reach") {
		t.Fatalf("2 vs 3 cycles judged: %s", c)
	}
	bad := Run{Cycles: []Cycle{{Requests: 10, Unavailable: 11}}}
	if _, err := Compare("none", nil, bad, bad, 0.95); err == nil || !strings.Contains(err.Error(), "11 errors of 10") {
		t.Fatalf("err %v", err)
	}
	if _, err := Compare("none", nil, bad, bad, 1); err == nil {
		t.Fatal("confidence 1 accepted")
	}
}

func TestReferenceDuration(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		600 * time.Second: 150 * time.Second, // GUIDE T1 at scale 1
		30 * time.Second:  30 * time.Second,  // the floor: no shorter than the load's own floor
		20 * time.Second:  20 * time.Second,  // never longer than the load
		90 * time.Second:  30 * time.Second,
	} {
		if got := ReferenceDuration(d); got != want {
			t.Errorf("ReferenceDuration(%s) = %s, want %s", d, got, want)
		}
	}
}
