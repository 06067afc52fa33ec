// Package method holds the method lessons of the sources as checks the
// suite runs on its own measurements (HYBRID: coarse histograms; GUIDE:
// probe intervals, -allow-initial-errors).
package method

import (
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// Scenario: the mode's T5 load (shared with the latency claims).
// Expectation: no reported percentile sits in a bucket wider than a third
// of it.
var _ = spec.Declare(spec.Def{
	Claim:    "method.percentiles-off-bucket-edges",
	Area:     "method",
	Scenario: "the T5 load's histogram: each percentile's bucket width against its value",
	Slow:     true,
	Loads:    steps.SteadyLoads(nil),
	Measure:  steadyPercentilesResolved,
})
