package netpol

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: ingress to app=echo allows TCP 8080 and 15008 (HBONE).
// Scenario: the mode's client calls http://echo:8080/. Expectation: 200.
var _ = spec.Declare(spec.Def{
	Claim:    "netpol.hbone-allowed",
	Area:     "netpol",
	Scenario: "NetworkPolicy ingress TCP 8080 + 15008; client -> echo:8080",
	Needs:    []spec.Need{NeedNetPol},
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		return underNetPol(ctx, r, fixtures.NetpolAppPortAndHBONE(scenario.Target(r), r.Mode), scenario.EchoURL(r))
	},
})
