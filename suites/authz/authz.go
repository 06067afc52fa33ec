// Package authz holds HYBRID's AuthorizationPolicy claims.
package authz

import (
	"context"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// callAs applies the ALLOW-from-SA-good policy and calls echo as client.
func callAs(client string) func(context.Context, *spec.Run) (verdict.Measurement, error) {
	return func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		policy := fixtures.AuthzAllowGood(scenario.Target(r))
		if err := scenario.ApplyAndAwait(ctx, r, policy); err != nil {
			return verdict.Measurement{}, err
		}
		return scenario.ProbeOutcome(ctx, r, scenario.ClientAs(r, client), scenario.EchoURL(r))
	}
}

// Policy: AuthorizationPolicy ALLOW from cluster.local/ns/<ns>/sa/good.
// Scenario: the client running as SA good calls echo. Expectation: 200.
var _ = spec.Declare(spec.Def{
	Claim:    "authz.allowed-principal",
	Area:     "authz",
	Scenario: "ALLOW sa/good; client as sa/good -> echo",
	Measure:  callAs(fixtures.ClientGoodName),
})

// Same policy; the client running as SA bad calls echo.
// Expectation: 403 — the connection is made, only the identity is refused.
var _ = spec.Declare(spec.Def{
	Claim:    "authz.denied-principal",
	Area:     "authz",
	Scenario: "ALLOW sa/good; client as sa/bad -> echo",
	Measure:  callAs(fixtures.ClientBadName),
})
