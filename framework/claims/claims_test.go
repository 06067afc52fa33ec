package claims

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/mode"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

func TestShippedRegistryLoads(t *testing.T) {
	reg, err := Load(repoFile(t, "testdata/claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := reg.MustGet("rollout.baseline")
	v, ok := c.DocumentedFor(mode.Sidecar)
	if !ok || *v.Count != 324 || *v.Total != 60000 || *v.Unanswered != 2 || *v.Sockets != 350 {
		t.Fatalf("rollout.baseline sidecar not as documented: %+v", v)
	}
	if p := reg.MustGet("latency.percentiles").Documented[mode.AmbientL7].Percentiles["99.9"]; p != 7.67 {
		t.Fatalf("latency.percentiles ambient-l7 P99.9 = %v, want 7.67", p)
	}
	for _, m := range mode.All() {
		if len(reg.ForMode(m)) == 0 {
			t.Errorf("no claim applies to mode %s", m)
		}
	}
}

// Every claim id in the specification (CLAIMS.md) is in the registry.
func TestRegistryCoversSpecification(t *testing.T) {
	spec, err := os.ReadFile(repoFile(t, "../shared/CLAIMS.md"))
	if err != nil {
		t.Skipf("specification not beside the repository: %v", err)
	}
	reg, err := Load(repoFile(t, "testdata/claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile("\\| `([a-z0-9-]+\\.[a-z0-9-]+)` \\|").FindAllStringSubmatch(string(spec), -1)
	if len(ids) < 30 {
		t.Fatalf("found only %d claim ids in CLAIMS.md; the pattern no longer matches its tables", len(ids))
	}
	for _, m := range ids {
		if _, ok := reg.Get(m[1]); !ok {
			t.Errorf("claim %s of CLAIMS.md is not in the registry", m[1])
		}
	}
}

const good = `version: 1
sources:
  GUIDE: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: mtls.plaintext-blocked
    title: plaintext is blocked
    source: {doc: GUIDE, section: "1"}
    kind: requirement
    metric: outcome
    modes: [sidecar]
    documented:
      sidecar: {outcome: no-http-response}
    tolerance: {exact: true, why: pass/fail}
`

func TestParseGood(t *testing.T) {
	reg, err := Parse([]byte(good), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c := reg.MustGet("mtls.plaintext-blocked"); c.Line != 5 {
		t.Fatalf("line = %d, want 5", c.Line)
	}
}

// Each broken registry is rejected with an error naming file, line and claim.
func TestParseRejects(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown mode", "modes: [sidecar]", "modes: [sidecar, ambient]", `x.yaml:10: claim "mtls.plaintext-blocked": unknown mode "ambient"; accepted: none, sidecar, ambient-l4, ambient-l7`},
		{"unknown metric", "metric: outcome", "metric: latency", `x.yaml:9: claim "mtls.plaintext-blocked": unknown metric "latency"`},
		{"unknown field", "kind: requirement", "kind: requirement\n    tolerence: {}", `x.yaml:9: claim "mtls.plaintext-blocked": field tolerence not found`},
		{"missing tolerance", "tolerance: {exact: true, why: pass/fail}", "tolerance: {why: none}", `x.yaml:13: claim "mtls.plaintext-blocked": missing tolerance`},
		{"no tolerance at all", "    tolerance: {exact: true, why: pass/fail}\n", "", `claim "mtls.plaintext-blocked": missing tolerance`},
		{"unknown outcome", "outcome: no-http-response", "outcome: reset", `unknown outcome "reset"`},
		{"unknown source", "doc: GUIDE", "doc: GUIED", `unknown source document "GUIED"`},
		{"source without date", "date: d, ", "", `source GUIDE has no date: a reader needs title, date and version`},
		{"source without version", "version: v, ", "version: \"\", ", `source GUIDE has no version`},
		{"bad duration", "kind: requirement", "kind: requirement\n    setup: {duration: 10 minutes}", `setup duration "10 minutes"`},
		{"vcpu on another metric", "sidecar: {outcome: no-http-response}", "sidecar: {outcome: no-http-response, vcpu: 0.2}", `mode sidecar: vcpu is the CPU of metric proxy_footprint; metric outcome has none`},
		{"documented for other mode", "sidecar: {outcome: no-http-response}", "sidecar: {outcome: no-http-response}\n      ambient-l4: {outcome: blocked}", `documented value for mode "ambient-l4", which is neither`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(good, c.old, c.new, 1)
			if bad == good {
				t.Fatalf("test case did not change the input")
			}
			_, err := Parse([]byte(bad), "x.yaml")
			if err == nil {
				t.Fatal("accepted a broken registry")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

// A proxy footprint is memory and CPU: a documented value without either is
// refused, both together accepted.
func TestParseProxyFootprint(t *testing.T) {
	footprint := strings.NewReplacer("kind: requirement", "kind: measurement", "metric: outcome", "metric: proxy_footprint",
		"{outcome: no-http-response}", "{value: 60, vcpu: 0.2}", "{exact: true, why: pass/fail}", "{factor: 1.8, why: w}").Replace(good)
	if _, err := Parse([]byte(footprint), "x.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"{value: 60}", "{vcpu: 0.2}"} {
		_, err := Parse([]byte(strings.Replace(footprint, "{value: 60, vcpu: 0.2}", doc, 1)), "x.yaml")
		if err == nil || !strings.Contains(err.Error(), "mode sidecar: a proxy footprint needs both value (working set, MiB) and vcpu") {
			t.Errorf("documented %s: %v", doc, err)
		}
	}
}

func TestParseRejectsDuplicateID(t *testing.T) {
	dup := good + strings.SplitN(good, "claims:\n", 2)[1]
	_, err := Parse([]byte(dup), "x.yaml")
	if err == nil || !strings.Contains(err.Error(), `x.yaml:14: claim "mtls.plaintext-blocked": duplicate id (first defined at line 5)`) {
		t.Fatalf("duplicate id not reported with its line: %v", err)
	}
}

// A registry whose claims use the same-run comparisons and distinct groups.
const compared = `version: 1
sources:
  GUIDE: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: rollout.baseline
    title: rollout
    source: {doc: GUIDE, section: "4"}
    kind: measurement
    metric: error_rate
    modes: [sidecar, ambient-l7]
    documented:
      sidecar: {count: 324, total: 60000}
      ambient-l7: {count: 1528, total: 59913}
    distinct: {groups: [[sidecar], [ambient-l7]], text: "about 5x"}
    tolerance: {factor: 2, why: one run}
  - id: rollout.hardened
    title: hardened
    source: {doc: GUIDE, section: "4"}
    kind: measurement
    metric: error_rate
    modes: [sidecar, ambient-l7]
    documented:
      sidecar: {count: 0, total: 60000}
      ambient-l7: {count: 648, total: 60000}
    reference:
      claim: rollout.baseline
      compare: rate_ratio
      modes: [ambient-l7]
      text: "cut by more than half"
      tolerance: {at_most: 0.5, why: more than half}
    distinct: {groups: [[sidecar], [ambient-l7]], text: "didn't reach zero"}
    tolerance: {factor: 3, max_rate: 0.001, why: one run}
  - id: latency.percentiles
    title: percentiles
    source: {doc: GUIDE, section: "3"}
    kind: measurement
    metric: latency_percentiles_ms
    modes: [none, sidecar, ambient-l4]
    documented:
      none: {percentiles_ms: {"50": 0.82}}
      sidecar: {percentiles_ms: {"50": 2.11}}
      ambient-l4: {percentiles_ms: {"50": 0.86}}
    reference: {mode: none, compare: difference, text: "same nodes"}
    distinct: {groups: [[sidecar], [ambient-l4]], text: "+1.29 vs +0.04"}
    tolerance: {absolute: 0.6, why: half the gap}
`

func TestParseComparisons(t *testing.T) {
	reg, err := Parse([]byte(compared), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := reg.MustGet("rollout.hardened")
	if h.Reference.Of != reg.MustGet("rollout.baseline") || !h.Reference.AppliesTo(mode.AmbientL7) || h.Reference.AppliesTo(mode.Sidecar) {
		t.Fatalf("reference not resolved: %+v", h.Reference)
	}
	if got := reg.MustGet("latency.percentiles").JudgedDocumented(); len(got) != 2 || got[0] != mode.Sidecar {
		t.Fatalf("the difference's baseline mode is judged: %v", got)
	}
}

// Each broken comparison or grouping is rejected with its line and claim.
func TestParseRejectsComparisons(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown compare", "compare: rate_ratio", "compare: ratio", `x.yaml:25: claim "rollout.hardened": reference: unknown compare "ratio"; accepted: difference, rate_ratio`},
		{"unknown reference claim", "claim: rollout.baseline", "claim: rollout.base", `claim "rollout.hardened": reference claim "rollout.base" is not in the registry`},
		{"ratio without its band", "      tolerance: {at_most: 0.5, why: more than half}\n", "", `reference compare rate_ratio needs its own tolerance`},
		{"empty band", "at_most: 0.5,", "at_most: 0.5, at_least: 0.6,", `reference tolerance at_least 0.6 is above at_most 0.5: the band is empty`},
		{"ratio mode not in modes", "modes: [ambient-l7]\n      text", "modes: [ambient-l4]\n      text", `reference mode "ambient-l4" is not one of the claim's modes`},
		{"no documented reference rate", "ambient-l7: {count: 1528, total: 59913}", "ambient-l7: {count: 0, total: 59913}", `reference claim rollout.baseline documents no nonzero count for mode ambient-l7`},
		{"difference with a tolerance", "{mode: none, compare: difference, text: \"same nodes\"}", "{mode: none, compare: difference, text: \"same nodes\", tolerance: {absolute: 1, why: w}}", `reference compare difference takes a mode only`},
		{"difference from an undocumented mode", "{mode: none, compare: difference", "{mode: ambient-l7, compare: difference", `reference mode ambient-l7 has no documented value`},
		{"no distinct", "    distinct: {groups: [[sidecar], [ambient-l7]], text: \"about 5x\"}\n", "", `x.yaml:5: claim "rollout.baseline": documents values for 2 judged modes (sidecar, ambient-l7) but no distinct`},
		{"distinct leaves a mode out", "groups: [[sidecar], [ambient-l7]], text: \"about 5x\"", "groups: [[sidecar]], text: \"about 5x\"", `distinct leaves out judged documented mode ambient-l7`},
		{"distinct names the baseline", "groups: [[sidecar], [ambient-l4]]", "groups: [[sidecar], [ambient-l4, none]]", `distinct names mode "none", which is not a judged documented mode`},
		{"distinct without text", "text: \"didn't reach zero\"", "text: \"\"", `distinct has no text`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(compared, c.old, c.new, 1)
			if bad == compared {
				t.Fatalf("test case did not change the input")
			}
			_, err := Parse([]byte(bad), "x.yaml")
			if err == nil {
				t.Fatal("accepted a broken registry")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

// An attribution claim: what GUIDE's -1s are attributed to, per mode.
const attributed = `version: 1
sources:
  GUIDE: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: rollout.no-response-cause
    title: cause of -1
    source: {doc: GUIDE, section: "4"}
    kind: measurement
    metric: attribution
    modes: [none, sidecar, ambient-l4]
    documented:
      sidecar: {attribution: {of: 2, to: [reset, eof]}}
      ambient-l4: {attribution: {of: 195, to: [reset]}}
    distinct: {groups: [[sidecar, ambient-l4]], text: "TCP reset/EOF"}
    tolerance: {at_least: 0.5, why: most}
`

func TestParseAttribution(t *testing.T) {
	reg, err := Parse([]byte(attributed), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := reg.MustGet("rollout.no-response-cause").Documented[mode.AmbientL4].Attribution
	if a == nil || a.Of != 195 || len(a.To) != 1 || a.To[0] != "reset" {
		t.Fatalf("ambient-l4 attribution: %+v", a)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"unknown category", "to: [reset]", "to: [rst]", `mode ambient-l4: unknown attribution category "rst"; accepted: reset, eof`},
		{"no categories", "to: [reset]", "to: []", `mode ambient-l4: attribution needs of > 0`},
		{"nothing attributed", "of: 195", "of: 0", `mode ambient-l4: attribution needs of > 0`},
		{"a value without attribution", "ambient-l4: {attribution: {of: 195, to: [reset]}}", "ambient-l4: {count: 195, total: 195}", `mode ambient-l4: an attribution (of, to) goes with metric attribution`},
		{"attribution on another metric", "metric: attribution", "metric: error_rate", `an attribution (of, to) goes with metric attribution`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(attributed, c.old, c.new, 1)
			if bad == attributed {
				t.Fatal("test case did not change the input")
			}
			_, err := Parse([]byte(bad), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v does not contain %q", err, c.want)
			}
		})
	}
}

// A value stated per kube-proxy mode (HYBRID's kind runs).
const perKubeProxy = `version: 1
sources:
  HYBRID: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: kubeproxy.kind-service-ready
    title: new Service ready per kube-proxy mode
    source: {doc: HYBRID, section: "kube-proxy"}
    kind: measurement
    metric: time_to_ready_s
    modes: [none]
    documented:
      none:
        text: "1.04 / 0.12 / 1.03 s"
        by_kube_proxy:
          iptables: {value: 1.04}
          ipvs: {value: 0.12}
          nftables: {value: 1.03}
    distinct: {groups: [[none]], kube_proxy_groups: [[iptables, nftables], [ipvs]], text: t}
    tolerance: {factor: 2.5, why: w}
`

func TestParseByKubeProxy(t *testing.T) {
	reg, err := Parse([]byte(perKubeProxy), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := reg.MustGet("kubeproxy.kind-service-ready").Documented[mode.None]
	if v, ok := doc.ForKubeProxy(KubeProxyIPVS); !ok || *v.Value != 0.12 {
		t.Fatalf("ipvs: %+v %v", v, ok)
	}
	if _, ok := doc.ForKubeProxy("kernelspace"); ok {
		t.Fatal("a kube-proxy mode nothing documents has a value")
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"unknown kube-proxy mode", "ipvs: {value: 0.12}", "ipvss: {value: 0.12}", `mode none: by_kube_proxy names unknown kube-proxy mode "ipvss"; accepted: iptables, ipvs, nftables`},
		{"no value", "ipvs: {value: 0.12}", "ipvs: {text: fast}", "mode none: by_kube_proxy ipvs has no value"},
		{"a value beside", `text: "1.04 / 0.12 / 1.03 s"`, "value: 1.04", "mode none: by_kube_proxy states the values; the mode's own value"},
		{"nested", "ipvs: {value: 0.12}", "ipvs: {value: 0.12, at: {services: 10, value: 1}}", "mode none: by_kube_proxy ipvs sets only value"},
		{"another metric", "metric: time_to_ready_s", "metric: latency_mean_ms", "by_kube_proxy (values per kube-proxy mode) is judged for metric time_to_ready_s only, not latency_mean_ms"},
		{"no kube-proxy groups", "kube_proxy_groups: [[iptables, nftables], [ipvs]], ", "", "documents values for 3 kube-proxy modes (iptables, ipvs, nftables) but no distinct.kube_proxy_groups"},
		{"a mode left out", "[[iptables, nftables], [ipvs]]", "[[iptables], [ipvs]]", "distinct.kube_proxy_groups leaves out documented kube-proxy mode nftables"},
		{"an undocumented mode", "[[iptables, nftables], [ipvs]]", "[[iptables, nftables], [ipvs, kernelspace]]", `distinct.kube_proxy_groups names kube-proxy mode "kernelspace", which no by_kube_proxy documents`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(perKubeProxy, c.old, c.new, 1)
			if bad == perKubeProxy {
				t.Fatal("test case did not change the input")
			}
			_, err := Parse([]byte(bad), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v does not contain %q", err, c.want)
			}
		})
	}
}

// A value stated per nf_conntrack_max (HYBRID's full conntrack table).
const perConntrackMax = `version: 1
sources:
  HYBRID: {title: t, date: d, version: v, file: f, platform: p}
claims:
  - id: conntrack.table-full
    title: failed connects per nf_conntrack_max
    source: {doc: HYBRID, section: "conntrack"}
    kind: measurement
    metric: connect_failure_rate
    modes: [none]
    documented:
      none:
        text: "0 / 2,087 / 3,031 of 4,000"
        by_conntrack_max:
          262144: {count: 0, total: 4000}
          2048: {count: 2087, total: 4000}
          1024: {count: 3031, total: 4000}
    tolerance: {absolute: 0.06, max_rate: 0.01, why: w}
`

func TestParseByConntrackMax(t *testing.T) {
	reg, err := Parse([]byte(perConntrackMax), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := reg.MustGet("conntrack.table-full").Documented[mode.None]
	if v, ok := doc.For(Variant{ConntrackMax: 2048}); !ok || *v.Count != 2087 || *v.Total != 4000 {
		t.Fatalf("2048: %+v %v", v, ok)
	}
	if _, ok := doc.For(Variant{ConntrackMax: 4096}); ok {
		t.Fatal("a limit nothing documents has a value")
	}
	if got := doc.Variants(); len(got) != 3 || got[0].ConntrackMax != 262144 || got[2].ConntrackMax != 1024 || got[1].String() != "nf_conntrack_max 2048" {
		t.Fatalf("variants %v", got)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"a limit of zero", "1024: {count", "0: {count", "by_conntrack_max limit 0: want a positive nf_conntrack_max"},
		{"no total", "2048: {count: 2087, total: 4000}", "2048: {count: 2087}", "by_conntrack_max 2048 needs count (connections that failed) and total"},
		{"count above total", "count: 3031, total: 4000", "count: 5000, total: 4000", "by_conntrack_max 1024: count 5000 of total 4000"},
		{"a count beside", `text: "0 / 2,087 / 3,031 of 4,000"`, "count: 1", "by_conntrack_max states the values; the mode's own value, count"},
		{"nested", "2048: {count: 2087, total: 4000}", "2048: {count: 2087, total: 4000, value: 1}", "by_conntrack_max 2048 sets only count, total and text"},
		{"another metric", "metric: connect_failure_rate", "metric: error_rate", "by_conntrack_max (values per nf_conntrack_max) is judged for metric connect_failure_rate only, not error_rate"},
		{"the metric without limits", "        by_conntrack_max:\n          262144: {count: 0, total: 4000}\n          2048: {count: 2087, total: 4000}\n          1024: {count: 3031, total: 4000}\n", "", "metric connect_failure_rate is stated per nf_conntrack_max: set by_conntrack_max"},
		{"a string limit", "1024: {count", "low: {count", "low"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(perConntrackMax, c.old, c.new, 1)
			if bad == perConntrackMax {
				t.Fatal("test case did not change the input")
			}
			_, err := Parse([]byte(bad), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v does not contain %q", err, c.want)
			}
		})
	}
}
