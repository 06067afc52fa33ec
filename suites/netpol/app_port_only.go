// Package netpol holds GUIDE §2's NetworkPolicy claims and istio/istio#56659.
// Every spec about a policy's effect first proves the CNI enforces
// NetworkPolicy (NeedNetPol): without enforcement the claims are
// meaningless, so they fail, not pass. The one about turning enforcement on
// (enforcement_not_retroactive.go) starts where it is off, and proves
// enforcement on the pod it recreates instead.
package netpol

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: ingress to app=echo allows TCP 8080 only.
// Scenario: the mode's client calls http://echo:8080/.
// Expectation: sidecar and no mesh 200; ambient blocked (HBONE 15008 is not allowed).
var _ = spec.Declare(spec.Def{
	Claim:    "netpol.app-port-only",
	Area:     "netpol",
	Scenario: "NetworkPolicy ingress TCP 8080 only; client -> echo:8080",
	Needs:    []spec.Need{NeedNetPol},
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		return underNetPol(ctx, r, fixtures.NetpolAppPort(scenario.Target(r), r.Mode), scenario.EchoURL(r))
	},
})
