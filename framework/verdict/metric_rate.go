package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/stats"
)

// rate is a count of a total (503s of requests sent, connections that
// failed of those opened), judged by its Wilson interval against the band
// of the documented count over total, beside the no-response (-1) rate
// where the claim documents one and, with a rate_ratio reference, the
// ratio to the reference claim's rate in the same run.
type rateMetric struct {
	plain
	// label names the rate in verdicts and reports ("503 rate").
	label string
	// countAndTotal: every documented value that sets a count or a total
	// sets both.
	countAndTotal bool
	// perLimit: the rate means nothing without the nf_conntrack_max it
	// was measured under, so every documented value is stated per limit.
	perLimit bool
}

func (r rateMetric) ValidateDocumented(c *claims.Claim, add func(string, ...any)) {
	eachDocumented(c, func(m mode.Mode, v claims.Value) {
		if r.countAndTotal && (v.Count == nil) != (v.Total == nil) {
			add("mode %s: an error rate needs both count and total", m)
		}
		if r.perLimit && len(v.ByConntrackMax) == 0 && !v.Expected {
			add("mode %s: metric %s is stated per nf_conntrack_max: set by_conntrack_max (limit: {count, total, text})", m, c.Metric)
		}
	})
}

func (r rateMetric) Judge(c *claims.Claim, m mode.Mode, doc claims.Value, got Measurement) (Result, string, []Part) {
	parts := judgeRates(r.label, c, doc, got)
	if ref := c.Reference; ref != nil && ref.Compare == claims.RateRatioOf && ref.AppliesTo(m) {
		r2, s2 := judgeReduction(c, m, doc, got)
		parts = append(parts, Part{Name: "ratio to " + ref.Claim, Result: r2, Reason: s2})
	}
	res, reason, _ := fold(parts)
	return res, reason, parts
}

func (rateMetric) Bands(c *claims.Claim, m mode.Mode, doc claims.Value) ([]Band, int) {
	var out []Band
	add := func(name string, count, total *int64) {
		if count == nil || total == nil || *total == 0 {
			return
		}
		if *count == 0 {
			if c.Tolerance.MaxRate != nil {
				// Reproduced needs the upper bound, so the estimate too, <= max_rate.
				out = append(out, Band{Name: name, Low: 0, High: *c.Tolerance.MaxRate})
			}
			return
		}
		if bound, _, ok := unconfirmable(*count, *total, c.Tolerance); ok {
			// Judged only as an upper bound (judgeRate).
			out = append(out, Band{Name: name, Low: 0, High: bound})
			return
		}
		out = append(out, bandOf(name, float64(*count)/float64(*total), c.Tolerance))
	}
	add("rate", doc.Count, doc.Total)
	if doc.Unanswered != nil {
		add("no-response (-1) rate", doc.Unanswered, doc.Total)
	}
	if ref := c.Reference; ref != nil && ref.Compare == claims.RateRatioOf && ref.AppliesTo(m) && ref.Of != nil {
		rd, ok := ref.Of.DocumentedFor(m)
		if ok && rd.Count != nil && rd.Total != nil && *rd.Count > 0 && doc.Count != nil && doc.Total != nil {
			d := (float64(*doc.Count) / float64(*doc.Total)) / (float64(*rd.Count) / float64(*rd.Total))
			out = append(out, bandOf("ratio to "+ref.Claim, d, *ref.Tolerance))
		}
	}
	return out, 1
}

func (r rateMetric) Reading() Reading { return Reading{Rate: r.label} }

// judgeRates judges the primary rate (Count of Total) and, where the claim
// documents it, the no-response rate (fortio -1): one part each.
func judgeRates(label string, c *claims.Claim, doc claims.Value, got Measurement) []Part {
	if got.Count == nil || got.Total == nil || *got.Total == 0 {
		return []Part{{Name: label, Result: Inconclusive, Reason: "no requests were measured"}}
	}
	if doc.Count == nil || doc.Total == nil {
		return []Part{{Name: label, Result: Inconclusive, Reason: "the registry documents no count for this mode"}}
	}
	parts := []Part{judgeRate(label, *got.Count, *got.Total, *doc.Count, *doc.Total, c.Tolerance)}
	if doc.Unanswered == nil || got.NoResponse == nil {
		return parts
	}
	return append(parts, judgeRate("no-response (-1) rate", *got.NoResponse, *got.Total, *doc.Unanswered, *doc.Total, c.Tolerance))
}

func judgeRate(label string, count, total, docCount, docTotal int64, tol claims.Tolerance) Part {
	part := Part{Name: label}
	part.Result, part.Reason = rateResult(label, count, total, docCount, docTotal, tol)
	if docCount == 0 {
		return part
	}
	// A documented count that zero events in as many requests would not
	// rule out cannot be confirmed by a run of the documented size: judge
	// it only as the upper bound it sets (the band's top, or the claim's
	// zero threshold where that is higher), so it can fail the claim but
	// cannot hold the other parts' verdict undecided.
	d := float64(docCount) / float64(docTotal)
	bound, zeroHigh, ok := unconfirmable(docCount, docTotal, tol)
	if !ok {
		return part
	}
	p, err := stats.Wilson(count, total, Confidence)
	if err != nil {
		return part
	}
	part.Unconfirmable = true
	why := fmt.Sprintf("documented %d/%d = %s is too small for a run of %d requests to confirm (0 of %d has upper bound %s), so it is judged as at most %s",
		docCount, docTotal, pct(d), docTotal, docTotal, pct(zeroHigh), pct(bound))
	switch {
	case p.CI.High <= bound:
		part.Result, part.Reason = Reproduced, fmt.Sprintf("%s %s: %s: upper bound %s, consistent", label, p, why, pct(p.CI.High))
	case p.CI.Low > bound:
		part.Result, part.Reason = NotReproduced, fmt.Sprintf("%s %s: %s: lower bound %s is above it", label, p, why, pct(p.CI.Low))
	default:
		part.Result, part.Reason = Inconclusive, fmt.Sprintf("%s %s: %s: upper bound %s, too few requests to show it", label, p, why, pct(p.CI.High))
	}
	return part
}

// unconfirmable reports whether a documented nonzero count is too small
// for a run of the documented size to tell from zero (zero events in as
// many requests would not rule it out: their upper bound zeroHigh reaches
// the documented rate), and the upper bound it is then judged against:
// the top of its band, or the claim's max_rate where that is higher.
func unconfirmable(docCount, docTotal int64, tol claims.Tolerance) (bound, zeroHigh float64, ok bool) {
	if docCount <= 0 || docTotal <= 0 {
		return 0, 0, false
	}
	d := float64(docCount) / float64(docTotal)
	zero, err := stats.Wilson(0, docTotal, Confidence)
	if err != nil || zero.CI.High < d {
		return 0, 0, false
	}
	_, bound, _ = band(d, tol)
	if tol.MaxRate != nil && *tol.MaxRate > bound {
		bound = *tol.MaxRate
	}
	return bound, zero.CI.High, true
}

func rateResult(label string, count, total, docCount, docTotal int64, tol claims.Tolerance) (Result, string) {
	p, err := stats.Wilson(count, total, Confidence)
	if err != nil {
		return Inconclusive, fmt.Sprintf("%s: %v", label, err)
	}
	d := float64(docCount) / float64(docTotal)
	docs := fmt.Sprintf("%d/%d = %s", docCount, docTotal, pct(d))
	if docCount == 0 {
		if tol.MaxRate == nil {
			return Inconclusive, fmt.Sprintf("%s: documented zero but the tolerance has no max_rate", label)
		}
		max := *tol.MaxRate
		switch {
		case p.CI.High <= max:
			return Reproduced, fmt.Sprintf("%s %s: upper bound %s <= %s, consistent with documented zero", label, p, pct(p.CI.High), pct(max))
		case p.CI.Low > max:
			return NotReproduced, fmt.Sprintf("%s %s: lower bound %s > %s, documented zero", label, p, pct(p.CI.Low), pct(max))
		default:
			return Inconclusive, fmt.Sprintf("%s %s: upper bound %s > %s, too few requests to show zero", label, p, pct(p.CI.High), pct(max))
		}
	}
	lo, hi, how := band(d, tol)
	if tol.Absolute == nil && tol.Relative == nil && tol.Factor == nil && (tol.AtLeast != nil || tol.AtMost != nil) {
		// A bound alone, on a rate: the claim is the bound, so the whole
		// interval must lie within it to show it (as a documented zero is
		// shown by its upper bound), and a run too small to show it is
		// inconclusive; worded as the rates it admits, beside the
		// documented one.
		lo = math.Max(lo, 0)
		var bounds []string
		if tol.AtLeast != nil {
			bounds = append(bounds, "at least "+pct(*tol.AtLeast))
		}
		if tol.AtMost != nil {
			bounds = append(bounds, "at most "+pct(*tol.AtMost))
		}
		b := strings.Join(bounds, " and ")
		switch {
		case p.CI.High < lo || p.CI.Low > hi:
			return NotReproduced, fmt.Sprintf("%s %s is not %s, the claim's bound (documented %s)", label, p, b, docs)
		case p.CI.Low >= lo && p.CI.High <= hi:
			return Reproduced, fmt.Sprintf("%s %s is %s, the claim's bound (documented %s)", label, p, b, docs)
		default:
			return Inconclusive, fmt.Sprintf("%s %s: its interval reaches past %s, the claim's bound (documented %s): too few requests to show it", label, p, b, docs)
		}
	}
	switch {
	case p.CI.High < lo || p.CI.Low > hi:
		return NotReproduced, fmt.Sprintf("%s %s lies outside %s of documented %s [%s, %s]", label, p, how, docs, pct(lo), pct(hi))
	case p.Estimate >= lo && p.Estimate <= hi:
		return Reproduced, fmt.Sprintf("%s %s is within %s of documented %s [%s, %s]", label, p, how, docs, pct(lo), pct(hi))
	default:
		return Inconclusive, fmt.Sprintf("%s %s overlaps %s of documented %s [%s, %s] only with its interval", label, p, how, docs, pct(lo), pct(hi))
	}
}

// judgeReduction judges the claim's rate over the reference claim's rate in
// the same mode and run (e.g. hardened over un-hardened 503s) by its Katz
// interval, against the reference's band.
func judgeReduction(c *claims.Claim, m mode.Mode, doc claims.Value, got Measurement) (Result, string) {
	ref := c.Reference
	label := "ratio to " + ref.Claim
	rd, ok := ref.Of.DocumentedFor(m)
	if !ok || rd.Count == nil || rd.Total == nil || doc.Count == nil || doc.Total == nil {
		return Inconclusive, label + ": the registry documents no reference rate for this mode"
	}
	if got.Count == nil || got.Total == nil || *got.Total == 0 {
		return Inconclusive, label + ": no requests were measured"
	}
	if got.Reference == nil || got.Reference.Count == nil || got.Reference.Total == nil || *got.Reference.Total == 0 {
		return Inconclusive, label + ": no same-run reference run was measured"
	}
	a, err := stats.Wilson(*got.Count, *got.Total, Confidence)
	if err != nil {
		return Inconclusive, label + ": " + err.Error()
	}
	b, err := stats.Wilson(*got.Reference.Count, *got.Reference.Total, Confidence)
	if err != nil {
		return Inconclusive, label + ": " + err.Error()
	}
	r, err := stats.RateRatio(a, b)
	if err != nil {
		return Inconclusive, fmt.Sprintf("%s: %v", label, err)
	}
	d := (float64(*doc.Count) / float64(*doc.Total)) / (float64(*rd.Count) / float64(*rd.Total))
	lo, hi, how := band(d, *ref.Tolerance)
	return classify(r.Estimate, r.CI.Low, r.CI.High, lo, hi),
		fmt.Sprintf("%s %s (%d/%d over %d/%d) vs documented %s (%s: [%s, %s])", label, r, *got.Count, *got.Total, *got.Reference.Count, *got.Reference.Total, num(d), how, num(lo), num(hi))
}
