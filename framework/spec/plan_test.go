package spec

import (
	"context"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// CheckPlanned holds a run to its declaration: the loads Def.Loads builds
// for the Run are the ones it must have run; a different duration (the
// scale applied twice, say) fails the spec, an undeclared spec is not
// checked.
func TestCheckPlannedComparesTheRunWithItsDeclaration(t *testing.T) {
	reg := claimstest.Registry(t)
	c := reg.MustGet("rollout.baseline")
	env := &Env{Config: &config.Config{DurationScale: 0.05, Modes: []mode.Mode{mode.Sidecar}}}
	// The declaration scales as a Measure would, from the Run's config.
	decl := func(r *Run) ([]loadplan.Load, error) {
		return []loadplan.Load{{Name: "t1", Mode: r.Mode, Duration: r.Env.Config.Scale(600*time.Second, 30*time.Second), QPS: 100, Connections: 16, Restarts: true}}, nil
	}
	d := Def{Claim: c.ID, Loads: decl}
	r := NewRun(c, mode.Sidecar, env, nil)
	want, _ := decl(r)
	r.Ran(loadplan.LoadRan{Load: want[0], Took: 30 * time.Second, Requests: 3000})
	if err := CheckPlanned(d, r); err != nil {
		t.Fatal(err)
	}
	bad := NewRun(c, mode.Sidecar, env, nil)
	wrong := want[0]
	wrong.Duration = 600 * time.Second
	bad.Ran(loadplan.LoadRan{Load: wrong})
	if err := CheckPlanned(d, bad); err == nil {
		t.Fatal("a load that ran 600 s where 30 s was declared passed")
	}
	if err := CheckPlanned(Def{Claim: c.ID}, bad); err != nil {
		t.Fatalf("an undeclared spec is listed as such by the plan, not failed: %v", err)
	}
	// PlanLoads skips the loads of a spec whose selection need is unmet.
	need := Need{Name: "sidecar and ambient-l7", Selection: true, Check: func(_ context.Context, r *Run) error {
		if len(r.Env.Config.Modes) < 2 {
			return context.Canceled
		}
		return nil
	}}
	d.Needs = []Need{need}
	specs, err := PlanLoads(context.Background(), []Planned{{Def: d, Claim: c, Mode: mode.Sidecar}}, env)
	if err != nil || len(specs) != 1 || len(specs[0].Loads) != 0 || specs[0].Unmet == "" {
		t.Fatalf("PlanLoads with an unmet selection need: %+v, %v", specs, err)
	}
}
