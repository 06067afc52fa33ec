package spec

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func measure(context.Context, *Run) (verdict.Measurement, error) { return verdict.Measurement{}, nil }

func TestPlanSelectsApplicableModes(t *testing.T) {
	reg := claimstest.Registry(t)
	defs := []Def{
		{Claim: "netpol.hbone-allowed", Area: "netpol", Measure: measure, Needs: []Need{{Name: "networkpolicy-enforcement"}}},
		{Claim: "latency.percentiles", Area: "latency", Measure: measure},
	}
	got, err := Plan(reg, defs, []mode.Mode{mode.None, mode.AmbientL4})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Claim.ID+"/"+string(p.Mode))
	}
	want := "netpol.hbone-allowed/ambient-l4 latency.percentiles/none latency.percentiles/ambient-l4"
	if strings.Join(names, " ") != want {
		t.Fatalf("planned %v, want %s", names, want)
	}
	if l := got[0].Labels(); l[0] != "claim:netpol.hbone-allowed" || l[1] != "mode:ambient-l4" {
		t.Fatalf("labels %v", l)
	}
}

func TestPlanRejectsDisagreement(t *testing.T) {
	reg := claimstest.Registry(t)
	cases := map[string][]Def{
		`names claim "latency.p51"`:                     {{Claim: "latency.p51", Area: "latency", Measure: measure}},
		`claim "latency.all-ok" has more than one spec`: {{Claim: "latency.all-ok", Measure: measure}, {Claim: "latency.all-ok", Measure: measure}},
		`has no Measure`:                                {{Claim: "latency.all-ok"}},
		`narrows to mode none`:                          {{Claim: "mtls.in-mesh-ok", Modes: []mode.Mode{mode.None}, Measure: measure}},
		`spec of claim "netpol.app-port-only" does not check the claim's need "networkpolicy-enforcement"`: {{Claim: "netpol.app-port-only", Measure: measure, Needs: []Need{{Name: "modes [sidecar] in the run"}}}},
	}
	for want, defs := range cases {
		if _, err := Plan(reg, defs, mode.All()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

func TestUnspecified(t *testing.T) {
	reg := claimstest.Registry(t)
	missing := Unspecified(reg, []Def{{Claim: "kubeproxy.service-scale"}}, []mode.Mode{mode.None})
	for _, m := range missing {
		if strings.HasPrefix(m, "kubeproxy.service-scale") {
			t.Fatalf("declared claim reported missing: %v", missing)
		}
	}
	if len(missing) == 0 || !strings.Contains(strings.Join(missing, ","), "latency.percentiles [none]") {
		t.Fatalf("missing = %v", missing)
	}
}

func TestSaveRawNeverOverwrites(t *testing.T) {
	reg := claimstest.Registry(t)
	d, err := report.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := NewRun(reg.MustGet("retry.no-duplicates"), mode.Sidecar, &Env{Results: d}, nil)
	for _, body := range []string{`{"sent":0}`, `{"sent":9}`} {
		if err := r.SaveRaw("stats", []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	raw := r.Raw()
	if len(raw) != 2 || raw[0] == raw[1] || !strings.HasSuffix(raw[1], "stats-2.json") {
		t.Fatalf("raw = %v", raw)
	}
}

func TestGate(t *testing.T) {
	reg := claimstest.Registry(t)
	c := reg.MustGet("latency.p50-overhead")
	off := verdict.Judge(c, mode.AmbientL4, verdict.Measurement{Value: verdict.Float64(1.5)}) // not reproduced
	on := verdict.Judge(c, mode.AmbientL4, verdict.Measurement{Value: verdict.Float64(0.1)})  // reproduced
	unmet := verdict.Measurement{Unmet: "networkpolicy-enforcement: not enforced"}
	unmetV := verdict.Judge(reg.MustGet("netpol.app-port-only"), mode.AmbientL4, unmet)
	req := reg.MustGet("mtls.plaintext-blocked")
	reqOff := verdict.Judge(req, mode.Sidecar, verdict.Measurement{Outcome: "http-200"})
	if c.Kind != claims.Measurement || req.Kind != claims.Requirement || reqOff.Passed() || off.Passed() {
		t.Fatalf("fixtures: %s is %s, %s is %s (passed %v), not-reproduced passed %v", c.ID, c.Kind, req.ID, req.Kind, reqOff.Passed(), off.Passed())
	}
	cases := []struct {
		name      string
		kind      claims.Kind
		v         verdict.Verdict
		got       verdict.Measurement
		selection bool
		failOn    string
		fails     bool
	}{
		{"not reproduced gates by default", c.Kind, off, verdict.Measurement{}, false, config.FailOnNotReproduced, true},
		{"not reproduced is only reported with -fail-on=error", c.Kind, off, verdict.Measurement{}, false, config.FailOnError, false},
		{"reproduced passes", c.Kind, on, verdict.Measurement{}, false, config.FailOnNotReproduced, false},
		{"a missing precondition always fails", claims.Requirement, unmetV, unmet, false, config.FailOnError, true},
		{"a requirement not reproduced fails with -fail-on=requirement", req.Kind, reqOff, verdict.Measurement{}, false, config.FailOnRequirement, true},
		{"a measurement not reproduced is reported with -fail-on=requirement", c.Kind, off, verdict.Measurement{}, false, config.FailOnRequirement, false},
		{"a missing precondition fails with -fail-on=requirement", claims.Requirement, unmetV, unmet, false, config.FailOnRequirement, true},
		{"modes not selected are reported with -fail-on=requirement", claims.Requirement, unmetV, unmet, true, config.FailOnRequirement, false},
		{"modes not selected are reported with -fail-on=error", claims.Requirement, unmetV, unmet, true, config.FailOnError, false},
		{"modes not selected fail the qualification gate", claims.Requirement, unmetV, unmet, true, config.FailOnNotReproduced, true},
	}
	for _, c := range cases {
		err := Gate(c.kind, c.v, c.got, c.selection, c.failOn)
		if (err != nil) != c.fails {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
}

// A comparison spec's other namespaces are collected with its own, each once.
func TestRunNamespacesTouched(t *testing.T) {
	r := NewRun(&claims.Claim{ID: "x"}, mode.AmbientL7, nil, nil)
	r.Touch(mode.Sidecar.Namespace())
	r.Touch(mode.AmbientL7.Namespace())
	r.Touch(mode.Sidecar.Namespace())
	got := strings.Join(r.Namespaces(), ",")
	if got != "meshclaims-ambient-l7,meshclaims-sidecar" {
		t.Fatalf("namespaces = %s", got)
	}
}

func TestRefuseParallel(t *testing.T) {
	if err := RefuseParallel(1); err != nil {
		t.Fatal(err)
	}
	err := RefuseParallel(4)
	if err == nil || !strings.Contains(err.Error(), "-procs=4") || !strings.Contains(err.Error(), "run without -p") {
		t.Fatalf("err = %v", err)
	}
}

// A record of a mode whose traffic passes through proxyv2 names the proxy
// beside where it ran; others do not.
func TestWhereForStatesTheProxy(t *testing.T) {
	e := &Env{Where: "local (https://127.0.0.1:6443)", Proxy: "proxy upstream-envoy: localhost/istio/proxyv2:1.30.3-dev"}
	if got := e.WhereFor(mode.Sidecar); got != "local (https://127.0.0.1:6443); proxy upstream-envoy: localhost/istio/proxyv2:1.30.3-dev" {
		t.Errorf("sidecar: %q", got)
	}
	for _, m := range []mode.Mode{mode.None, mode.AmbientL4} {
		if got := e.WhereFor(m); got != e.Where {
			t.Errorf("%s: %q", m, got)
		}
	}
	if got := (&Env{Where: "x"}).WhereFor(mode.Sidecar); got != "x" {
		t.Errorf("no proxy: %q", got)
	}
	// ambient-l7's records name the waypoint's adaptations where there are
	// some; sidecar records never do.
	e.WaypointProxy = e.Proxy + "; waypoint: EnvoyFilter removing the peer-metadata filters"
	if got := e.WhereFor(mode.AmbientL7); !strings.HasSuffix(got, "; waypoint: EnvoyFilter removing the peer-metadata filters") {
		t.Errorf("ambient-l7: %q", got)
	}
	if got := e.WhereFor(mode.Sidecar); strings.Contains(got, "waypoint") {
		t.Errorf("sidecar with a waypoint proxy set: %q", got)
	}
}

// A measurement made outside the cluster says where it ran instead of the
// cluster; any other says the cluster.
func TestSetWhereReplacesTheCluster(t *testing.T) {
	e := &Env{Where: "local (https://127.0.0.1:6443)"}
	r := NewRun(nil, mode.None, e, nil)
	if got := r.Where(); got != e.Where {
		t.Fatalf("default: %q", got)
	}
	r.SetWhere("a disposable VM: %s", "User-Mode Linux 6.1.176")
	if got := r.Where(); got != "a disposable VM: User-Mode Linux 6.1.176" {
		t.Fatalf("after SetWhere: %q", got)
	}
}

// A spec that only reads a shared measurement takes well under a
// millisecond; its record still gets a wall time, so a later plan knows its
// cost is about nothing rather than unknown.
func TestTookOfIsNeverZero(t *testing.T) {
	r := &Run{start: time.Now()}
	if d := tookOf(r); d <= 0 || d > time.Second {
		t.Errorf("tookOf a spec started just now: %s", d)
	}
}
