package sequential

import "fmt"

// Band is a claim's acceptance band [Low, High] (framework/verdict's band
// of the documented value; for a documented zero, [0, max_rate]).
type Band struct{ Low, High float64 }

// Decision says whether a load can stop.
type Decision int

const (
	// Continue: the interval still overlaps the band's edge; the verdict
	// could go either way.
	Continue Decision = iota
	// Inside: the whole interval lies in the band; a reproduced verdict
	// can no longer change.
	Inside
	// Outside: the interval misses the band; not reproduced can no longer
	// change.
	Outside
)

func (d Decision) String() string {
	switch d {
	case Inside:
		return "inside the band"
	case Outside:
		return "outside the band"
	}
	return "continue"
}

// Decide compares the interval with the band.
func Decide(iv Interval, b Band) Decision {
	switch {
	case iv.High < b.Low || iv.Low > b.High:
		return Outside
	case iv.Low >= b.Low && iv.High <= b.High:
		return Inside
	}
	return Continue
}

// Reason is the report's stopping reason for a load stopped by d after
// n of planned units ("cycles", "batches").
func Reason(d Decision, iv Interval, b Band, n, planned int, unit string) string {
	return fmt.Sprintf("stopped after %d of %d %s: the %s confidence sequence %s is %s [%.4g, %.4g]", n, planned, unit, "anytime-valid", iv, d, b.Low, b.High)
}

// Clip bounds an interval to what the quantity can be (a proportion lies
// in [0, 1]): a normal-mixture interval around a run of zero-error cycles
// reaches below 0, which no rate can.
func (i Interval) Clip(lo, hi float64) Interval {
	return Interval{Low: max(i.Low, lo), High: min(i.High, hi)}
}
