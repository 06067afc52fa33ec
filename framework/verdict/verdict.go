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
	"slices"
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
	var parts []Part
	v.Result, v.Reason, parts = MetricOf(c.Metric).Judge(c, m, doc, got)
	if len(parts) > 1 {
		v.Parts, v.DecidedBy = parts, decidedBy(parts, v.Result)
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

var severity = map[Result]int{Reproduced: 0, Recorded: 0, Inconclusive: 1, NotReproduced: 2}

func worst(a, b Result) Result {
	if severity[b] > severity[a] {
		return b
	}
	return a
}
