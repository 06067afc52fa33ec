package mtls

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: the mode's in-mesh client calls http://echo:8080/.
// Expectation: 200, with the headers that show which proxy answered.
var _ = spec.Declare(spec.Def{
	Claim:    "mtls.in-mesh-ok",
	Area:     "mtls",
	Scenario: "in-mesh fortio client -> http://echo:8080/",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		res, err := scenario.Probe(ctx, r, scenario.InMesh(r), scenario.EchoURL(r))
		if err != nil {
			return verdict.Measurement{}, err
		}
		return verdict.Measurement{Outcome: withHeaders(r.Mode, res), Detail: fmt.Sprintf("server=%q x-envoy-decorator-operation=%q", res.Header("Server"), res.Header("X-Envoy-Decorator-Operation"))}, nil
	},
})

// withHeaders keeps "http-200" only when the headers are the mode's (GUIDE
// Check 2); a 200 from the wrong proxy is a different outcome.
func withHeaders(m mode.Mode, res probe.Result) string {
	if res.Outcome != "http-200" {
		return res.Outcome
	}
	server := res.Header("Server")
	decorated := res.Header("X-Envoy-Decorator-Operation") != ""
	envoyHeader := false
	for k := range res.Headers {
		if strings.HasPrefix(strings.ToLower(k), "x-envoy-") {
			envoyHeader = true
		}
	}
	ok := false
	switch m {
	case mode.Sidecar:
		ok = server == "envoy"
	case mode.AmbientL4:
		ok = !strings.Contains(server, "envoy") && !envoyHeader
	case mode.AmbientL7:
		ok = server == "istio-envoy" && decorated
	}
	if ok {
		return "http-200"
	}
	return "http-200 with other headers"
}
