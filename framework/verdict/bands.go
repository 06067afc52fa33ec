package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// Band is one component of a judgement: the interval a measured estimate
// must lie in for Judge to call it reproduced (a necessary condition; the
// estimate's interval decides between reproduced and inconclusive).
type Band struct {
	Name      string // "P50", "503 rate", "value", "ratio to rollout.baseline"
	Low, High float64
}

// Bands returns the components Judge checks for mode m, headline first:
// P50 of percentiles, the primary rate of rates, the value of scalars. They
// come from the same band() the judges use, so a test can ask whether two
// modes' bands leave room for one measurement to pass both.
func Bands(c *claims.Claim, m mode.Mode) []Band {
	return BandsFor(c, m, claims.Variant{})
}

// BandsFor is Bands for a measurement under variant u (a cluster whose
// kube-proxy runs in mode u.KubeProxy, a kernel whose nf_conntrack_max is
// u.ConntrackMax): a value stated per that setting gives the bands of u's
// entry (none when u names no documented entry).
func BandsFor(c *claims.Claim, m mode.Mode, u claims.Variant) []Band {
	bands, _ := bandsFor(c, m, u)
	return bands
}

// bandsFor is BandsFor with how many of the bands are headlines: the
// quantities the source tells modes apart by.
func bandsFor(c *claims.Claim, m mode.Mode, u claims.Variant) ([]Band, int) {
	doc, ok := c.DocumentedFor(m)
	if !ok {
		return nil, 0
	}
	if doc, ok = doc.For(u); !ok {
		return nil, 0
	}
	ref := c.Reference
	if ref != nil && ref.Compare == claims.Difference && ref.Mode == m {
		return nil, 0 // the baseline: recorded, not judged
	}
	return MetricOf(c.Metric).Bands(c, m, doc)
}

// Overlaps lists, for a value stated per nf_conntrack_max, each pair of
// limits whose bands intersect, and for a claim that says which modes the
// source tells apart (claims.Distinct), each pair of modes in different groups whose headline
// bands intersect, so that one measurement could pass as either mode. A
// band that separates modes only in a tail percentile or a secondary rate
// does not count: those are the noisiest numbers of a run. A proxy
// footprint's memory and CPU are both headlines: each must separate.
func Overlaps(c *claims.Claim) []string {
	out := conntrackOverlaps(c) // every limit differs: no groups needed
	if c.Distinct == nil {
		return out
	}
	out = append(out, kubeProxyOverlaps(c)...)
	judged := c.JudgedDocumented()
	for i, a := range judged {
		for _, b := range judged[i+1:] {
			ga, gb := c.Distinct.Group(a), c.Distinct.Group(b)
			if ga == gb {
				continue
			}
			ba, ha := bandsFor(c, a, claims.Variant{})
			bb, hb := bandsFor(c, b, claims.Variant{})
			if len(ba) == 0 || len(bb) == 0 {
				out = append(out, fmt.Sprintf("%s: modes %s and %s differ in the source but have no band to tell them apart", c.ID, a, b))
				continue
			}
			// A metric may state several figures the source tells the modes
			// apart in (a proxy footprint's memory and CPU): all are headlines.
			for k := 0; k < min(ha, hb); k++ {
				x, y := ba[k], bb[k]
				if x.Name != y.Name {
					out = append(out, fmt.Sprintf("%s: headline bands of %s (%s) and %s (%s) are not the same quantity", c.ID, a, x.Name, b, y.Name))
					continue
				}
				if lo, hi := math.Max(x.Low, y.Low), math.Min(x.High, y.High); lo <= hi {
					out = append(out, fmt.Sprintf("%s: %s bands of %s [%s, %s] and %s [%s, %s] overlap in [%s, %s]; the source says they differ",
						c.ID, x.Name, a, num(x.Low), num(x.High), b, num(y.Low), num(y.High), num(lo), num(hi)))
				}
			}
		}
	}
	return out
}

// kubeProxyOverlaps lists, within each judged mode whose value is stated
// per kube-proxy mode, the pairs of kube-proxy modes in different
// distinct.kube_proxy_groups whose headline bands intersect: one cluster's
// measurement could then pass as either kube-proxy mode.
func kubeProxyOverlaps(c *claims.Claim) []string {
	return variantOverlaps(c,
		func(u claims.Variant) bool { return u.KubeProxy != "" },
		func(a, b claims.Variant) bool {
			return c.Distinct.KubeProxyGroup(a.KubeProxy) != c.Distinct.KubeProxyGroup(b.KubeProxy)
		},
		func(u claims.Variant) string { return string(u.KubeProxy) })
}

// conntrackOverlaps lists, within each judged mode whose value is stated
// per nf_conntrack_max, the pairs of limits whose headline bands
// intersect: the source states a different outcome for every limit, so a
// measurement that could pass under two limits does not tell them apart.
func conntrackOverlaps(c *claims.Claim) []string {
	return variantOverlaps(c,
		func(u claims.Variant) bool { return u.ConntrackMax != 0 },
		func(a, b claims.Variant) bool { return true },
		claims.Variant.String)
}

// variantOverlaps lists, within each judged mode, the pairs of its
// documented variants that keep selects and the source tells apart
// (differ) whose headline bands intersect, or that have no band. A pair
// is named "a and b", b by second ("kube-proxy iptables and ipvs").
func variantOverlaps(c *claims.Claim, keep func(claims.Variant) bool, differ func(a, b claims.Variant) bool, second func(claims.Variant) string) []string {
	var out []string
	for _, m := range c.JudgedDocumented() {
		var us []claims.Variant
		for _, u := range c.Documented[m].Variants() {
			if keep(u) {
				us = append(us, u)
			}
		}
		for i, a := range us {
			for _, b := range us[i+1:] {
				if !differ(a, b) {
					continue
				}
				ba, bb := BandsFor(c, m, a), BandsFor(c, m, b)
				if len(ba) == 0 || len(bb) == 0 {
					out = append(out, fmt.Sprintf("%s: mode %s, %s and %s differ in the source but have no band to tell them apart", c.ID, m, a, second(b)))
					continue
				}
				x, y := ba[0], bb[0]
				if lo, hi := math.Max(x.Low, y.Low), math.Min(x.High, y.High); lo <= hi {
					out = append(out, fmt.Sprintf("%s: mode %s, %s bands of %s [%s, %s] and %s [%s, %s] overlap in [%s, %s]; the source says they differ",
						c.ID, m, x.Name, a, num(x.Low), num(x.High), second(b), num(y.Low), num(y.High), num(lo), num(hi)))
				}
			}
		}
	}
	return out
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
