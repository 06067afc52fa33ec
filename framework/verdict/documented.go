package verdict

import (
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// AsMeasured is what a spec would record had it measured exactly the value
// the claim documents for mode m, including the documented reference (the
// baseline mode's value, or the reference claim's value for m). It lets
// tests judge one mode's documented value in another mode's band: a band
// that passes both cannot tell the modes apart.
func AsMeasured(c *claims.Claim, m mode.Mode) (Measurement, bool) {
	return AsMeasuredUnder(c, m, claims.Variant{})
}

// AsMeasuredUnder is AsMeasured under variant u (a cluster whose
// kube-proxy runs in mode u.KubeProxy, a kernel at nf_conntrack_max
// u.ConntrackMax): for a value stated per that setting, u's entry, with u
// recorded as the measurement's setting.
func AsMeasuredUnder(c *claims.Claim, m mode.Mode, u claims.Variant) (Measurement, bool) {
	doc, ok := c.DocumentedFor(m)
	if !ok {
		return Measurement{}, false
	}
	if doc, ok = doc.For(u); !ok {
		return Measurement{}, false
	}
	got := fromValue(doc)
	got.KubeProxyMode, got.ConntrackMax = u.KubeProxy, u.ConntrackMax
	MetricOf(c.Metric).AsMeasured(c, doc, &got)
	if r := c.Reference; r != nil {
		var ref claims.Value
		switch {
		case r.Compare == claims.Difference:
			ref, ok = c.DocumentedFor(r.Mode)
		case r.Compare == claims.RateRatioOf && r.Of != nil:
			ref, ok = r.Of.DocumentedFor(m)
		default:
			ok = false
		}
		if ok {
			rm := fromValue(ref)
			got.Reference = &rm
		}
	}
	return got, true
}

func fromValue(v claims.Value) Measurement {
	return Measurement{
		Outcome:     v.Outcome,
		Count:       v.Count,
		Total:       v.Total,
		NoResponse:  v.Unanswered,
		Value:       v.Value,
		VCPU:        v.VCPU,
		Percentiles: v.Percentiles,
		At:          v.At,
	}
}

// DocumentedText is the value the claim documents (or expects) for mode m
// as a verdict states it, "-" where it states none.
func DocumentedText(c *claims.Claim, m mode.Mode) string {
	v, ok := c.DocumentedFor(m)
	return describeDoc(v, ok)
}
