package netpol

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: ingress to app=echo allows TCP 15008 only — the app port 8080 is
// NOT listed. Scenario: the mode's client calls http://echo:8080/.
// Expectation (istio/istio#56659): 200, HBONE carries traffic to any port.
// A "blocked" result means this Istio version no longer lets it through.
var _ = spec.Declare(spec.Def{
	Claim:    "netpol.hbone-opens-unlisted-ports",
	Area:     "netpol",
	Scenario: "NetworkPolicy ingress TCP 15008 only; client -> echo:8080 (unlisted)",
	Needs:    []spec.Need{NeedNetPol},
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		return underNetPol(ctx, r, fixtures.NetpolHBONE(scenario.Target(r), r.Mode), scenario.EchoURL(r))
	},
})
