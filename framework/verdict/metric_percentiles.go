package verdict

import (
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// percentiles are a latency distribution's percentiles in ms (or a
// stream's event spacing), each judged in its band around the documented
// one; with a difference reference, each percentile's difference from the
// same run's baseline mode against the documented difference.
type percentilesMetric struct{ plain }

func (percentilesMetric) Judge(c *claims.Claim, _ mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part) {
	if ref := c.Reference; ref != nil && ref.Compare == claims.Difference {
		return judgeDifferences(c, doc, got)
	}
	return judgePercentiles(c, doc, got)
}

func (percentilesMetric) Bands(c *claims.Claim, _ mode.Mode, doc claims.Value) ([]Band, int) {
	ref := c.Reference
	difference := ref != nil && ref.Compare == claims.Difference
	base := map[string]float64{}
	if difference {
		base = c.Documented[ref.Mode].Percentiles
	}
	var out []Band
	for _, k := range SortedPercentiles(doc.Percentiles) {
		d := doc.Percentiles[k]
		if difference {
			b, ok := base[k]
			if !ok {
				continue
			}
			d -= b
		}
		out = append(out, bandOf("P"+k, d, c.Tolerance))
	}
	return out, 1
}

// Reading: a latency is better lower.
func (percentilesMetric) Reading() Reading { return Reading{Better: -1} }

// judgeDifferences judges each percentile's difference from the same run's
// reference mode against the documented difference, so a cluster whose
// absolute latency differs from the source's can still show the overhead.
func judgeDifferences(c *claims.Claim, doc claims.Value, got Measurement) (Result, string, []Part) {
	ref := c.Reference.Mode
	docRef := c.Documented[ref]
	if got.Reference == nil || len(got.Reference.Percentiles) == 0 {
		return Inconclusive, fmt.Sprintf("no same-run %s percentiles were measured to take differences from", ref), nil
	}
	docDiff, gotDiff := map[string]float64{}, map[string]float64{}
	for k, d := range doc.Percentiles {
		b, ok := docRef.Percentiles[k]
		if !ok {
			continue
		}
		docDiff[k] = d - b
		if g, ok := got.Percentiles[k]; ok {
			if gb, ok := got.Reference.Percentiles[k]; ok {
				gotDiff[k] = g - gb
			}
		}
	}
	res, s, parts := judgePercentiles(c, claims.Value{Percentiles: docDiff}, Measurement{Percentiles: gotDiff})
	for i := range parts {
		parts[i].Reason = fmt.Sprintf("over %s of the same run, %s", ref, parts[i].Reason)
	}
	return res, fmt.Sprintf("over %s of the same run, %s", ref, s), parts
}

func judgePercentiles(c *claims.Claim, doc claims.Value, got Measurement) (Result, string, []Part) {
	if len(doc.Percentiles) == 0 {
		return Inconclusive, "the registry documents no percentiles for this mode", nil
	}
	if len(got.Percentiles) == 0 {
		return Inconclusive, "no percentiles were measured", nil
	}
	keys := SortedPercentiles(doc.Percentiles)
	res := Reproduced
	var texts []string
	var parts []Part
	_, _, how := band(1, c.Tolerance)
	for _, k := range keys {
		d := doc.Percentiles[k]
		m, ok := got.Percentiles[k]
		if !ok {
			res = worst(res, Inconclusive)
			texts = append(texts, fmt.Sprintf("P%s not measured", k))
			parts = append(parts, Part{Name: "P" + k, Result: Inconclusive, Reason: fmt.Sprintf("P%s not measured", k)})
			continue
		}
		lo, hi, _ := band(d, c.Tolerance)
		mark, r := "ok", Reproduced
		if m < lo || m > hi {
			res, mark, r = NotReproduced, "out", NotReproduced
		}
		texts = append(texts, fmt.Sprintf("P%s %s vs %s (%s)", k, num(m), num(d), mark))
		parts = append(parts, Part{Name: "P" + k, Result: r, Reason: fmt.Sprintf("ms, P%s %s vs documented %s (%s: [%s, %s])", k, num(m), num(d), how, num(lo), num(hi))})
	}
	return res, fmt.Sprintf("ms, measured vs documented, %s each: %s", how, strings.Join(texts, ", ")), parts
}
