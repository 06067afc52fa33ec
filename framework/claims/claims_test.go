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
  GUIDE: {title: t, file: f, platform: p}
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
		{"bad duration", "kind: requirement", "kind: requirement\n    setup: {duration: 10 minutes}", `setup duration "10 minutes"`},
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

func TestParseRejectsDuplicateID(t *testing.T) {
	dup := good + strings.SplitN(good, "claims:\n", 2)[1]
	_, err := Parse([]byte(dup), "x.yaml")
	if err == nil || !strings.Contains(err.Error(), `x.yaml:14: claim "mtls.plaintext-blocked": duplicate id (first defined at line 5)`) {
		t.Fatalf("duplicate id not reported with its line: %v", err)
	}
}
