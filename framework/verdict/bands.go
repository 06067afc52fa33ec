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
	doc, ok := c.DocumentedFor(m)
	if !ok {
		return nil
	}
	if doc, ok = doc.For(u); !ok {
		return nil
	}
	ref := c.Reference
	if ref != nil && ref.Compare == claims.Difference && ref.Mode == m {
		return nil // the baseline: recorded, not judged
	}
	var out []Band
	add := func(name string, d float64, t claims.Tolerance) {
		lo, hi, _ := band(d, t)
		out = append(out, Band{Name: name, Low: lo, High: hi})
	}
	rate := func(name string, count, total *int64) {
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
		add(name, float64(*count)/float64(*total), c.Tolerance)
	}
	switch c.Metric {
	case claims.Outcome, claims.Stability:
		return nil
	case claims.Attribution:
		if doc.Attribution != nil {
			// The source attributes all its events to its categories (share 1).
			add("share attributed to "+strings.Join(doc.Attribution.To, " or "), 1, c.Tolerance)
		}
	case claims.ErrorRate, claims.SuccessRate, claims.DuplicateCount, claims.FailureRate, claims.ConnectFailureRate:
		rate("rate", doc.Count, doc.Total)
		if doc.Unanswered != nil {
			rate("no-response (-1) rate", doc.Unanswered, doc.Total)
		}
		if ref != nil && ref.Compare == claims.RateRatioOf && ref.AppliesTo(m) && ref.Of != nil {
			rd, ok := ref.Of.DocumentedFor(m)
			if ok && rd.Count != nil && rd.Total != nil && *rd.Count > 0 && doc.Count != nil && doc.Total != nil {
				d := (float64(*doc.Count) / float64(*doc.Total)) / (float64(*rd.Count) / float64(*rd.Total))
				add("ratio to "+ref.Claim, d, *ref.Tolerance)
			}
		}
	case claims.LatencyPercentiles, claims.IntervalMs:
		base := map[string]float64{}
		if ref != nil && ref.Compare == claims.Difference {
			base = c.Documented[ref.Mode].Percentiles
		}
		for _, k := range sortedPercentiles(doc.Percentiles) {
			d := doc.Percentiles[k]
			if ref != nil && ref.Compare == claims.Difference {
				b, ok := base[k]
				if !ok {
					continue
				}
				d -= b
			}
			add("P"+k, d, c.Tolerance)
		}
	case claims.ProxyFootprint:
		if doc.Value != nil && doc.VCPU != nil {
			add("working set (MiB)", *doc.Value, c.Tolerance)
			add("CPU (vCPU)", *doc.VCPU, c.Tolerance)
		}
	default:
		if doc.Value != nil {
			add("value", *doc.Value, c.Tolerance)
			if doc.At != nil {
				add(fmt.Sprintf("growth to %d", doc.At.Services), doc.At.Value-*doc.Value, c.Tolerance)
			}
		}
	}
	return out
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
			ba, bb := Bands(c, a), Bands(c, b)
			if len(ba) == 0 || len(bb) == 0 {
				out = append(out, fmt.Sprintf("%s: modes %s and %s differ in the source but have no band to tell them apart", c.ID, a, b))
				continue
			}
			// A proxy footprint states two figures per mode, memory and CPU,
			// and the source tells the modes apart in each: both are headlines.
			headlines := 1
			if c.Metric == claims.ProxyFootprint {
				headlines = min(len(ba), len(bb))
			}
			for k := 0; k < headlines; k++ {
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
	var out []string
	for _, m := range c.JudgedDocumented() {
		doc := c.Documented[m]
		var kps []claims.KubeProxyMode
		for _, kp := range claims.KubeProxyModes {
			if _, ok := doc.ByKubeProxy[kp]; ok {
				kps = append(kps, kp)
			}
		}
		for i, a := range kps {
			for _, b := range kps[i+1:] {
				if c.Distinct.KubeProxyGroup(a) == c.Distinct.KubeProxyGroup(b) {
					continue
				}
				ba, bb := BandsFor(c, m, claims.Variant{KubeProxy: a}), BandsFor(c, m, claims.Variant{KubeProxy: b})
				if len(ba) == 0 || len(bb) == 0 {
					out = append(out, fmt.Sprintf("%s: mode %s, kube-proxy %s and %s differ in the source but have no band to tell them apart", c.ID, m, a, b))
					continue
				}
				x, y := ba[0], bb[0]
				if lo, hi := math.Max(x.Low, y.Low), math.Min(x.High, y.High); lo <= hi {
					out = append(out, fmt.Sprintf("%s: mode %s, %s bands of kube-proxy %s [%s, %s] and %s [%s, %s] overlap in [%s, %s]; the source says they differ",
						c.ID, m, x.Name, a, num(x.Low), num(x.High), b, num(y.Low), num(y.High), num(lo), num(hi)))
				}
			}
		}
	}
	return out
}

// conntrackOverlaps lists, within each judged mode whose value is stated
// per nf_conntrack_max, the pairs of limits whose headline bands
// intersect: the source states a different outcome for every limit, so a
// measurement that could pass under two limits does not tell them apart.
func conntrackOverlaps(c *claims.Claim) []string {
	var out []string
	for _, m := range c.JudgedDocumented() {
		var us []claims.Variant
		for _, u := range c.Documented[m].Variants() {
			if u.ConntrackMax != 0 {
				us = append(us, u)
			}
		}
		for i, a := range us {
			for _, b := range us[i+1:] {
				ba, bb := BandsFor(c, m, a), BandsFor(c, m, b)
				if len(ba) == 0 || len(bb) == 0 {
					out = append(out, fmt.Sprintf("%s: mode %s, %s and %s differ in the source but have no band to tell them apart", c.ID, m, a, b))
					continue
				}
				x, y := ba[0], bb[0]
				if lo, hi := math.Max(x.Low, y.Low), math.Min(x.High, y.High); lo <= hi {
					out = append(out, fmt.Sprintf("%s: mode %s, %s bands of %s [%s, %s] and %s [%s, %s] overlap in [%s, %s]; the source says they differ",
						c.ID, m, x.Name, a, num(x.Low), num(x.High), b, num(y.Low), num(y.High), num(lo), num(hi)))
				}
			}
		}
	}
	return out
}
