package spec

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/meshclaims/meshclaims/framework/interference"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/report"
)

// CheckPlanned compares the loads a spec ran (or shared) with those its
// Def.Loads declares for the same Run (loadplan.Drift); a spec without
// declared loads passes (the plan lists it as undeclared).
func CheckPlanned(d Def, r *Run) error {
	if d.Loads == nil {
		return nil
	}
	declared, err := d.Loads(r)
	if err != nil {
		return fmt.Errorf("declared loads: %w", err)
	}
	return loadplan.Drift(declared, r.Loads())
}

// PlanLoads lists each planned spec's loads as its Def.Loads declares them
// for env's configuration, before any cluster work. Needs that only the
// -mode selection decides (Need.Selection) are checked, as the run checks
// them first: a spec whose selection need is unmet runs no load.
func PlanLoads(ctx context.Context, planned []Planned, env *Env) ([]loadplan.Spec, error) {
	var out []loadplan.Spec
	for _, p := range planned {
		r := NewRun(p.Claim, p.Mode, env, nil)
		s := loadplan.Spec{Claim: p.Claim.ID, Mode: p.Mode, Declared: p.Def.Declared, Undeclared: p.Def.Loads == nil}
		for _, n := range p.Def.Needs {
			if !n.Selection {
				continue
			}
			if err := n.Check(ctx, r); err != nil {
				s.Unmet = fmt.Sprintf("%s: %v", n.Name, err)
				break
			}
		}
		if s.Unmet == "" && p.Def.Loads != nil {
			ls, err := p.Def.Loads(r)
			if err != nil {
				return nil, fmt.Errorf("%s [%s]: declared loads: %w", p.Claim.ID, p.Mode, err)
			}
			s.Loads = ls
		}
		out = append(out, s)
	}
	return out, nil
}

// WritePlan prints the plan of a run with env's configuration
// (loadplan.Write): the planned specs' declared loads, the costs measured
// by the runs in Config.PlanCosts (comma-separated, loadplan.MergeCosts) or else the earlier run of the same
// provider that suits the plan best (report.LatestCosts: same scale, most of its specs, newest), or, when
// there is none of the plan's scale, the project's own records (report.ShippedCosts), and the estimated total.
func WritePlan(ctx context.Context, w io.Writer, planned []Planned, env *Env) (loadplan.Estimate, error) {
	specs, costs, err := planParts(ctx, planned, env)
	if err != nil {
		return loadplan.Estimate{}, err
	}
	cfg := env.Config
	return loadplan.Write(w, cfg.Modes, cfg.DurationScale, specs, costs, concurrency(cfg.ConcurrentModes)), nil
}

// Budget is the plan WritePlan prints, as an estimate the run can revise
// as the set-up and specs finish (the time left on the console).
func Budget(ctx context.Context, planned []Planned, env *Env) (*loadplan.Budget, error) {
	specs, costs, err := planParts(ctx, planned, env)
	if err != nil {
		return nil, err
	}
	return loadplan.NewBudget(env.Config.Modes, specs, costs, concurrency(env.Config.ConcurrentModes)), nil
}

func concurrency(on bool) loadplan.Concurrency {
	return loadplan.Concurrency{On: on, Reference: interference.ReferenceDuration}
}

// planParts are a plan's specs with their declared loads and the costs
// measured by earlier runs (WritePlan says which).
func planParts(ctx context.Context, planned []Planned, env *Env) ([]loadplan.Spec, *loadplan.Costs, error) {
	specs, err := PlanLoads(ctx, planned, env)
	if err != nil {
		return nil, nil, err
	}
	cfg := env.Config
	var costs *loadplan.Costs
	if cfg.PlanCosts != "" {
		var cs []*loadplan.Costs
		for _, dir := range strings.Split(cfg.PlanCosts, ",") {
			d, err := report.Open(dir)
			if err != nil {
				return nil, nil, fmt.Errorf("-plan-costs: %w", err)
			}
			c, err := d.Costs()
			if err != nil {
				return nil, nil, fmt.Errorf("-plan-costs: %w", err)
			}
			cs = append(cs, c)
		}
		if costs, err = loadplan.MergeCosts(cs); err != nil {
			return nil, nil, fmt.Errorf("-plan-costs=%s: %w", cfg.PlanCosts, err)
		}
	} else {
		keys := make([]string, len(specs))
		for i, s := range specs {
			keys[i] = loadplan.Key(s.Claim, s.Mode)
		}
		costs = report.LatestCosts(cfg.ResultsRoot, cfg.Provider, cfg.ResultsDir, cfg.DurationScale, keys)
		// The user's own run of this scale knows their machine best; without
		// one, the project's records of this scale come before an own run of
		// another scale (whose kubeproxy fill and undeclared loads differ).
		if costs == nil || costs.Scale != cfg.DurationScale {
			if root, err := repo.Root(); err == nil {
				if s := report.ShippedCosts(root, cfg.Provider, cfg.DurationScale, cfg.Modes, keys); s != nil && (costs == nil || s.Scale == cfg.DurationScale) {
					costs = s
				}
			}
		}
	}
	return specs, costs, nil
}
