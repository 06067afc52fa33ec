package sequential

import (
	"fmt"
	"strings"
)

// MinCycles is the fewest restart cycles a rate monitor judges on, and
// its sequences' burn-in. The normal-mixture sequence is asymptotic; with
// errors in bursts (most cycles error-free) a short run of error-free
// cycles looks certain too soon. In the simulation (rates_test.go, 30%
// burst cycles) the hardest case, a documented zero's band with the true
// rate 1.2x its max, gives 11.8% false verdicts at 10 cycles, 6.6% at 15
// and 4.4% at 20; so 20. A load shorter than that (the CI's scaled loads)
// always runs to its end.
const MinCycles = 20

// RateMonitor watches the rates one load is judged on (a 503 rate and a
// no-response rate, say), one observation per restart cycle: the cycle's
// errors over its requests. It decides once every rate's confidence
// sequence lies wholly inside or outside its band.
type RateMonitor struct {
	names []string
	bands []Band
	cs    []*Asymptotic
	n     int
	// Planned is the source's number of cycles the load would run.
	Planned int
}

// NewRateMonitor watches len(bands) rates at level alpha, tightest around
// planned cycles; names label them in the reason.
func NewRateMonitor(alpha float64, planned int, names []string, bands []Band) (*RateMonitor, error) {
	if len(bands) == 0 || len(names) != len(bands) {
		return nil, fmt.Errorf("sequential: %d bands and %d names: accepted: one name per band, at least one", len(bands), len(names))
	}
	m := &RateMonitor{names: names, bands: bands, Planned: max(planned, MinCycles)}
	for _, b := range bands {
		if !(b.High > b.Low) || b.Low < 0 || b.High > 1 {
			return nil, fmt.Errorf("sequential: band %+v: accepted: 0 <= Low < High <= 1 (a rate's band)", b)
		}
		cs, err := NewAsymptotic(alpha, m.Planned, b.High-b.Low)
		if err != nil {
			return nil, err
		}
		cs.BurnIn = MinCycles
		m.cs = append(m.cs, cs)
	}
	return m, nil
}

// AddCycle takes one cycle's error count per rate and its requests. It
// returns whether the load can stop and why.
func (m *RateMonitor) AddCycle(errs []int64, requests int64) (stop bool, reason string, err error) {
	if len(errs) != len(m.cs) {
		return false, "", fmt.Errorf("sequential: %d error counts for %d rates", len(errs), len(m.cs))
	}
	if requests <= 0 {
		return false, "", fmt.Errorf("sequential: a cycle of %d requests: accepted: at least one", requests)
	}
	for i, e := range errs {
		if e < 0 || e > requests {
			return false, "", fmt.Errorf("sequential: %d errors of %d requests: accepted: 0..requests", e, requests)
		}
		if err := m.cs[i].Add(float64(e) / float64(requests)); err != nil {
			return false, "", err
		}
	}
	m.n++
	if m.n < MinCycles {
		return false, "", nil
	}
	var parts []string
	for i, cs := range m.cs {
		iv := cs.Interval().Clip(0, 1)
		d := Decide(iv, m.bands[i])
		if d == Continue {
			return false, "", nil
		}
		parts = append(parts, fmt.Sprintf("%s %s %s [%.4g, %.4g]", m.names[i], iv, d, m.bands[i].Low, m.bands[i].High))
	}
	return true, fmt.Sprintf("verdict certain after %d of %d planned cycles (95%% anytime-valid confidence sequences over cycles): %s", m.n, m.Planned, strings.Join(parts, "; ")), nil
}

// Cycles is the number of cycles added.
func (m *RateMonitor) Cycles() int { return m.n }
