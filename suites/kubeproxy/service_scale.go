// Package kubeproxy holds HYBRID's kube-proxy scale claim, measured without
// a mesh: how long a new Service takes to answer on its ClusterIP.
package kubeproxy

import (
	"context"

	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: create a Service for echo and time, from the client, until its
// ClusterIP answers; repeat, first with no extra Services, then with N extra
// Services (N scaled from HYBRID's 10,000 by -duration-scale, at least 100;
// one fill per run and mode, read by kubeproxy.new-connection-growth too).
// Expectation: median about 0.96 s with none; growing by about 1.34 s to
// 10,000 (judged only when N reaches HYBRID's 10,000, -duration-scale=1).
var _ = spec.Declare(spec.Def{
	Claim:    "kubeproxy.service-scale",
	Area:     "kubeproxy",
	Scenario: "time from Service creation until its ClusterIP answers, with 0 and N existing Services",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		return ServiceReadiness(ctx, r)
	},
})
