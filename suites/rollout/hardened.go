package rollout

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: echo hardened as GUIDE did — preStop sleep 10 s, grace period 40 s,
// and for sidecars terminationDrainDuration 30 s with
// EXIT_ON_ZERO_ACTIVE_CONNECTIONS. Scenario: the T1 load and restart loop.
// Expectation: GUIDE's hardened table (zero errors except ambient-l7's 1.1%),
// and where the claim's reference says so (ambient-l7) the 503 rate cut by
// more than half from the un-hardened T1 run of the same run, which is
// measured first (shared with rollout.baseline) and kept in the record.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.hardened",
	Area:     "rollout",
	Scenario: "the T1 run with echo hardened (preStop 10 s, grace 40 s, sidecar drain); for ambient-l7 also un-hardened, for the reduction",
	Slow:     true,
	Loads: func(r *spec.Run) ([]loadplan.Load, error) {
		runs := []steps.RolloutRun{{Harden: fixtures.GUIDEHardening}}
		if b := r.Claim.Reference; b != nil && b.AppliesTo(r.Mode) {
			runs = append([]steps.RolloutRun{{}}, runs...)
		}
		return steps.RolloutLoads(runs...)(r)
	},
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		var ref *verdict.Measurement
		var base *steps.RolloutResult
		if b := r.Claim.Reference; b != nil && b.AppliesTo(r.Mode) {
			// Before hardening: the patched echo stays until the spec ends.
			var err error
			base, err = steps.RolloutLoad(ctx, r, r.Mode, fixtures.Hardening{})
			if err != nil {
				return verdict.Measurement{}, err
			}
			bm := base.Measurement()
			ref = &bm
		}
		res, err := steps.RolloutLoad(ctx, r, r.Mode, fixtures.GUIDEHardening(r.Mode))
		if err != nil {
			return verdict.Measurement{}, err
		}
		m := res.Measurement()
		m.Reference = ref
		// The setup is the hardened load's; the reference's, if it ran
		// at once with other modes' loads, says so too.
		steps.StateAtOnce(r, m.Extra, []string{"reference"}, []*steps.RolloutResult{base})
		return m, nil
	},
})
