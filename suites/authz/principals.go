package authz

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// rbacDeniedBody is the body of Envoy's RBAC filter's local reply: a 403
// with it came from the proxy's policy, not from the app.
const rbacDeniedBody = "RBAC: access denied"

// principals applies the ALLOW-sa/good policy as r's mode enforces it
// (fixtures.AuthzAllowGoodFor), waits until the enforcer carries it, and
// calls echo as service account good, then as bad (judgePrincipals).
func principals(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	policy := fixtures.AuthzAllowGoodFor(scenario.Target(r), r.Mode)
	if err := scenario.ApplyAndAwait(ctx, r, policy); err != nil {
		return verdict.Measurement{}, err
	}
	good, err := scenario.Probe(ctx, r, scenario.ClientAs(r, fixtures.ClientGoodName), scenario.EchoURL(r))
	if err != nil {
		return verdict.Measurement{}, err
	}
	bad, err := scenario.Probe(ctx, r, scenario.ClientAs(r, fixtures.ClientBadName), scenario.EchoURL(r))
	if err != nil {
		return verdict.Measurement{}, err
	}
	got := judgePrincipals(good, bad)
	r.Logf("principals: %s", got.Detail)
	return got, nil
}

// judgePrincipals: the allowed caller's 200 is the positive control (a
// policy, or a path, that refuses everyone is not enforcement of a
// principal), so without it the outcome names what good got. Otherwise the
// outcome is what the denied caller got, with a 403 counted as the
// policy's only when it is Envoy's RBAC reply; ztunnel's refusal (ambient
// L4) has no HTTP status at all.
func judgePrincipals(good, bad probe.Result) verdict.Measurement {
	detail := fmt.Sprintf("sa/good: %s %s; sa/bad: %s %s", good.Outcome, good.Detail, bad.Outcome, bad.Detail)
	if good.Outcome != "http-200" {
		return verdict.Measurement{Outcome: "allowed caller refused (" + good.Outcome + ")", Detail: detail}
	}
	out := bad.Outcome
	if out == "http-403" && !strings.Contains(bad.Body, rbacDeniedBody) {
		out = "http-403 not from RBAC"
		detail += fmt.Sprintf("; the 403's body %q is not Envoy's %q", bad.Body, rbacDeniedBody)
	}
	return verdict.Measurement{Outcome: out, Detail: detail}
}
