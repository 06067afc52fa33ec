package verdict

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/stats"
)

// ratio is one mode's rate over another's with its interval
// (Measurement.Ratio), judged in the band around the documented ratio.
type ratioMetric struct{ plain }

func (ratioMetric) Judge(c *claims.Claim, _ mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part) {
	res, reason := judgeRatio(c, doc, got)
	return res, reason, nil
}

func (ratioMetric) Bands(c *claims.Claim, _ mode.Mode, doc claims.Value) ([]Band, int) {
	return valueBands(c, doc), 1
}

// AsMeasured: exactly the documented ratio, an interval of zero width.
func (ratioMetric) AsMeasured(_ *claims.Claim, doc claims.Value, got *Measurement) {
	if doc.Value != nil {
		v := *doc.Value
		got.Ratio = &stats.RatioEstimate{Estimate: v, CI: stats.Interval{Low: v, High: v}, Confidence: Confidence}
	}
}

func judgeRatio(c *claims.Claim, doc claims.Value, got Measurement) (Result, string) {
	if doc.Value == nil {
		return Inconclusive, "the registry documents no ratio"
	}
	if got.Ratio == nil {
		return Inconclusive, "no ratio was measured (needs a nonzero rate in both modes)"
	}
	lo, hi, how := band(*doc.Value, c.Tolerance)
	r := got.Ratio
	s := fmt.Sprintf("ratio %s [%s, %s] vs documented %s (%s: [%s, %s])", num(r.Estimate), num(r.CI.Low), num(r.CI.High), num(*doc.Value), how, num(lo), num(hi))
	return classify(r.Estimate, r.CI.Low, r.CI.High, lo, hi), s
}
