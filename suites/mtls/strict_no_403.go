package mtls

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Policy: STRICT (base set). Scenario: the plaintext client outside the
// mesh calls an echo pod, then the in-mesh client asks Service echo for a
// 403 (the log's control); every echo pod's log is read. Expectation: the
// plaintext connection is cut and the log holds no 403 but the control's.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.strict-no-403",
	Area:     "mtls",
	Scenario: "STRICT: plaintext client -> echo pod, then in-mesh echo ?status=403 control; echo pods' error-answer logs read",
	Measure:  strictNo403,
})
