package netpol

import (
	"strings"
	"testing"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/probe"
)

// The waypoint's local reply when its HBONE connection to echo is refused
// (Envoy's router: "upstream connect error or disconnect/reset before
// headers. reset reason: ..."), as the four-mode run's pooled-tunnel
// observation met it (http-503 on the new path, 2026-12-02), is the policy
// blocking; echo's own 503 and a 503 without Envoy's words are not.
func TestWaypointUpstreamRefusal(t *testing.T) {
	res := func(status int, server, body string) probe.Result {
		r := wp.Result{Status: status, Body: body, Headers: map[string][]string{}}
		if server != "" {
			r.Headers["Server"] = []string{server}
		}
		o, d := probe.Outcome(r)
		return probe.Result{Result: r, Outcome: o, Detail: d}
	}
	envoy := "upstream connect error or disconnect/reset before headers. reset reason: connection timeout"
	if why, ok := waypointUpstreamRefusal(res(503, "istio-envoy", envoy)); !ok || !strings.Contains(why, "reset reason: connection timeout") {
		t.Errorf("the waypoint's refusal not recognised: %q %v", why, ok)
	}
	for name, r := range map[string]probe.Result{
		"echo's own 503":           res(503, "", "service unavailable"),
		"503 without Envoy's body": res(503, "istio-envoy", "no healthy upstream"),
		"200 through the waypoint": res(200, "istio-envoy", "ok"),
		"503 from another server":  res(503, "nginx", envoy),
	} {
		if _, ok := waypointUpstreamRefusal(r); ok {
			t.Errorf("%s taken for the policy's block", name)
		}
	}
}
