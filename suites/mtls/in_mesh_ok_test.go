package mtls

import (
	"testing"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
)

// The header check of GUIDE Check 2 fires when a 200 comes from the wrong
// proxy (or from none where one should answer).
func TestWithHeaders(t *testing.T) {
	res := func(h map[string][]string) probe.Result {
		return probe.Result{Result: wp.Result{Status: 200, Headers: h}, Outcome: "http-200"}
	}
	envoy := res(map[string][]string{"Server": {"envoy"}, "X-Envoy-Upstream-Service-Time": {"1"}})
	waypoint := res(map[string][]string{"Server": {"istio-envoy"}, "X-Envoy-Decorator-Operation": {"echo:8080/*"}})
	plain := res(map[string][]string{"Content-Type": {"text/plain"}})
	cases := []struct {
		m    mode.Mode
		r    probe.Result
		want string
	}{
		{mode.Sidecar, envoy, "http-200"},
		{mode.Sidecar, plain, "http-200 with other headers"},
		{mode.AmbientL4, plain, "http-200"},
		{mode.AmbientL4, envoy, "http-200 with other headers"},
		{mode.AmbientL7, waypoint, "http-200"},
		{mode.AmbientL7, envoy, "http-200 with other headers"},
		{mode.AmbientL4, probe.Result{Outcome: "no-http-response"}, "no-http-response"},
	}
	for _, c := range cases {
		if got := withHeaders(c.m, c.r); got != c.want {
			t.Errorf("%s %v: %s, want %s", c.m, c.r.Headers, got, c.want)
		}
	}
}
