package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
)

// Every claim's documented value passes its own band (a band that rejects
// the source's own number is broken), and where the source says two modes
// differ, neither mode's documented value passes the other's band and their
// headline bands do not meet: no one measurement can pass as both.
func TestBandsDiscriminate(t *testing.T) {
	reg := claimstest.Registry(t)
	for _, c := range reg.Claims {
		for _, m := range c.JudgedDocumented() {
			for _, u := range c.Documented[m].Variants() {
				got, _ := AsMeasuredUnder(c, m, u)
				if v := Judge(c, m, got); v.Result != Reproduced {
					t.Errorf("%s [%s %s]: the documented value does not pass its own band: %s: %s", c.ID, m, u, v.Result, v.Reason)
				}
			}
		}
		for _, msg := range crossPasses(c) {
			t.Error(msg)
		}
		for _, msg := range Overlaps(c) {
			t.Error(msg)
		}
	}
}

// crossPasses judges each mode's documented value in every mode of another
// distinct group; each kube-proxy mode's value, measured on a cluster
// whose kube-proxy runs a mode of another kube_proxy_groups group; and each
// nf_conntrack_max's value, measured under every other documented limit.
func crossPasses(c *claims.Claim) []string {
	var out []string
	for _, m := range c.JudgedDocumented() {
		us := c.Documented[m].Variants()
		for _, a := range us {
			for _, b := range us {
				if a == b || a == (claims.Variant{}) {
					continue
				}
				if a.KubeProxy != "" && (c.Distinct == nil || c.Distinct.KubeProxyGroup(a.KubeProxy) == c.Distinct.KubeProxyGroup(b.KubeProxy)) {
					continue
				}
				got, _ := AsMeasuredUnder(c, m, a)
				got.KubeProxyMode, got.ConntrackMax = b.KubeProxy, b.ConntrackMax // a's value, read under b
				if v := Judge(c, m, got); v.Result == Reproduced {
					out = append(out, fmt.Sprintf("%s [%s]: %s's documented value passes %s's band: %s", c.ID, m, a, b, v.Reason))
				}
			}
		}
	}
	if c.Distinct == nil {
		return out
	}
	for _, a := range c.JudgedDocumented() {
		got, _ := AsMeasured(c, a)
		for _, b := range c.JudgedDocumented() {
			if c.Distinct.Group(a) == c.Distinct.Group(b) {
				continue
			}
			if v := Judge(c, b, got); v.Result == Reproduced {
				out = append(out, c.ID+": "+string(a)+"'s documented value passes "+string(b)+"'s band: "+v.Reason)
			}
		}
	}
	return out
}

// The registry before issue 14, claim by claim, with only the distinct
// groups added that the check needs, and a proxy footprint whose factor-2
// band separates memory but not CPU: the check must fire on each.
const overlappingBands = `version: 1
sources:
  GUIDE: {title: t, date: d, version: v, file: f, platform: p}
  REVIEW: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: latency.percentiles
    title: steady-state latency percentiles, 200 qps, 16 connections, 60 s
    source: {doc: GUIDE, section: "3. Latency, T5"}
    kind: measurement
    metric: latency_percentiles_ms
    modes: [none, sidecar, ambient-l4, ambient-l7]
    documented:
      none: {percentiles_ms: {"50": 0.82, "75": 1.33, "90": 1.73, "99": 1.97, "99.9": 2.00}}
      sidecar: {percentiles_ms: {"50": 2.11, "75": 2.60, "90": 2.89, "99": 3.91, "99.9": 8.00}}
      ambient-l4: {percentiles_ms: {"50": 0.86, "75": 1.34, "90": 1.74, "99": 1.98, "99.9": 2.93}}
      ambient-l7: {percentiles_ms: {"50": 2.68, "75": 3.06, "90": 3.63, "99": 3.98, "99.9": 7.67}}
    distinct: {groups: [[none, ambient-l4], [sidecar, ambient-l7]], text: "added for the test"}
    tolerance:
      absolute: 1.0
      why: "GUIDE measured on EKS m7g nodes; absolute latency differs per cluster."
  - id: rollout.baseline
    title: 503 and no-response (-1) rates during repeated rollout restarts under 100 qps
    source: {doc: GUIDE, section: "4. Zero-downtime rollout, T1"}
    kind: measurement
    metric: error_rate
    modes: [none, sidecar, ambient-l4, ambient-l7]
    documented:
      sidecar: {count: 324, total: 60000, socket_errors: 2, sockets: 350, cycles: 42}
      ambient-l4: {count: 0, total: 60000, socket_errors: 195, sockets: 1652, cycles: 64}
      ambient-l7: {count: 1528, total: 59913, socket_errors: 84, sockets: 2486, cycles: 65, mean_ms: 50.4}
    distinct: {groups: [[sidecar], [ambient-l4], [ambient-l7]], text: "added for the test"}
    tolerance:
      factor: 3
      max_rate: 0.001
      why: "rates from one 600 s run per mode"
  - id: resources.budget-model
    title: 100 pods, sidecars vs ambient (10 ztunnels + 1 waypoint) memory and CPU budget
    source: {doc: REVIEW, section: "resource budget model"}
    kind: model
    metric: resource_budget
    modes: [sidecar, ambient-l7]
    documented:
      sidecar: {value: 5000}
      ambient-l7: {value: 700}
    distinct: {groups: [[sidecar], [ambient-l7]], text: "added for the test"}
    tolerance:
      factor: 3
      why: "a factor of 3 keeps 5,000 MB apart from 700 MB"
  - id: resources.proxy-footprint
    title: one proxy's working set and CPU under 1,000 qps
    source: {doc: REVIEW, section: "s"}
    kind: measurement
    metric: proxy_footprint
    modes: [none, sidecar, ambient-l4]
    setup: {qps: 1000, connections: 16, duration: 60s}
    documented:
      sidecar: {value: 60, vcpu: 0.20}
      ambient-l4: {value: 12, vcpu: 0.06}
    distinct: {groups: [[sidecar], [ambient-l4]], text: "added for the test"}
    tolerance:
      factor: 2
      why: "a factor of 2 keeps 60 MiB apart from 12 MiB, but not 0.2 vCPU from 0.06"
`

func TestBandsDiscriminateFiresOnOverlappingBands(t *testing.T) {
	reg, err := claims.Parse([]byte(overlappingBands), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"latency.percentiles":    "P50 bands of none [-0.18, 1.82] and sidecar [1.11, 3.11] overlap",
		"rollout.baseline":       "rate bands of sidecar [0.0018, 0.0162] and ambient-l7 [0.008501, 0.07651] overlap",
		"resources.budget-model": "value bands of sidecar [1667, 1.5e+04] and ambient-l7 [233.3, 2100] overlap",
		// Memory apart, CPU not: the CPU band is a headline too.
		"resources.proxy-footprint": "CPU (vCPU) bands of sidecar [0.1, 0.4] and ambient-l4 [0.03, 0.12] overlap",
	}
	for id, w := range want {
		got := strings.Join(Overlaps(reg.MustGet(id)), "\n")
		if !strings.Contains(got, w) {
			t.Errorf("%s: overlaps %q do not contain %q", id, got, w)
		}
	}
	// Cross-passing documented values fire too (constructed: a factor of 8
	// lets 5,000 MB and 700 MB into each other's bands).
	wide := strings.Replace(overlappingBands, "      factor: 3\n      why: \"a factor", "      factor: 8\n      why: \"a factor", 1)
	if wide == overlappingBands {
		t.Fatal("the constructed claim did not change")
	}
	reg, err = claims.Parse([]byte(wide), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(crossPasses(reg.MustGet("resources.budget-model")), "\n"); !strings.Contains(got, "sidecar's documented value passes ambient-l7's band") ||
		!strings.Contains(got, "ambient-l7's documented value passes sidecar's band") {
		t.Errorf("cross-pass check did not fire: %q", got)
	}
	// A factor of 6 lets sidecar's 60 MiB / 0.2 vCPU pass ztunnel's band
	// ([2, 72] MiB, [0.01, 0.36] vCPU): both figures must pass to cross.
	wide = strings.Replace(overlappingBands, "      factor: 2\n      why: \"a factor of 2 keeps 60", "      factor: 6\n      why: \"a factor of 2 keeps 60", 1)
	if wide == overlappingBands {
		t.Fatal("the constructed footprint claim did not change")
	}
	reg, err = claims.Parse([]byte(wide), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(crossPasses(reg.MustGet("resources.proxy-footprint")), "\n"); !strings.Contains(got, "sidecar's documented value passes ambient-l4's band") {
		t.Errorf("cross-pass check did not fire on the footprint: %q", got)
	}
}

// A claim documented per kube-proxy mode, HYBRID's kind figures, under a
// band given as %s: the check must fire where the band lets one mode's
// value pass as another's.
const kubeProxyClaim = `version: 1
sources:
  HYBRID: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: kubeproxy.kind-service-ready
    title: t
    source: {doc: HYBRID, section: s}
    kind: measurement
    metric: time_to_ready_s
    modes: [none]
    documented:
      none:
        by_kube_proxy:
          iptables: {value: 1.04}
          ipvs: {value: 0.12}
          nftables: {value: 1.03}
    distinct: {groups: [[none]], kube_proxy_groups: [[iptables, nftables], [ipvs]], text: t}
    tolerance: {factor: %s, why: w}
`

func TestKubeProxyBandsDiscriminate(t *testing.T) {
	parse := func(factor string) *claims.Claim {
		t.Helper()
		reg, err := claims.Parse([]byte(fmt.Sprintf(kubeProxyClaim, factor)), "kp.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return reg.MustGet("kubeproxy.kind-service-ready")
	}
	// Factor 3 meets at 0.35 s: iptables [0.3467, 3.12], ipvs [0.04, 0.36].
	if got := strings.Join(Overlaps(parse("3")), "\n"); !strings.Contains(got, "value bands of kube-proxy iptables [0.3467, 3.12] and ipvs [0.04, 0.36] overlap") ||
		!strings.Contains(got, "kube-proxy ipvs [0.04, 0.36] and nftables [0.3433, 3.09] overlap") {
		t.Errorf("factor 3: overlaps %q", got)
	}
	// Factor 9 lets 1.04 s into ipvs' band [0.01333, 1.08], and 0.12 s into iptables'.
	got := strings.Join(crossPasses(parse("9")), "\n")
	for _, w := range []string{"kube-proxy iptables's documented value passes kube-proxy ipvs's band", "kube-proxy ipvs's documented value passes kube-proxy iptables's band"} {
		if !strings.Contains(got, w) {
			t.Errorf("factor 9: cross passes %q do not contain %q", got, w)
		}
	}
	// The registry's own band separates them: nothing fires.
	c := claimstest.Registry(t).MustGet("kubeproxy.kind-service-ready")
	if o := append(Overlaps(c), crossPasses(c)...); len(o) > 0 {
		t.Errorf("registry band: %v", o)
	}
}

// HYBRID's full conntrack table, documented per nf_conntrack_max, under a
// band given as %s: the check must fire where one limit's failures could
// pass as another's.
const conntrackClaim = `version: 1
sources:
  HYBRID: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: conntrack.table-full
    title: t
    source: {doc: HYBRID, section: s}
    kind: measurement
    metric: connect_failure_rate
    modes: [none]
    documented:
      none:
        by_conntrack_max:
          262144: {count: 0, total: 4000}
          2048: {count: 2087, total: 4000}
          1024: {count: 3031, total: 4000}
    tolerance: {absolute: %s, max_rate: %s, why: w}
`

func TestConntrackBandsDiscriminate(t *testing.T) {
	parse := func(abs string, maxRate ...string) *claims.Claim {
		t.Helper()
		mr := "0.01"
		if len(maxRate) > 0 {
			mr = maxRate[0]
		}
		reg, err := claims.Parse([]byte(fmt.Sprintf(conntrackClaim, abs, mr)), "ct.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return reg.MustGet("conntrack.table-full")
	}
	// ±0.15: 2,048's [0.3718, 0.6718] meets 1,024's [0.6078, 0.9078].
	if got := strings.Join(Overlaps(parse("0.15")), "\n"); !strings.Contains(got, "rate bands of nf_conntrack_max 2048 [0.3718, 0.6718] and nf_conntrack_max 1024 [0.6078, 0.9078] overlap") {
		t.Errorf("±0.15: overlaps %q", got)
	}
	// ±0.3: 2,048's 52% passes 1,024's band [0.4578, 1.058], and the reverse.
	got := strings.Join(crossPasses(parse("0.3")), "\n")
	for _, w := range []string{"nf_conntrack_max 2048's documented value passes nf_conntrack_max 1024's band", "nf_conntrack_max 1024's documented value passes nf_conntrack_max 2048's band"} {
		if !strings.Contains(got, w) {
			t.Errorf("±0.3: cross passes %q do not contain %q", got, w)
		}
	}
	// A max_rate of 0.6 lets 2,048's 52% pass as the default's zero.
	if o := strings.Join(crossPasses(parse("0.06", "0.6")), "\n"); !strings.Contains(o, "nf_conntrack_max 2048's documented value passes nf_conntrack_max 262144's band") {
		t.Errorf("max_rate 0.6: cross passes %q", o)
	}
	// The registry's own band separates all three: nothing fires.
	c := claimstest.Registry(t).MustGet("conntrack.table-full")
	if o := append(Overlaps(c), crossPasses(c)...); len(o) > 0 {
		t.Errorf("registry band: %v", o)
	}
}
