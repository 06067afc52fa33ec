package retry

import (
	"context"

	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy and scenario: retry.no-duplicates' T2 run (shared, run once per
// mode). Expectation: the retrying proxy's upstream_rq_retry for order grew
// during the run (GUIDE: "retries were actively firing"), and the orders the
// client saw fail after three attempts stay near GUIDE's 15 of 9,135
// (sidecar) and 21 of 7,229 (ambient-l7).
var _ = spec.Declare(spec.Def{
	Claim:    "retry.fired",
	Area:     "retry",
	Scenario: "the T2 run: order-client's failed orders, and the retrying proxy's upstream_rq_retry before and after",
	Slow:     true,
	Loads:    steps.T2Loads,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		dup, err := steps.T2(ctx, r)
		if err != nil {
			return verdict.Measurement{}, err
		}
		return steps.RetriesFired(dup), nil
	},
})
