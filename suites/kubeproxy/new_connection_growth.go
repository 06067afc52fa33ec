package kubeproxy

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Scenario: time 6,000 new connections (connect, GET, response) from the
// client pod to echo's ClusterIP; create N extra Services, each with an
// endpoint (HYBRID's 10,000, -duration-scale=1); time 6,000 again.
// Expectation: the mean grows by about 0.05 ms (about 15%) at HYBRID's
// 10,000 Services; a shorter run (-duration-scale below 1) does not
// measure it: the growth is not scaled. The extra Services are one fill
// per run and mode, read by kubeproxy.service-scale too.
var _ = spec.Declare(spec.Def{
	Claim:    "kubeproxy.new-connection-growth",
	Area:     "kubeproxy",
	Scenario: "mean new-connection latency to a ClusterIP with 0 and with N existing Services",
	Slow:     true,
	Needs:    []spec.Need{needDocumentedServices},
	Measure:  NewConnectionGrowth,
})
