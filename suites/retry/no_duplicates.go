// Package retry holds GUIDE §4's retry claim (T2): with retries configured,
// does a rollout make a non-idempotent POST run twice?
package retry

import (
	"context"

	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Policy: VirtualService on order, retries attempts 3, perTryTimeout 2 s,
// retryOn 503,reset,connect-failure. Scenario: order-client sends 20 POST
// /order per second with a fresh X-Request-Id each, for 300 s (scaled),
// while deployment/order is restarted in a loop; the collector counts ids.
// Expectation: no id executed twice (duplicate detector proven on loopback).
var _ = spec.Declare(spec.Def{
	Claim:    "retry.no-duplicates",
	Area:     "retry",
	Scenario: "order-client 20 POST/s x 300 s with retry VirtualService while order is restarted",
	Slow:     true,
	Loads:    steps.T2Loads,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		return steps.T2(ctx, r)
	},
})
