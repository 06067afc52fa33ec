package verdict

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/stats"
)

// scalar is one number in the metric's unit (ms, s, qps, MB/s, a share),
// judged in the band around the documented value, by the interval of its
// repeats where the spec repeated it; a documented value at a scale (at)
// adds the growth to that scale as a second part.
type scalarMetric struct {
	plain
	// better is Reading's Better.
	better int
}

func (scalarMetric) Judge(c *claims.Claim, _ mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part) {
	r1, s1 := judgeScalar(c, doc, got)
	parts := []Part{{Name: "value", Result: r1, Reason: s1}}
	if doc.At != nil {
		r2, s2 := judgeGrowth(c, doc, got)
		parts = append(parts, Part{Name: fmt.Sprintf("growth to %d Services", doc.At.Services), Result: r2, Reason: s2})
	}
	res, reason, _ := fold(parts)
	return res, reason, parts
}

func (scalarMetric) Bands(c *claims.Claim, _ mode.Mode, doc claims.Value) ([]Band, int) {
	return valueBands(c, doc), 1
}

func (s scalarMetric) Reading() Reading { return Reading{Better: s.better} }

// valueBands are the bands of a documented value and, at a scale, of its
// growth to that scale.
func valueBands(c *claims.Claim, doc claims.Value) []Band {
	if doc.Value == nil {
		return nil
	}
	out := []Band{bandOf("value", *doc.Value, c.Tolerance)}
	if doc.At != nil {
		out = append(out, bandOf(fmt.Sprintf("growth to %d", doc.At.Services), doc.At.Value-*doc.Value, c.Tolerance))
	}
	return out
}

func judgeScalar(c *claims.Claim, doc claims.Value, got Measurement) (Result, string) {
	if doc.Value == nil {
		return Inconclusive, "the registry documents no value for this mode"
	}
	if got.Value == nil {
		return Inconclusive, "no value was measured"
	}
	lo, hi, how := band(*doc.Value, c.Tolerance)
	m := *got.Value
	if len(got.Runs) > 1 {
		s, err := stats.Summarize(got.Runs, Confidence)
		if err == nil {
			return classify(s.Mean, s.CI.Low, s.CI.High, lo, hi),
				fmt.Sprintf("%s %s over %d runs [%s, %s] vs documented %s (%s: [%s, %s])", c.Metric, num(s.Mean), s.N, num(s.CI.Low), num(s.CI.High), num(*doc.Value), how, num(lo), num(hi))
		}
	}
	r := NotReproduced
	if m >= lo && m <= hi {
		r = Reproduced
	}
	return r, fmt.Sprintf("%s %s (one run) vs documented %s (%s: [%s, %s])", c.Metric, num(m), num(*doc.Value), how, num(lo), num(hi))
}

// judgeGrowth judges how much the value grew from none to the documented
// scale (kubeproxy: new-Service readiness with 10,000 Services minus with
// none). Growth measured at a smaller scale says nothing about the
// documented one (it need not be linear), so it is inconclusive.
func judgeGrowth(c *claims.Claim, doc claims.Value, got Measurement) (Result, string) {
	if got.At == nil || got.Value == nil {
		return Inconclusive, fmt.Sprintf("growth: no value was measured with %d Services", doc.At.Services)
	}
	d := doc.At.Value - *doc.Value
	m := got.At.Value - *got.Value
	lo, hi, how := band(d, c.Tolerance)
	s := fmt.Sprintf("growth to %d Services %s (%s -> %s) vs documented %s at %d (%s: [%s, %s])",
		got.At.Services, num(m), num(*got.Value), num(got.At.Value), num(d), doc.At.Services, how, num(lo), num(hi))
	if got.At.Services < doc.At.Services {
		return Inconclusive, s + ": measured with fewer Services than documented"
	}
	if m >= lo && m <= hi {
		return Reproduced, s
	}
	return NotReproduced, s
}
