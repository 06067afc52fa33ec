package verdict

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// footprint is one proxy's working set (Value, MiB) and CPU (VCPU, cores)
// under a stated load, each judged in its band; the source tells modes
// apart by both.
type footprintMetric struct{ plain }

// ValidateDocumented: a documented footprint states both figures.
func (footprintMetric) ValidateDocumented(c *claims.Claim, add func(string, ...any)) {
	eachDocumented(c, func(m mode.Mode, v claims.Value) {
		if !v.Expected && (v.Value == nil || v.VCPU == nil) {
			add("mode %s: a proxy footprint needs both value (working set, MiB) and vcpu", m)
		}
	})
}

func (footprintMetric) Judge(c *claims.Claim, _ mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part) {
	return judgeFootprint(c, doc, got)
}

// Bands: memory and CPU, both headlines.
func (footprintMetric) Bands(c *claims.Claim, _ mode.Mode, doc claims.Value) ([]Band, int) {
	if doc.Value == nil || doc.VCPU == nil {
		return nil, 0
	}
	return []Band{bandOf("working set (MiB)", *doc.Value, c.Tolerance), bandOf("CPU (vCPU)", *doc.VCPU, c.Tolerance)}, 2
}

// AsMeasured: under exactly the documented load.
func (footprintMetric) AsMeasured(c *claims.Claim, _ claims.Value, got *Measurement) {
	if c.Setup.QPS > 0 {
		q := c.Setup.QPS
		got.AchievedQPS = &q
	}
}

// MinLoadShare is how much of a footprint claim's documented qps the load
// must reach for its CPU to say anything about the documented CPU: a proxy
// at half the rate does about half the work, so it would be judged against
// a figure for a load it never carried.
const MinLoadShare = 0.9

// judgeFootprint judges a proxy's working set (Value, MiB) and CPU (VCPU,
// cores), each in its band from the one tolerance; reproduced needs both.
// Under a load that fell short of the setup's qps it is inconclusive
// whatever the numbers.
func judgeFootprint(c *claims.Claim, doc claims.Value, got Measurement) (Result, string, []Part) {
	if doc.Value == nil || doc.VCPU == nil {
		return Inconclusive, "the registry documents no working set and CPU for this mode", nil
	}
	if got.Value == nil || got.VCPU == nil {
		return Inconclusive, "no working set and CPU were measured", nil
	}
	mlo, mhi, how := band(*doc.Value, c.Tolerance)
	clo, chi, _ := band(*doc.VCPU, c.Tolerance)
	mark := func(v, lo, hi float64) string {
		if v >= lo && v <= hi {
			return "in"
		}
		return "out"
	}
	s := fmt.Sprintf("working set %s MiB vs documented %s (%s: [%s, %s], %s), CPU %s vCPU vs documented %s ([%s, %s], %s)",
		num(*got.Value), num(*doc.Value), how, num(mlo), num(mhi), mark(*got.Value, mlo, mhi),
		num(*got.VCPU), num(*doc.VCPU), num(clo), num(chi), mark(*got.VCPU, clo, chi))
	in := func(v, lo, hi float64) Result {
		if mark(v, lo, hi) == "in" {
			return Reproduced
		}
		return NotReproduced
	}
	parts := []Part{
		{Name: "working set", Result: in(*got.Value, mlo, mhi), Reason: fmt.Sprintf("working set %s MiB vs documented %s (%s: [%s, %s])", num(*got.Value), num(*doc.Value), how, num(mlo), num(mhi))},
		{Name: "CPU", Result: in(*got.VCPU, clo, chi), Reason: fmt.Sprintf("CPU %s vCPU vs documented %s ([%s, %s])", num(*got.VCPU), num(*doc.VCPU), num(clo), num(chi))},
	}
	if want := c.Setup.QPS; want > 0 {
		load := Part{Name: "load", Result: Reproduced}
		if got.AchievedQPS == nil {
			load.Result, load.Reason = Inconclusive, "the load's achieved qps was not recorded"
			return Inconclusive, s + "; " + load.Reason, append(parts, load)
		}
		s += fmt.Sprintf(", under %s qps (documented %s)", num(*got.AchievedQPS), num(want))
		load.Reason = fmt.Sprintf("%s qps of the documented %s", num(*got.AchievedQPS), num(want))
		if *got.AchievedQPS < MinLoadShare*want {
			load.Result = Inconclusive
			load.Reason += fmt.Sprintf(": under %s of the documented rate", pct(MinLoadShare))
			return Inconclusive, s + fmt.Sprintf(": the load reached under %s of the documented rate", pct(MinLoadShare)), append(parts, load)
		}
		parts = append(parts, load)
	}
	if mark(*got.Value, mlo, mhi) == "in" && mark(*got.VCPU, clo, chi) == "in" {
		return Reproduced, s, parts
	}
	return NotReproduced, s, parts
}
