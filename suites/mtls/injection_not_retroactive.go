package mtls

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: in a namespace of the spec's own, an echo pod runs before the
// namespace is labelled istio-injection=enabled; a Deployment created after
// the label is the positive control; then echo is restarted.
// Expectation: the running pod keeps no sidecar until its restart.
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.injection-not-retroactive",
	Area:     "mtls",
	Scenario: "echo running in an unlabelled namespace; label istio-injection=enabled; a pod created after; echo restarted",
	Slow:     true,
	Measure:  lateInjection,
})
