package stats

import (
	"fmt"
	"math"
	"strconv"
)

// Overhead is the latency (or any cost) of a mode over a baseline measured
// in the same run: Delta = Value-Baseline, Factor = Value/Baseline.
// A zero Baseline gives Factor +Inf (or NaN when Value is also 0), which no
// tolerance accepts, rather than a made-up number.
type Overhead struct {
	Baseline, Value, Delta, Factor float64
}

// OverheadOf compares value against baseline, e.g. sidecar P50 2.11 ms over
// no-mesh P50 0.82 ms: Delta 1.29, Factor 2.57.
func OverheadOf(value, baseline float64) Overhead {
	return Overhead{Baseline: baseline, Value: value, Delta: value - baseline, Factor: value / baseline}
}

// String renders the overhead unitless, e.g. "2.11 over 0.82: +1.29 (2.57x)".
func (o Overhead) String() string {
	return fmt.Sprintf("%.4g over %.4g: %+.4g (%.3gx)", o.Value, o.Baseline, o.Delta, o.Factor)
}

// LittleCheck is the result of LittlesLaw: HYBRID's two method checks on one
// fortio run.
//
// Little's law: in a closed loop of C connections that is saturated, each
// connection has exactly one request in flight, so mean latency equals
// C / throughput. A measured mean far from that means the mean (or the
// throughput) is wrong. Below saturation the loop idles between requests and
// the law says nothing about latency, so it is not applied.
//
// Histogram resolution: fortio's percentiles come from a histogram; when the
// bucket width is coarse relative to the latencies measured, percentiles
// become bucket positions (HYBRID saw 0.5/0.9/0.99 ms at 1 ms resolution).
type LittleCheck struct {
	Connections     int
	ActualQPS       float64
	RequestedQPS    float64 // <=0 means unlimited (saturation)
	MeanSeconds     float64 // measured mean latency (exact mean, not from buckets)
	P50Seconds      float64 // from the histogram
	Resolution      float64 // histogram resolution in seconds
	Tolerance       float64 // accepted RelativeError, e.g. 0.1
	Saturated       bool    // true when RequestedQPS<=0, or ActualQPS < 0.95*RequestedQPS with the connections busy (not ClientLimited)
	Occupancy       float64 // MeanSeconds*ActualQPS/Connections: the busy fraction of each connection
	ClientLimited   bool    // fell short of RequestedQPS with Occupancy < 1-Tolerance: the client was starved, not the server slow
	ExpectedMean    float64 // Connections/ActualQPS when Saturated, else 0
	RelativeError   float64 // |MeanSeconds-ExpectedMean|/ExpectedMean when Saturated
	Consistent      bool    // false if saturated and RelativeError > tolerance
	CoarseHistogram bool    // true if Resolution > P50Seconds/10 or Resolution > MeanSeconds/10
	// Err is non-nil when an input is out of range (it names the value);
	// then Consistent is false and OK reports false.
	Err error
	// LawReason is the Little's-law sentence (or why it does not apply),
	// HistogramReason the resolution sentence; Reason is both, "; "-joined
	// (or Err's text alone).
	LawReason       string
	HistogramReason string
	Reason          string
}

// LawVerdict is what Little's law says about one run, apart from the
// histogram check.
type LawVerdict string

const (
	// LawHolds: saturated, and the mean is within tolerance of C/throughput.
	LawHolds LawVerdict = "holds"
	// LawViolated: saturated, and the mean is not.
	LawViolated LawVerdict = "violated"
	// LawNotApplicable: the run was paced (it reached its requested qps with
	// connections idle between calls), so the law does not bound the mean.
	// This is not a failure: most latency loads are paced on purpose.
	LawNotApplicable LawVerdict = "not applicable"
	// LawUnchecked: an input was out of range (see Err).
	LawUnchecked LawVerdict = "unchecked"
)

// Law returns the Little's-law verdict alone. OK() still combines it with the
// histogram check; a report should show the two apart, since a paced run can
// neither pass nor fail Little's law.
func (c LittleCheck) Law() LawVerdict {
	switch {
	case c.Err != nil:
		return LawUnchecked
	case !c.Saturated:
		return LawNotApplicable
	case c.Consistent:
		return LawHolds
	}
	return LawViolated
}

// saturationFraction: a run that reaches less than this fraction of its
// requested qps is not pacing requests, so its loop is saturated.
const saturationFraction = 0.95

// coarseFactor: the histogram must resolve at least a tenth of the latencies
// it reports, or the percentiles are bucket positions.
const coarseFactor = 10

// LittlesLaw checks a closed-loop run: connections, actual and requested
// qps (requestedQPS <= 0 means no limit), the exact mean latency and the
// histogram P50 and resolution in seconds, and the relative tolerance for
// Little's law. Inputs out of range (connections <= 0, actualQPS <= 0,
// meanSeconds <= 0, p50Seconds < 0, resolution <= 0, tolerance < 0, or
// any NaN or Inf) set Err and make the check fail.
func LittlesLaw(connections int, actualQPS, requestedQPS, meanSeconds, p50Seconds, resolution, tolerance float64) LittleCheck {
	c := LittleCheck{
		Connections: connections, ActualQPS: actualQPS, RequestedQPS: requestedQPS,
		MeanSeconds: meanSeconds, P50Seconds: p50Seconds, Resolution: resolution, Tolerance: tolerance,
	}
	if err := checkLittleInputs(connections, actualQPS, requestedQPS, meanSeconds, p50Seconds, resolution, tolerance); err != nil {
		c.Err = err
		c.Reason = err.Error()
		return c
	}
	// A paced run that fell short of its rate is saturated only when its
	// connections were busy: mean x throughput close to (or above) the
	// connection count. Fell short with connections idle means the client
	// itself was starved (a contended host), and the law bounds nothing.
	c.Occupancy = meanSeconds * actualQPS / float64(connections)
	fellShort := requestedQPS > 0 && actualQPS < saturationFraction*requestedQPS
	c.ClientLimited = fellShort && c.Occupancy < 1-tolerance
	c.Saturated = requestedQPS <= 0 || (fellShort && !c.ClientLimited)
	c.Consistent = true
	if c.Saturated {
		c.ExpectedMean = float64(connections) / actualQPS
		c.RelativeError = math.Abs(meanSeconds-c.ExpectedMean) / c.ExpectedMean
		c.Consistent = c.RelativeError <= tolerance
		verb := "matches"
		if !c.Consistent {
			verb = "disagrees with"
		}
		c.LawReason = fmt.Sprintf("mean %s ms %s Little's law %d connections / %s qps = %s ms (off by %s, tolerance %s)",
			ms(meanSeconds), verb, connections, qps(actualQPS), ms(c.ExpectedMean), percent(c.RelativeError), percent(tolerance))
	} else if c.ClientLimited {
		c.LawReason = fmt.Sprintf("not saturated (%s of %s requested qps with connections busy %s of the time: the client, not the server, fell behind), so Little's law does not bound the mean",
			qps(actualQPS), qps(requestedQPS), percent(c.Occupancy))
	} else {
		c.LawReason = fmt.Sprintf("not saturated (%s of %s requested qps), so Little's law does not bound the mean",
			qps(actualQPS), qps(requestedQPS))
	}
	switch {
	case resolution > p50Seconds/coarseFactor:
		c.CoarseHistogram = true
		c.HistogramReason = fmt.Sprintf("histogram resolution %s ms is coarser than a tenth of P50 %s ms: percentiles are bucket positions",
			ms(resolution), ms(p50Seconds))
	case resolution > meanSeconds/coarseFactor:
		c.CoarseHistogram = true
		c.HistogramReason = fmt.Sprintf("histogram resolution %s ms is coarser than a tenth of mean %s ms: percentiles are bucket positions",
			ms(resolution), ms(meanSeconds))
	default:
		c.HistogramReason = fmt.Sprintf("histogram resolution %s ms resolves P50 %s ms and mean %s ms",
			ms(resolution), ms(p50Seconds), ms(meanSeconds))
	}
	c.Reason = c.LawReason + "; " + c.HistogramReason
	return c
}

// OK reports whether both checks pass: Consistent && !CoarseHistogram, and
// the inputs were valid.
func (c LittleCheck) OK() bool { return c.Err == nil && c.Consistent && !c.CoarseHistogram }

func checkLittleInputs(connections int, actualQPS, requestedQPS, meanSeconds, p50Seconds, resolution, tolerance float64) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case connections <= 0:
		return fmt.Errorf("stats: LittlesLaw: connections %d must be > 0", connections)
	case !finite(actualQPS) || actualQPS <= 0:
		return fmt.Errorf("stats: LittlesLaw: actual qps %v must be a finite number > 0", actualQPS)
	case !finite(requestedQPS):
		return fmt.Errorf("stats: LittlesLaw: requested qps %v must be finite (<= 0 means unlimited)", requestedQPS)
	case !finite(meanSeconds) || meanSeconds <= 0:
		return fmt.Errorf("stats: LittlesLaw: mean latency %v s must be a finite number > 0", meanSeconds)
	case !finite(p50Seconds) || p50Seconds < 0:
		return fmt.Errorf("stats: LittlesLaw: P50 %v s must be a finite number >= 0", p50Seconds)
	case !finite(resolution) || resolution <= 0:
		return fmt.Errorf("stats: LittlesLaw: histogram resolution %v s must be a finite number > 0", resolution)
	case !finite(tolerance) || tolerance < 0:
		return fmt.Errorf("stats: LittlesLaw: tolerance %v must be a finite fraction >= 0, e.g. 0.1", tolerance)
	}
	return nil
}

// ms formats seconds as milliseconds: three decimals from 0.1 ms up, three
// significant digits below (0.0736, 0.0001), so sub-resolution values stay
// visible in a Reason.
func ms(seconds float64) string {
	v := seconds * 1e3
	if v == 0 || math.Abs(v) >= 0.1 {
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func qps(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// PerCycle is errors per rollout cycle; modes complete different numbers of
// cycles in the same time, so raw error counts are not comparable.
type PerCycle struct {
	Errors   int64
	Cycles   int
	PerCycle float64
}

// ErrorsPerCycle divides errors by completed rollout cycles.
// Errors: cycles <= 0, errors < 0.
func ErrorsPerCycle(errors int64, cycles int) (PerCycle, error) {
	if cycles <= 0 {
		return PerCycle{}, fmt.Errorf("stats: cycles %d must be > 0 (a run that completed no rollout cycle has no per-cycle rate)", cycles)
	}
	if errors < 0 {
		return PerCycle{}, fmt.Errorf("stats: errors %d must be >= 0", errors)
	}
	return PerCycle{Errors: errors, Cycles: cycles, PerCycle: float64(errors) / float64(cycles)}, nil
}

// ShareOf is part over whole, e.g. the share of the sidecar's latency
// overhead over no mesh that HTTP parsing takes (HYBRID: 0.87 of 2.22 ms,
// 39%). A whole that is not positive has no share: the error names it
// rather than dividing by it.
func ShareOf(part, whole float64) (float64, error) {
	if !(whole > 0) || math.IsInf(whole, 1) || math.IsNaN(part) || math.IsInf(part, 0) {
		return 0, fmt.Errorf("stats: ShareOf: part %v of whole %v: the whole must be a positive finite number (a cost over a baseline that is not above it has no share)", part, whole)
	}
	return part / whole, nil
}
