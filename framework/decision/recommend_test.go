package decision

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/requirements"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func tiers(t *testing.T, yaml string) *requirements.File {
	t.Helper()
	f, err := requirements.Parse([]byte("version: 1\ntiers:\n"+yaml), "tiers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Each requirement, met and missed (and not shown where the evidence
// cannot tell), in a run of sidecar and ambient-l4.
func TestRecommend(t *testing.T) {
	reg := claimstest.Registry(t)
	modes := []mode.Mode{mode.None, mode.Sidecar, mode.AmbientL4}
	recs := []rec{
		outcome("mtls.plaintext-blocked", mode.Sidecar, "no-http-response"), outcome("mtls.in-mesh-ok", mode.Sidecar, "http-200"), outcome("mtls.spiffe-identity", mode.Sidecar, "verified"),
		outcome("mtls.plaintext-blocked", mode.AmbientL4, "http-200"), outcome("mtls.in-mesh-ok", mode.AmbientL4, "http-200"), outcome("mtls.spiffe-identity", mode.AmbientL4, "verified"),
		outcome("netpol.app-port-only", mode.Sidecar, "http-200"),
		outcome("netpol.app-port-only", mode.AmbientL4, "blocked"), outcome("netpol.hbone-allowed", mode.AmbientL4, "http-200"),
		outcome("canary.east-west-needs-l7", mode.Sidecar, "honoured"), outcome("l7.header-routing", mode.Sidecar, "honoured"), outcome("l7.path-routing", mode.Sidecar, "honoured"),
		outcome("canary.east-west-needs-l7", mode.AmbientL4, "not-honoured"), outcome("l7.header-routing", mode.AmbientL4, "not-honoured"),
		overhead(mode.Sidecar, 1.3, 1.1, 1.5), overhead(mode.AmbientL4, 0.05, -0.1, 0.2),
		rollout("rollout.baseline", mode.Sidecar, 324, 2, 60000), rollout("rollout.hardened", mode.Sidecar, 0, 0, 60000),
		rollout("rollout.baseline", mode.AmbientL4, 0, 0, 60000), rollout("rollout.hardened", mode.AmbientL4, 0, 0, 60000),
	}
	in := Input{Modes: modes, NotMeasured: map[string]string{}}
	for _, r := range recs {
		in.Entries = append(in.Entries, Judged{Verdict: verdict.Judge(reg.MustGet(r.claim), r.mode, r.got), Measurement: r.got})
	}
	s, _ := Summarize(in, reg)
	cases := []struct {
		name     string
		tier     string
		sidecar  Fit
		ambient  Fit
		evidence string
	}{
		{"mTLS", "mtls: required", Meets, Misses, "STRICT"},
		{"NetworkPolicy as is", "networkpolicy: existing-rules", Meets, Misses, "8080-only"},
		{"NetworkPolicy with 15008", "networkpolicy: hbone-allowed", Meets, Meets, "8080-only"},
		{"L7 routing", "l7_routing: required", Meets, Misses, "honoured"},
		{"P50 overhead", "max_p50_overhead_ms: 1", Misses, Meets, "above +1.00 ms"},
		{"P50 overhead", "max_p50_overhead_ms: 1.4", Unknown, Meets, "straddles +1.40 ms"},
		{"rollout error rate (as-deployed)", "max_rollout_error_rate: 0.1%", Misses, Meets, "rollout.baseline: 503 or -1 326/60000"},
		{"rollout error rate (hardened)", "max_rollout_error_rate: 0.1%\n    rollout: hardened", Meets, Meets, "rollout.hardened"},
	}
	for _, c := range cases {
		t.Run(c.name+" "+c.tier, func(t *testing.T) {
			r := Recommend(s, in, reg, tiers(t, "  - name: t\n    "+c.tier+"\n"))[0]
			if len(r.Modes) != 2 {
				t.Fatalf("modes %+v", r.Modes)
			}
			got := map[mode.Mode]Check{}
			for _, f := range r.Modes {
				if len(f.Checks) != 1 || f.Checks[0].Requirement != c.name {
					t.Fatalf("%s: checks %+v", f.Mode, f.Checks)
				}
				got[f.Mode] = f.Checks[0]
			}
			if got[mode.Sidecar].Fit != c.sidecar || got[mode.AmbientL4].Fit != c.ambient {
				t.Errorf("sidecar %s (%s), ambient-l4 %s (%s); want %s, %s", got[mode.Sidecar].Fit, got[mode.Sidecar].Evidence, got[mode.AmbientL4].Fit, got[mode.AmbientL4].Evidence, c.sidecar, c.ambient)
			}
			if !strings.Contains(got[mode.Sidecar].Evidence+got[mode.AmbientL4].Evidence, c.evidence) {
				t.Errorf("evidence lacks %q: %+v", c.evidence, got)
			}
		})
	}
	// The gate: a tier some mode meets passes, one none meets fails and
	// says what each mode misses; a run without meshed modes meets nothing.
	ok := Recommend(s, in, reg, tiers(t, "  - name: light\n    max_p50_overhead_ms: 1\n"))
	if err := Gate(ok); err != nil || strings.Join(modeNames(ok[0].Meets), ",") != "ambient-l4" {
		t.Errorf("a tier ambient-l4 meets: %v, meets %v", err, ok[0].Meets)
	}
	none := Recommend(s, in, reg, tiers(t, "  - name: light\n    max_p50_overhead_ms: 1\n  - name: strict\n    mtls: required\n    max_p50_overhead_ms: 1\n"))
	err := Gate(none)
	if err == nil || !strings.Contains(err.Error(), "tier strict: no measured mode meets every requirement") || !strings.Contains(err.Error(), "sidecar: P50 overhead misses") || strings.Contains(err.Error(), "tier light") {
		t.Errorf("gate: %v", err)
	}
	if err := Gate(Recommend(nil, Input{}, reg, tiers(t, "  - name: a\n    mtls: required\n"))); err == nil || !strings.Contains(err.Error(), "no meshed mode was measured") {
		t.Errorf("no meshed mode: %v", err)
	}
}

func modeNames(ms []mode.Mode) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m))
	}
	return out
}
