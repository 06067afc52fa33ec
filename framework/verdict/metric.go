package verdict

import (
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// Metric is one shape of value a claim documents and a spec measures (an
// outcome, a count of a total, percentiles, a scalar, ...): what its
// documented values must hold, how a measurement is judged against them,
// the bands that judgement checks, and how a report reads its numbers.
// Each shape is a file metric_<shape>.go; metrics names the registry
// metrics each one judges.
type Metric interface {
	// ValidateDocumented reports, through add, what the claim's documented
	// values lack for Judge (claims.Parse calls it for every claim of the
	// metric, beside the structure it checks for all).
	ValidateDocumented(c *claims.Claim, add func(format string, a ...any))
	// Judge judges got against doc, the value documented for mode m (the
	// measurement's variant's, never a difference's baseline mode): the
	// result, why in numbers, and the judged quantities of a compound claim
	// (one or none for a claim that judges one quantity).
	Judge(c *claims.Claim, m mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part)
	// Bands are the bands Judge checks against doc, headline first, and how
	// many of them are headlines: the quantities the source tells modes
	// apart by.
	Bands(c *claims.Claim, m mode.Mode, doc claims.Value) (bands []Band, headlines int)
	// AsMeasured sets what a measurement of exactly doc holds beyond the
	// fields it shares with a documented value (fromValue).
	AsMeasured(c *claims.Claim, doc claims.Value, got *Measurement)
	// Reading says how a report reads the metric's measured numbers.
	Reading() Reading
}

// Reading is how a report reads a metric's measured numbers.
type Reading struct {
	// Rate names the measured count of a total ("503 rate"); empty for a
	// metric that measures no rate.
	Rate string
	// Better is the direction in which a change of the measured value is
	// an improvement: -1 lower (times), +1 higher (throughput), 0 unknown.
	Better int
}

// metrics are the registry's metrics and the shape that judges each, in
// the order an unknown metric's error lists them.
var metrics = []struct {
	name  claims.Metric
	shape Metric
}{
	{claims.Outcome, outcomeMetric{}},
	{claims.LatencyPercentiles, percentilesMetric{}},
	{claims.LatencyOverhead, scalarMetric{better: -1}},
	{claims.LatencyMean, scalarMetric{better: -1}},
	{claims.ErrorRate, rateMetric{label: "503 rate", countAndTotal: true}},
	{claims.RateRatio, ratioMetric{}},
	{claims.DuplicateCount, rateMetric{label: "duplicate rate"}},
	{claims.Throughput, scalarMetric{better: +1}},
	{claims.Bandwidth, scalarMetric{better: +1}},
	{claims.IntervalMs, percentilesMetric{}},
	{claims.TimeToReady, scalarMetric{better: -1}},
	{claims.ResourceBudget, scalarMetric{}},
	{claims.QueriesPerCore, scalarMetric{better: +1}},
	{claims.Stability, stabilityMetric{}},
	{claims.SuccessRate, rateMetric{label: "non-200 rate"}},
	{claims.CostShare, scalarMetric{}},
	{claims.FailureRate, rateMetric{label: "client-visible failure rate"}},
	{claims.ProxyFootprint, footprintMetric{}},
	{claims.Attribution, attributionMetric{}},
	{claims.ConnectFailureRate, rateMetric{label: "connect failure rate", perLimit: true}},
}

func init() {
	for _, x := range metrics {
		claims.RegisterMetric(x.name, x.shape)
	}
}

// MetricOf is the shape that judges metric name; a name the registry
// does not know is judged as a scalar value.
func MetricOf(name claims.Metric) Metric {
	for _, x := range metrics {
		if x.name == name {
			return x.shape
		}
	}
	return scalarMetric{}
}

// eachDocumented calls f with each documented value of a known mode, in
// mode order.
func eachDocumented(c *claims.Claim, f func(mode.Mode, claims.Value)) {
	for _, m := range mode.All() {
		if v, ok := c.Documented[m]; ok {
			f(m, v)
		}
	}
}

// plain is the default of what a shape has nothing to add to: no
// documented value it needs beyond the common structure, nothing measured
// beyond the documented fields, no rate and no direction.
type plain struct{}

func (plain) ValidateDocumented(*claims.Claim, func(string, ...any)) {}

func (plain) AsMeasured(*claims.Claim, claims.Value, *Measurement) {}

func (plain) Reading() Reading { return Reading{} }

// bandOf is a band named name around d by tolerance t.
func bandOf(name string, d float64, t claims.Tolerance) Band {
	lo, hi, _ := band(d, t)
	return Band{Name: name, Low: lo, High: hi}
}
