package method

import (
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// Scenario: echo restarted again and again; meanwhile pairs of short
// loads from the in-mesh client, without and with -allow-initial-errors.
// Expectation: some loads without the flag abort on their warm-up; every
// load with it runs.
var _ = spec.Declare(spec.Def{
	Claim:    "method.initial-errors-abort",
	Area:     "method",
	Scenario: "rollout loop on echo; pairs of 1 s loads without and with -allow-initial-errors; aborted warm-ups counted",
	Slow:     true,
	Measure:  steps.InitialErrorsDuringRollout,
})
