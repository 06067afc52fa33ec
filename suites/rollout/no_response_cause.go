package rollout

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: the T1 baseline run of rollout.baseline (shared: one load and
// restart loop per mode). Expectation: GUIDE's "TCP reset/EOF" (ambient-l4:
// "TCP resets") is the dominant cause of the run's -1s, each read from the
// client's own log line for it; a run without -1s is inconclusive.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.no-response-cause",
	Area:     "rollout",
	Scenario: "the T1 baseline run's -1s, each one's cause from the fortio client's log (reset, EOF, timeout, refused)",
	Slow:     true,
	Loads:    steps.RolloutLoads(steps.RolloutRun{}),
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		res, err := steps.RolloutLoad(ctx, r, r.Mode, fixtures.Hardening{})
		if err != nil {
			return verdict.Measurement{}, err
		}
		return noResponseCauses(res.Load), nil
	},
})
