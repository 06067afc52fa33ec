package verdict

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
)

// SortedPercentiles are the keys of percentiles ("50", "99.9", ...) in
// numeric order.
func SortedPercentiles(m map[string]float64) []string {
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
		parts = append(parts, percentilesText(v.Percentiles))
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
		parts = append(parts, percentilesText(m.Percentiles))
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

func percentilesText(m map[string]float64) string {
	var s []string
	for _, k := range SortedPercentiles(m) {
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
