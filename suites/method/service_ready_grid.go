package method

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: time 5 new Services until their ClusterIP answers, as
// kubeproxy.service-scale does, and read the probe's retry interval from
// the readings. Expectation: the interval is at most a tenth of the median
// reading (the readings are not positions on the retry grid).
var _ = spec.Declare(spec.Def{
	Claim:    "method.service-ready-off-attempt-grid",
	Area:     "method",
	Scenario: "5 new Services timed until their ClusterIP answers; the probe's retry interval against the median reading",
	Measure:  serviceReadyGrid,
})
