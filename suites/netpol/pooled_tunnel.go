package netpol

import (
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Policy: ingress to app=echo allows TCP 8080 only (15008 closed), applied
// while a client's HBONE tunnel to echo is open.
// Scenario: that client keeps calling echo:8080; a client deployed after
// the policy calls it too.
// Expectation (issue 26): the old tunnel keeps answering 200, the new path
// is blocked: a NetworkPolicy does not cut tunnels ztunnel already holds.
var _ = spec.Declare(spec.Def{
	Claim:    "netpol.pooled-tunnel-outlives-policy",
	Area:     "netpol",
	Scenario: "client's tunnel open; NetworkPolicy ingress TCP 8080 only; same client, then a new one -> echo:8080",
	Needs:    []spec.Need{NeedNetPol},
	Measure:  pooledTunnel,
})
