package rollout

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: echo hardened as GUIDE did — preStop sleep 10 s, grace period 40 s,
// and for sidecars terminationDrainDuration 30 s with
// EXIT_ON_ZERO_ACTIVE_CONNECTIONS. Scenario: the T1 load and restart loop.
// Expectation: GUIDE's hardened table (zero errors except ambient-l7's 1.1%).
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.hardened",
	Area:     "rollout",
	Scenario: "the T1 run with echo hardened (preStop 10 s, grace 40 s, sidecar drain)",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measured, error) {
		res, err := steps.RolloutLoad(ctx, r, r.Mode, fixtures.GUIDEHardening(r.Mode))
		if err != nil {
			return verdict.Measured{}, err
		}
		return res.Measured(), nil
	},
})
