// Package verdict judges a measurement against its claim: reproduced, not
// reproduced or inconclusive, with one sentence that says why in numbers.
//
// The rules are statistical rather than bare comparisons (DESIGN: judge with
// statistics). A documented value becomes an acceptance band from the claim's
// tolerance; a measured rate or repeated measurement carries a 95% interval.
// The interval entirely outside the band is "not reproduced"; the estimate
// inside the band is "reproduced"; anything between (too few samples to
// tell) is "inconclusive". "Zero" claims are judged by the interval's upper
// bound, so "0 of 50" cannot pass for "0 of 60,000".
package verdict

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/stats"
)

// Result is the judgement of one claim in one mode.
type Result string

const (
	Reproduced    Result = "reproduced"
	NotReproduced Result = "not reproduced"
	Inconclusive  Result = "inconclusive"
	// Recorded is a measurement with nothing documented to compare with
	// (e.g. the no-mesh rollout run): it is reported, not judged.
	Recorded Result = "recorded"
)

// Results are the four verdicts in the order reports list them.
var Results = []Result{Reproduced, NotReproduced, Inconclusive, Recorded}

// Confidence is the level of every interval the suite reports, and of every
// exclusion: a value outside the Confidence interval is ruled out.
const Confidence = 0.95

// Consistency is the level of the wider interval a judge consults when the
// Confidence interval excludes every hypothesis it weighs (a split's weight and
// its replica share, a retry policy's share and the server's): one time in
// twenty the 95% interval misses the true share, and a judge that then said
// "neither" would turn a plain result into an inconclusive one by chance. The
// true share falls outside this interval one time in a thousand.
const Consistency = 0.999

// Measurement is what a spec observed. Set the fields the claim's metric needs.
type Measurement struct {
	// Outcome is what a probe observed (claims' outcome vocabulary), and
	// Detail how (e.g. "connection reset by peer").
	Outcome string `json:"outcome,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Count of Total: 503s, non-200s, duplicates per request sent.
	Count *int64 `json:"count,omitempty"`
	Total *int64 `json:"total,omitempty"`
	// NoResponse counts fortio -1 (no HTTP response) of Total.
	NoResponse *int64 `json:"no_response,omitempty"`
	// Value is a scalar in the metric's unit; Runs holds one value per repeat
	// when the spec repeated the measurement (Value is then their mean).
	Value *float64  `json:"value,omitempty"`
	Runs  []float64 `json:"runs,omitempty"`
	// VCPU is a proxy's CPU in cores beside Value's working set in MiB
	// (proxy_footprint), and AchievedQPS the rate the load under which it
	// was measured reached.
	VCPU        *float64 `json:"vcpu,omitempty"`
	AchievedQPS *float64 `json:"achieved_qps,omitempty"`
	// Ratio is a ratio of two rates with its interval (rate_ratio claims).
	Ratio *stats.RatioEstimate `json:"ratio,omitempty"`
	// Percentiles in ms ("50", "99.9", ...).
	Percentiles map[string]float64 `json:"percentiles_ms,omitempty"`
	// Attribution counts events of one kind (fortio -1s, 503s) per category
	// of what caused them (metric attribution); claims.Unattributed counts
	// those nothing explains.
	Attribution map[string]int64 `json:"attribution,omitempty"`
	// Extra keeps further numbers for the report (sockets, cycles, mean_ms...).
	Extra map[string]float64 `json:"extra,omitempty"`
	// At is the value measured at a scale (kubeproxy.service-scale: the
	// median with N extra Services), beside Value with none.
	At *claims.AtScale `json:"at,omitempty"`
	// KubeProxyMode is the mode the cluster's kube-proxy runs, read from
	// the cluster, for claims documented per kube-proxy mode: it picks the
	// documented value the measurement is judged against.
	KubeProxyMode claims.KubeProxyMode `json:"kube_proxy_mode,omitempty"`
	// ConntrackMax is the nf_conntrack_max the measurement ran under, for
	// claims documented per limit (conntrack.table-full): it picks the
	// documented value, as KubeProxyMode does.
	ConntrackMax int64 `json:"conntrack_max,omitempty"`
	// Each holds one measurement per documented variant when the spec
	// measured them all itself (conntrack.table-full: one VM run per
	// nf_conntrack_max); the verdict is the worst of theirs, and a
	// documented variant measured by none is inconclusive.
	Each []Measurement `json:"each,omitempty"`
	// Reference is the same run's measurement the claim's reference names
	// (the baseline mode's percentiles, the un-hardened run's rates), kept in
	// the record so a re-judged report has it.
	Reference *Measurement `json:"reference,omitempty"`
	// Unmet names a precondition that failed (e.g. networkpolicy-enforcement);
	// it makes the verdict inconclusive whatever else was measured.
	Unmet string `json:"unmet,omitempty"`
	// Contradicts names a property the claim states that the measurement
	// shows false (retry.fired: the retrying proxy counted no retry); it
	// makes the verdict not reproduced whatever else was measured. Unmet is
	// for a precondition of the judgement, Contradicts for the claim itself.
	Contradicts string `json:"contradicts,omitempty"`
}

// Verdict is the judgement with the numbers behind it.
type Verdict struct {
	Claim        string    `json:"claim"`
	Mode         mode.Mode `json:"mode"`
	Result       Result    `json:"result"`
	Documented   string    `json:"documented"`
	MeasuredText string    `json:"measured"`
	Reason       string    `json:"reason"`
	// Parts are the verdicts of each quantity a compound claim judges
	// (a rollout's 503 rate and its -1 rate, each percentile, a proxy's
	// memory and CPU), in the order the claim states them; empty for a
	// claim that judges one quantity.
	Parts []Part `json:"parts,omitempty"`
	// DecidedBy names the part whose verdict is the claim's.
	DecidedBy string `json:"decided_by,omitempty"`
}

// Part is one judged quantity of a compound claim.
type Part struct {
	Name   string `json:"name"`
	Result Result `json:"result"`
	Reason string `json:"reason"`
	// Unconfirmable marks a documented count too small for a run of the
	// documented size to tell from zero (GUIDE's 2 -1s in 60,000: a run
	// seeing none could not rule them out). Such a part is judged only as
	// an upper bound; it can fail the claim, but never make it
	// inconclusive.
	Unconfirmable bool `json:"unconfirmable,omitempty"`
}

// fold is a compound claim's verdict from its parts: the worst part's,
// except that an unconfirmable part counts only when it is not
// reproduced. decided is the first part with the claim's verdict,
// a confirmable one first.
func fold(parts []Part) (res Result, reason, decided string) {
	res = Reproduced
	var reasons []string
	for _, p := range parts {
		reasons = append(reasons, p.Reason)
		if p.Unconfirmable && p.Result != NotReproduced {
			continue
		}
		res = worst(res, p.Result)
	}
	return res, strings.Join(reasons, "; "), decidedBy(parts, res)
}

// decidedBy names the first part whose verdict is res, a confirmable
// one first.
func decidedBy(parts []Part, res Result) string {
	for _, pass := range []bool{false, true} {
		for _, p := range parts {
			if p.Unconfirmable == pass && p.Result == res {
				return p.Name
			}
		}
	}
	return ""
}

// setParts sets v's result, reason and parts from parts; one part is no
// compound, and is kept as the claim's own verdict.
func (v *Verdict) setParts(parts []Part) {
	v.Result, v.Reason, v.DecidedBy = fold(parts)
	if len(parts) > 1 {
		v.Parts = parts
		return
	}
	v.DecidedBy = ""
}

// Variant is the setting the measurement ran under that a documented
// value may be stated per.
func (m Measurement) Variant() claims.Variant {
	return claims.Variant{KubeProxy: m.KubeProxyMode, ConntrackMax: m.ConntrackMax}
}

// Passed reports whether a spec asserting this verdict should pass.
func (v Verdict) Passed() bool { return v.Result == Reproduced || v.Result == Recorded }

// Int64 and Float64 make pointers for Measurement literals.
func Int64(v int64) *int64       { return &v }
func Float64(v float64) *float64 { return &v }

// Judge compares a measurement with the claim's documented value for mode m.
func Judge(c *claims.Claim, m mode.Mode, got Measurement) Verdict {
	v := Verdict{Claim: c.ID, Mode: m}
	doc, ok := c.DocumentedFor(m)
	v.Documented = describeDoc(doc, ok)
	v.MeasuredText = describeMeasured(got)
	if got.Unmet != "" {
		v.Result, v.Reason = Inconclusive, "precondition not met: "+got.Unmet
		return v
	}
	if got.Contradicts != "" && c.AppliesTo(m) && ok {
		v.Result, v.Reason = NotReproduced, "the measurement contradicts the claim: "+got.Contradicts
		return v
	}
	if !c.AppliesTo(m) {
		v.Result, v.Reason = Inconclusive, fmt.Sprintf("claim does not apply to mode %s (modes: %v)", m, c.Modes)
		return v
	}
	if !ok {
		v.Result, v.Reason = Recorded, "nothing documented for this mode; measured value recorded"
		return v
	}
	if len(got.Each) > 0 {
		return judgeEach(c, m, doc, got, v)
	}
	if len(doc.ByKubeProxy) > 0 {
		if got.KubeProxyMode == "" {
			v.Result, v.Reason = Inconclusive, "the documented value depends on kube-proxy's mode and the measurement names none"
			return v
		}
		kp, found := doc.ForKubeProxy(got.KubeProxyMode)
		if !found {
			v.Result, v.Reason = Inconclusive, fmt.Sprintf("nothing documented for kube-proxy mode %s (documented: %s)", got.KubeProxyMode, kubeProxyModes(doc))
			return v
		}
		doc = kp
		v.Documented = fmt.Sprintf("%s (kube-proxy %s)", describeDoc(doc, true), got.KubeProxyMode)
	}
	if len(doc.ByConntrackMax) > 0 {
		if got.ConntrackMax == 0 {
			v.Result, v.Reason = Inconclusive, "the documented value depends on nf_conntrack_max and the measurement names none"
			return v
		}
		x, found := doc.For(claims.Variant{ConntrackMax: got.ConntrackMax})
		if !found {
			v.Result, v.Reason = Inconclusive, fmt.Sprintf("nothing documented for nf_conntrack_max %d (documented: %s)", got.ConntrackMax, conntrackLimits(doc))
			return v
		}
		doc = x
		v.Documented = fmt.Sprintf("%s (nf_conntrack_max %d)", describeDoc(doc, true), got.ConntrackMax)
	}
	ref := c.Reference
	if ref != nil && ref.Compare == claims.Difference && ref.Mode == m {
		v.Result, v.Reason = Recorded, fmt.Sprintf("mode %s is the baseline the other modes' differences are taken from; recorded", m)
		return v
	}
	switch c.Metric {
	case claims.Outcome:
		v.Result, v.Reason = judgeOutcome(doc, got)
	case claims.ErrorRate, claims.SuccessRate, claims.DuplicateCount, claims.FailureRate, claims.ConnectFailureRate:
		parts := judgeRates(c, doc, got)
		if ref != nil && ref.Compare == claims.RateRatioOf && ref.AppliesTo(m) {
			r2, s2 := judgeReduction(c, m, doc, got)
			parts = append(parts, Part{Name: "ratio to " + ref.Claim, Result: r2, Reason: s2})
		}
		v.setParts(parts)
	case claims.LatencyPercentiles, claims.IntervalMs:
		var parts []Part
		if ref != nil && ref.Compare == claims.Difference {
			v.Result, v.Reason, parts = judgeDifferences(c, doc, got)
		} else {
			v.Result, v.Reason, parts = judgePercentiles(c, doc, got)
		}
		if len(parts) > 1 {
			v.Parts, v.DecidedBy = parts, decidedBy(parts, v.Result)
		}
	case claims.RateRatio:
		v.Result, v.Reason = judgeRatio(c, doc, got)
	case claims.Stability:
		v.Result, v.Reason = judgeStability(c, got)
	case claims.ProxyFootprint:
		var parts []Part
		v.Result, v.Reason, parts = judgeFootprint(c, doc, got)
		if len(parts) > 1 {
			v.Parts, v.DecidedBy = parts, decidedBy(parts, v.Result)
		}
	case claims.Attribution:
		v.Result, v.Reason = judgeAttribution(c, doc, got)
	default:
		r1, s1 := judgeScalar(c, doc, got)
		parts := []Part{{Name: "value", Result: r1, Reason: s1}}
		if doc.At != nil {
			r2, s2 := judgeGrowth(c, doc, got)
			parts = append(parts, Part{Name: fmt.Sprintf("growth to %d Services", doc.At.Services), Result: r2, Reason: s2})
		}
		v.setParts(parts)
	}
	return v
}

// judgeEach judges a measurement per documented variant (Measurement.Each),
// each against its own variant's value, and takes the worst.
func judgeEach(c *claims.Claim, m mode.Mode, doc claims.Value, got Measurement, v Verdict) Verdict {
	v.Result = Reproduced
	var reasons, measured []string
	for _, u := range doc.Variants() {
		if u == (claims.Variant{}) {
			v.Result, v.Reason = Inconclusive, "the measurement holds one measurement per variant but the documented value is stated per none"
			return v
		}
		i := slices.IndexFunc(got.Each, func(x Measurement) bool { return x.Variant() == u })
		if i < 0 {
			v.Result = worst(v.Result, Inconclusive)
			reasons = append(reasons, fmt.Sprintf("%s: nothing measured", u))
			v.Parts = append(v.Parts, Part{Name: u.String(), Result: Inconclusive, Reason: "nothing measured"})
			continue
		}
		sub := got.Each[i]
		if len(sub.Each) > 0 {
			v.Result, v.Reason = Inconclusive, fmt.Sprintf("%s: a measurement per variant nests another", u)
			return v
		}
		sv := Judge(c, m, sub)
		v.Result = worst(v.Result, sv.Result)
		reasons = append(reasons, fmt.Sprintf("%s: %s: %s", u, sv.Result, sv.Reason))
		v.Parts = append(v.Parts, Part{Name: u.String(), Result: sv.Result, Reason: sv.Reason})
		measured = append(measured, fmt.Sprintf("%s: %s", u, sv.MeasuredText))
	}
	v.Reason = strings.Join(reasons, "; ")
	v.MeasuredText = strings.Join(measured, "; ")
	if len(v.Parts) > 1 {
		v.DecidedBy = decidedBy(v.Parts, v.Result)
	} else {
		v.Parts = nil
	}
	if got.Detail != "" {
		// Where the runs were made (the VM's kernel), beside their numbers.
		v.MeasuredText += " (" + got.Detail + ")"
	}
	return v
}

func judgeOutcome(doc claims.Value, got Measurement) (Result, string) {
	if got.Outcome == "" {
		// A detector that could not decide (e.g. a split whose interval
		// contains both candidate shares) says why in Detail.
		if got.Detail != "" {
			return Inconclusive, "no outcome was observed: " + got.Detail
		}
		return Inconclusive, "no outcome was observed"
	}
	how := ""
	if got.Detail != "" {
		how = " (" + got.Detail + ")"
	}
	if got.Outcome == doc.Outcome {
		return Reproduced, fmt.Sprintf("observed %s%s as documented", got.Outcome, how)
	}
	return NotReproduced, fmt.Sprintf("observed %s%s, documented %s", got.Outcome, how, doc.Outcome)
}

// judgeRates judges the primary rate (Count of Total) and, where the claim
// documents it, the no-response rate (fortio -1): one part each.
func judgeRates(c *claims.Claim, doc claims.Value, got Measurement) []Part {
	label := map[claims.Metric]string{claims.ErrorRate: "503 rate", claims.SuccessRate: "non-200 rate", claims.DuplicateCount: "duplicate rate", claims.FailureRate: "client-visible failure rate", claims.ConnectFailureRate: "connect failure rate"}[c.Metric]
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
	switch {
	case p.CI.High < lo || p.CI.Low > hi:
		return NotReproduced, fmt.Sprintf("%s %s lies outside %s of documented %s [%s, %s]", label, p, how, docs, pct(lo), pct(hi))
	case p.Estimate >= lo && p.Estimate <= hi:
		return Reproduced, fmt.Sprintf("%s %s is within %s of documented %s [%s, %s]", label, p, how, docs, pct(lo), pct(hi))
	default:
		return Inconclusive, fmt.Sprintf("%s %s overlaps %s of documented %s [%s, %s] only with its interval", label, p, how, docs, pct(lo), pct(hi))
	}
}

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

func judgePercentiles(c *claims.Claim, doc claims.Value, got Measurement) (Result, string, []Part) {
	if len(doc.Percentiles) == 0 {
		return Inconclusive, "the registry documents no percentiles for this mode", nil
	}
	if len(got.Percentiles) == 0 {
		return Inconclusive, "no percentiles were measured", nil
	}
	keys := sortedPercentiles(doc.Percentiles)
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

// NoMeshChange is the Extra key of a stability measurement's no-mesh
// control: the largest relative change the same churn caused to the same
// load in the namespace without a mesh.
const NoMeshChange = "no_mesh_change"

// judgeStability: Value is the largest relative change under churn. When
// the no-mesh control changed beyond the tolerance too, the cluster itself
// does not hold a saturating load steady under churn (a small or shared
// host), and the mesh's change cannot be told from it: inconclusive.
func judgeStability(c *claims.Claim, got Measurement) (Result, string) {
	if got.Value == nil || c.Tolerance.Relative == nil {
		return Inconclusive, "no stability measurement or no relative tolerance"
	}
	if ctl, ok := got.Extra[NoMeshChange]; ok && math.Abs(ctl) > *c.Tolerance.Relative {
		return Inconclusive, fmt.Sprintf("largest change under churn %s, but without a mesh the same churn changed the same load %s (> %s): the cluster, not the mesh, does not hold steady",
			pct(*got.Value), pct(ctl), pct(*c.Tolerance.Relative))
	}
	if math.Abs(*got.Value) <= *c.Tolerance.Relative {
		return Reproduced, fmt.Sprintf("largest change under churn %s <= %s", pct(*got.Value), pct(*c.Tolerance.Relative))
	}
	return NotReproduced, fmt.Sprintf("largest change under churn %s > %s", pct(*got.Value), pct(*c.Tolerance.Relative))
}

// classify places an estimate and its interval against the band [lo, hi].
func classify(est, ciLo, ciHi, lo, hi float64) Result {
	switch {
	case ciHi < lo || ciLo > hi:
		return NotReproduced
	case est >= lo && est <= hi:
		return Reproduced
	default:
		return Inconclusive
	}
}

// band turns a documented value and a tolerance into the widest acceptance
// band any of the tolerance's bounds allows, and says how in words.
func band(d float64, t claims.Tolerance) (lo, hi float64, how string) {
	lo, hi = d, d
	var hows []string
	widen := func(l, h float64) {
		lo, hi = math.Min(lo, l), math.Max(hi, h)
	}
	if t.Absolute != nil {
		widen(d-*t.Absolute, d+*t.Absolute)
		hows = append(hows, "±"+num(*t.Absolute))
	}
	if t.Relative != nil {
		widen(d-*t.Relative*math.Abs(d), d+*t.Relative*math.Abs(d))
		hows = append(hows, "±"+pct(*t.Relative))
	}
	if t.Factor != nil && d > 0 {
		widen(d / *t.Factor, d**t.Factor)
		hows = append(hows, "a factor of "+num(*t.Factor))
	}
	if len(hows) == 0 && (t.AtLeast != nil || t.AtMost != nil) {
		// A bound alone is the band: open on the side it does not set.
		lo, hi = math.Inf(-1), math.Inf(1)
	}
	if len(hows) == 0 && t.AtLeast == nil && t.AtMost == nil {
		hows = []string{"exactly"}
	}
	var bounds []string
	if t.AtLeast != nil {
		lo = math.Max(lo, *t.AtLeast)
		bounds = append(bounds, "at least "+num(*t.AtLeast))
	}
	if t.AtMost != nil {
		hi = math.Min(hi, *t.AtMost)
		bounds = append(bounds, "at most "+num(*t.AtMost))
	}
	how = strings.Join(hows, " or ")
	if len(bounds) > 0 {
		if how != "" {
			how += ", "
		}
		how += strings.Join(bounds, " and ")
	}
	return lo, hi, how
}

var severity = map[Result]int{Reproduced: 0, Recorded: 0, Inconclusive: 1, NotReproduced: 2}

func worst(a, b Result) Result {
	if severity[b] > severity[a] {
		return b
	}
	return a
}

func sortedPercentiles(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, _ := strconv.ParseFloat(keys[i], 64)
		b, _ := strconv.ParseFloat(keys[j], 64)
		return a < b
	})
	return keys
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }

func pct(f float64) string { return strconv.FormatFloat(f*100, 'g', 3, 64) + "%" }

func describeDoc(v claims.Value, ok bool) string {
	if !ok {
		return "-"
	}
	var parts []string
	if v.Outcome != "" {
		parts = append(parts, v.Outcome)
	}
	if v.Count != nil && v.Total != nil {
		parts = append(parts, fmt.Sprintf("%d/%d (%s)", *v.Count, *v.Total, pct(float64(*v.Count)/float64(*v.Total))))
	}
	if v.Unanswered != nil {
		parts = append(parts, fmt.Sprintf("-1: %d", *v.Unanswered))
	}
	if v.Value != nil && v.VCPU != nil {
		parts = append(parts, num(*v.Value)+" MiB / "+num(*v.VCPU)+" vCPU")
	} else if v.Value != nil {
		parts = append(parts, num(*v.Value))
	}
	if len(v.Percentiles) > 0 {
		parts = append(parts, percentiles(v.Percentiles))
	}
	if a := v.Attribution; a != nil {
		parts = append(parts, fmt.Sprintf("%d attributed to %s", a.Of, strings.Join(a.To, " or ")))
	}
	if v.Expected {
		parts = append(parts, "(expected, not documented)")
	}
	if len(parts) == 0 && v.Text != "" {
		parts = append(parts, v.Text)
	}
	return strings.Join(parts, " ")
}

func describeMeasured(m Measurement) string {
	var parts []string
	if m.Outcome != "" {
		s := m.Outcome
		if m.Detail != "" {
			s += " (" + m.Detail + ")"
		}
		parts = append(parts, s)
	}
	if m.Outcome == "" && m.Detail != "" {
		parts = append(parts, m.Detail)
	}
	if m.Count != nil && m.Total != nil && *m.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d (%s)", *m.Count, *m.Total, pct(float64(*m.Count)/float64(*m.Total))))
	}
	if m.NoResponse != nil {
		parts = append(parts, fmt.Sprintf("-1: %d", *m.NoResponse))
	}
	if m.Ratio != nil {
		parts = append(parts, fmt.Sprintf("%s [%s, %s]", num(m.Ratio.Estimate), num(m.Ratio.CI.Low), num(m.Ratio.CI.High)))
	} else if m.Value != nil && m.VCPU != nil {
		parts = append(parts, num(*m.Value)+" MiB / "+num(*m.VCPU)+" vCPU")
	} else if m.Value != nil {
		parts = append(parts, num(*m.Value))
	}
	if m.AchievedQPS != nil {
		parts = append(parts, "at "+num(*m.AchievedQPS)+" qps")
	}
	if len(m.Percentiles) > 0 {
		parts = append(parts, percentiles(m.Percentiles))
	}
	if len(m.Attribution) > 0 {
		parts = append(parts, attributionText(m.Attribution))
	}
	if m.Unmet != "" {
		parts = append(parts, "unmet: "+m.Unmet)
	}
	if m.Contradicts != "" {
		parts = append(parts, "contradicts: "+m.Contradicts)
	}
	return strings.Join(parts, " ")
}

func percentiles(m map[string]float64) string {
	var s []string
	for _, k := range sortedPercentiles(m) {
		s = append(s, "P"+k+" "+num(m[k]))
	}
	return strings.Join(s, " / ")
}

// kubeProxyModes lists the kube-proxy modes a value documents, sorted.
func kubeProxyModes(doc claims.Value) string {
	var out []string
	for kp := range doc.ByKubeProxy {
		out = append(out, string(kp))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// conntrackLimits lists the nf_conntrack_max values a value documents, descending.
func conntrackLimits(doc claims.Value) string {
	var out []string
	for _, u := range doc.Variants() {
		if u.ConntrackMax != 0 {
			out = append(out, strconv.FormatInt(u.ConntrackMax, 10))
		}
	}
	return strings.Join(out, ", ")
}
