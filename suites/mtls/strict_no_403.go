package mtls

import (
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// Policy: STRICT (base set). Scenario: the plaintext client outside the
// mesh calls an echo pod, then the in-mesh client asks the same pod for a
// 403 (the log's control); that pod's echo log is read. Expectation: the
// plaintext connection is cut and the log holds no 403 but the control's.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.strict-no-403",
	Area:     "mtls",
	Scenario: "STRICT: plaintext client -> echo pod, then in-mesh ?status=403 control; echo's error-answer log read",
	Measure:  steps.StrictNo403,
})
