package sequential

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/meshclaims/meshclaims/framework/stats"
)

// cycles simulates one rollout load's restart cycles with errors clustered
// by cycle, as in the real runs (GUIDE T1; rollout.baseline's per-cycle
// counts): most cycles have no error, a burst cycle (a pod going away
// while connections still point at it) fails a share of its requests. The
// cycle-level mean error proportion is mu.
func cycles(rng *rand.Rand, n int, perCycle int64, mu float64) (errs []int64) {
	const burstShare = 0.3 // cycles with a burst
	for range n {
		var e int64
		if rng.Float64() < burstShare {
			// the burst's proportion: uniform on [0, 2 mu / burstShare],
			// so its mean over all cycles is mu
			p := rng.Float64() * 2 * mu / burstShare
			for range perCycle {
				if rng.Float64() < p {
					e++
				}
			}
		}
		errs = append(errs, e)
	}
	return errs
}

// monitored runs one simulated load with a look after every cycle and
// returns the decision it stopped with (Continue: ran to the end).
func monitored(t *testing.T, errs []int64, perCycle int64, b Band) Decision {
	cs, err := NewAsymptotic(0.05, len(errs), b.High-b.Low)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		if err := cs.Add(float64(e) / float64(perCycle)); err != nil {
			t.Fatal(err)
		}
		if d := Decide(cs.Interval().Clip(0, 1), b); d != Continue {
			return d
		}
	}
	return Continue
}

// naive recomputes the fixed-sample Wilson interval of the pooled requests
// after every cycle, as if requests were independent, and stops at the
// first look whose interval decides.
func naive(t *testing.T, errs []int64, perCycle int64, b Band) Decision {
	var e, n int64
	for _, x := range errs {
		e += x
		n += perCycle
		p, err := stats.Wilson(e, n, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if d := Decide(Interval{p.CI.Low, p.CI.High}, b); d != Continue {
			return d
		}
	}
	return Continue
}

// Monte Carlo: R replicates per scenario, fixed seeds (the test is
// deterministic). A method is held to "false verdict rate <= 5%" when its
// count of false verdicts is not significantly above 5% of R: at most the
// 99.9% quantile of Binomial(R, 0.05) (normal approximation, +3.09 sd),
// i.e. 71 of 1000 (7.1%); a method whose true rate is 5% fails this test
// one time in a thousand. The negative control must be significantly
// above 5%: its count's 99.9% Wilson lower bound over 0.05.
const replicates = 1000

func allowed(r int) int {
	p := 0.05
	return int(math.Floor(float64(r)*p + 3.09*math.Sqrt(float64(r)*p*(1-p))))
}

func TestMonitoringAfterEveryCycleKeepsFalseVerdictsUnderFivePercent(t *testing.T) {
	const perCycle, n = 2000, 40
	// GUIDE sidecar's 503 rate is about 0.1%; the band here is a factor
	// of two around a documented 0.1%: [0.05%, 0.2%].
	band := Band{Low: 0.0005, High: 0.002}
	for _, sc := range []struct {
		name  string
		mu    float64
		wrong Decision // the verdict that would be false
	}{
		{"true rate inside, near the upper edge", 0.0019, Outside},
		{"true rate inside, near the lower edge", 0.00055, Outside},
		{"true rate just above the band", 0.0022, Inside},
		{"true rate just below the band", 0.00045, Inside},
	} {
		t.Run(sc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(sc.mu*1e7)))
			var seqFalse, naiveFalse, seqStopped int
			for range replicates {
				errs := cycles(rng, n, perCycle, sc.mu)
				d := monitored(t, errs, perCycle, band)
				if d == sc.wrong {
					seqFalse++
				}
				if d != Continue {
					seqStopped++
				}
				if naive(t, errs, perCycle, band) == sc.wrong {
					naiveFalse++
				}
			}
			t.Logf("mu %.3g%%: confidence sequence false %d/%d (stopped early %d), naive repeated Wilson false %d/%d", sc.mu*100, seqFalse, replicates, seqStopped, naiveFalse, replicates)
			if seqFalse > allowed(replicates) {
				t.Errorf("confidence sequence: %d false verdicts of %d, more than the %d a 5%% rate allows", seqFalse, replicates, allowed(replicates))
			}
			// Negative control: the naive looks exceed 5% significantly.
			lb, err := stats.Wilson(int64(naiveFalse), replicates, 0.998)
			if err != nil {
				t.Fatal(err)
			}
			if lb.CI.Low <= 0.05 {
				t.Errorf("negative control: naive repeated Wilson intervals gave %d/%d false verdicts, not significantly above 5%%", naiveFalse, replicates)
			}
		})
	}
}

// The sequence stops early where the verdict is clear: no error at all
// against a band that needs some, and no error against a documented
// zero's band [0, max_rate]. Rates inside a narrow band, or far above it,
// rarely decide early with errors this clustered (bursts failing up to
// half a cycle's requests): 40 cycles hold far less information than
// 80,000 independent requests would, which is what the naive Wilson
// interval pretends.
func TestClearCasesStopEarly(t *testing.T) {
	const perCycle, n = 2000, 40
	narrow, zero := Band{Low: 0.0005, High: 0.002}, Band{Low: 0, High: 0.005}
	for _, sc := range []struct {
		band Band
		mu   float64
		want Decision
	}{{narrow, 0, Outside}, {zero, 0, Inside}} {
		rng := rand.New(rand.NewPCG(7, uint64(sc.mu*1e7)))
		stopped, cyclesUsed := 0, 0
		for range 100 {
			errs := cycles(rng, n, perCycle, sc.mu)
			cs, _ := NewAsymptotic(0.05, n, sc.band.High-sc.band.Low)
			for i, e := range errs {
				_ = cs.Add(float64(e) / perCycle)
				if Decide(cs.Interval().Clip(0, 1), sc.band) == sc.want {
					stopped++
					cyclesUsed += i + 1
					break
				}
			}
		}
		if stopped < 90 {
			t.Errorf("mu %g, band %+v: stopped with %s in %d of 100 loads", sc.mu, sc.band, sc.want, stopped)
			continue
		}
		t.Logf("mu %g, band %+v: %s in %d of 100 loads, %.1f of %d cycles on average", sc.mu, sc.band, sc.want, stopped, float64(cyclesUsed)/float64(stopped), n)
	}
}

func TestAsymptoticCoversTheMeanUnderContinuousMonitoring(t *testing.T) {
	// Batch means of a skewed latency (lognormal, median 1 ms): the true
	// mean is exp(mu + s^2/2).
	const n = 200
	trueMean := math.Exp(0.5 * 0.8 * 0.8)
	rng := rand.New(rand.NewPCG(3, 4))
	miss := 0
	for range replicates {
		a, err := NewAsymptotic(0.05, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		missed := false
		for range n {
			// one batch: the mean of 50 requests
			s := 0.0
			for range 50 {
				s += math.Exp(0.8 * rng.NormFloat64())
			}
			_ = a.Add(s / 50)
			if iv := a.Interval(); a.N() >= 2 && (iv.Low > trueMean || iv.High < trueMean) {
				missed = true
			}
		}
		if missed {
			miss++
		}
	}
	t.Logf("asymptotic sequence missed the mean at some look in %d of %d runs", miss, replicates)
	if miss > allowed(replicates) {
		t.Errorf("%d of %d runs missed the mean at some look, more than the %d a 5%% rate allows", miss, replicates, allowed(replicates))
	}
}

func TestBadInputIsRefused(t *testing.T) {
	if _, err := NewBetting(0); err == nil {
		t.Error("alpha 0 accepted")
	}
	if _, err := NewAsymptotic(0.05, 0, 1); err == nil {
		t.Error("optimum 0 accepted")
	}
	b, _ := NewBetting(0.05)
	if err := b.Add(1.5); err == nil {
		t.Error("observation 1.5 accepted")
	}
	a, _ := NewAsymptotic(0.05, 10, 1)
	if err := a.Add(math.NaN()); err == nil {
		t.Error("NaN accepted")
	}
}

// The betting sequence covers a bounded mean at every look. It is not the
// rate monitor's: with only the [0, 1] bound it cannot certify a 0.1%
// rate from 40 cycles (one cycle failing every request would move the
// mean by 2.5%), which this test shows beside the coverage.
func TestBettingCoversABoundedMean(t *testing.T) {
	const n, mean = 100, 0.3
	rng := rand.New(rand.NewPCG(5, 6))
	miss := 0
	for range 300 {
		b, err := NewBetting(0.05)
		if err != nil {
			t.Fatal(err)
		}
		missed := false
		for range n {
			_ = b.Add(rng.Float64() * 2 * mean) // uniform on [0, 0.6]
			iv, err := b.Interval()
			if err != nil {
				t.Fatal(err)
			}
			missed = missed || iv.Low > mean || iv.High < mean
		}
		if missed {
			miss++
		}
	}
	if miss > allowed(300) {
		t.Errorf("betting sequence missed the mean in %d of 300 runs, more than %d", miss, allowed(300))
	}
	zeros, _ := NewBetting(0.05)
	for range 40 {
		_ = zeros.Add(0)
	}
	iv, _ := zeros.Interval()
	t.Logf("missed %d of 300; after 40 error-free cycles its interval is %s", miss, iv)
	if iv.High < 0.002 {
		t.Errorf("40 zeros bounded in [0, 1] certified a mean under 0.2%%: %s", iv)
	}
}
