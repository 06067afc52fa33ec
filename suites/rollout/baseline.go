// Package rollout holds GUIDE §4's rollout-under-load claims (T1): 503 and
// no-response rates while echo is restarted again and again, baseline and
// hardened, and the ratio of ambient-l7's 503 rate to sidecar's.
package rollout

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: fortio 100 qps, 16 keep-alive connections, 600 s (scaled),
// -allow-initial-errors; meanwhile restart deployment/echo and wait (60 s
// limit) again and again until the load ends. In sidecar mode the client's
// sidecar logs its outbound requests during the run and echo's pods are
// watched, for rollout.503-attribution, which reads the same run.
// Expectation: GUIDE's 503 and -1 rates per mode; no mesh is recorded.
var _ = spec.Declare(spec.Def{
	Claim:    "rollout.baseline",
	Area:     "rollout",
	Scenario: "100 qps x 16 keep-alive connections x 600 s while echo is restarted in a loop",
	Slow:     true,
	Loads:    steps.RolloutLoads(steps.RolloutRun{}),
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		res, err := steps.RolloutLoad(ctx, r, r.Mode, fixtures.Hardening{})
		if err != nil {
			return verdict.Measurement{}, err
		}
		return res.Measurement(), nil
	},
})
