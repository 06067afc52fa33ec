package requirements

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/repo"
)

func TestParse(t *testing.T) {
	f, err := Parse([]byte(`version: 1
tiers:
  - name: checkout
    mtls: required
    l7_routing: optional
    networkpolicy: hbone-allowed
    max_p50_overhead_ms: 1.5
    max_rollout_error_rate: 0.1%
    rollout: hardened
  - name: batch
    max_rollout_error_rate: 0.02
`), "tiers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, b := f.Tiers[0], f.Tiers[1]
	if c.Name != "checkout" || !c.MTLS || c.L7Routing || c.NetworkPolicy != HBONEAllowed || *c.MaxP50OverheadMs != 1.5 || *c.MaxRolloutErrorRate != 0.001 || c.Rollout != Hardened || c.Line != 3 {
		t.Errorf("checkout: %+v", c)
	}
	if b.MTLS || b.NetworkPolicy != AnyPolicy || b.Rollout != AsDeployed || *b.MaxRolloutErrorRate != 0.02 || b.MaxP50OverheadMs != nil {
		t.Errorf("batch: %+v", b)
	}
}

// Every bad file is refused with file, line, field and what is accepted.
func TestParseErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown field", "version: 1\ntiers:\n  - name: a\n    mtls: required\n    p99_ms: 3\n", `x.yaml:5: tier "a": unknown field "p99_ms"; accepted: name, mtls, l7_routing`},
		{"bad mtls", "version: 1\ntiers:\n  - name: a\n    mtls: yes-please\n", `x.yaml:4: tier "a": field "mtls": "yes-please" is not known; accepted: required or optional`},
		{"negative overhead", "version: 1\ntiers:\n  - name: a\n    max_p50_overhead_ms: -1\n", `x.yaml:4: tier "a": field "max_p50_overhead_ms": "-1" is not a number of milliseconds >= 0; accepted: a number of milliseconds >= 0`},
		{"rate above 100%", "version: 1\ntiers:\n  - name: a\n    max_rollout_error_rate: 150%\n", `x.yaml:4: tier "a": field "max_rollout_error_rate": "150%" is not a rate; accepted: a fraction in [0, 1] or a percentage`},
		{"bad networkpolicy", "version: 1\ntiers:\n  - name: a\n    networkpolicy: open\n", `x.yaml:4: tier "a": field "networkpolicy": "open" is not known; accepted: existing-rules, hbone-allowed or any`},
		{"bad rollout", "version: 1\ntiers:\n  - name: a\n    max_rollout_error_rate: 0.01\n    rollout: soon\n", `x.yaml:5: tier "a": field "rollout": "soon" is not known; accepted: as-deployed or hardened`},
		{"no name", "version: 1\ntiers:\n  - mtls: required\n", `x.yaml:3: tier without a name`},
		{"duplicate name", "version: 1\ntiers:\n  - name: a\n    mtls: required\n  - name: a\n    mtls: required\n", `x.yaml:5: tier "a": duplicate name (first at line 3)`},
		{"requires nothing", "version: 1\ntiers:\n  - name: a\n", `x.yaml:3: tier "a" requires nothing`},
		{"version", "version: 2\ntiers:\n  - name: a\n    mtls: required\n", `x.yaml:1: field "version": "2" is not supported; accepted: 1`},
		{"no tiers", "version: 1\n", `x.yaml:1: field "tiers": want a list of one or more tiers`},
		{"top-level typo", "version: 1\ntier:\n  - name: a\n", `x.yaml:2: unknown field "tier"; accepted: version, tiers`},
		{"not YAML", "version: [1\n", `x.yaml: not YAML`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// The shipped examples load.
func TestExamples(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tiers.yaml", "mtls-only.yaml"} {
		if _, err := Load(root + "/testdata/requirements/" + name); err != nil {
			t.Error(err)
		}
	}
}
