package authz

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Policy: AuthorizationPolicy ALLOW from cluster.local/ns/<ns>/sa/good, on
// echo's workloads by selector in ambient-l4 (ztunnel enforces) and on
// Service echo by targetRefs in ambient-l7 (the waypoint enforces).
// Scenario: the client as sa/good, then as sa/bad, calls echo.
// Expectation: good 200; bad cut at L4 by ztunnel, 403 from the waypoint.
var _ = spec.Declare(spec.Def{
	Claim:    "authz.ambient-principals",
	Area:     "authz",
	Scenario: "ALLOW sa/good (ztunnel by selector, waypoint by targetRefs); clients as sa/good and sa/bad -> echo",
	Measure:  principals,
})
