package method

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: the in-mesh client loads echo's starting target (503 for a
// window after each load's first request, then 200) as `fortio load`
// does, once without and once with -allow-initial-errors. Expectation:
// without the flag fortio aborts on its warm-up's 503; with it the same
// condition is loaded to the end.
var _ = spec.Declare(spec.Def{
	Claim:    "method.initial-errors-abort",
	Area:     "method",
	Scenario: "echo's /starting (503 for 2 s after each load's first request); the same load without and with -allow-initial-errors; fortio's warm-up abort observed",
	Measure:  initialErrorsAbort,
})
