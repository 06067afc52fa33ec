package netpol

import (
	"strings"
	"testing"
)

// Access-log lines of ztunnel 1.30 (built from istio/ztunnel's
// release-1.30 branch), taken from the local cluster's run under the
// app-port-only NetworkPolicy (kube-router REJECTs 15008): an outbound
// connect refused, and one that completed.
const (
	ztRefused = `2026-12-01T12:08:15.143307Z	error	access	connection complete	src.addr=198.18.0.33:47422 src.workload="fortio-client-5d88847f8c-5t4vd" src.namespace="meshclaims-ambient-l4" src.identity="spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/default" dst.addr=198.18.0.27:15008 dst.hbone_addr=198.18.0.27:8080 dst.service="echo.meshclaims-ambient-l4.svc.cluster.local" dst.workload="echo-6d7586854c-4d6tv" dst.namespace="meshclaims-ambient-l4" dst.identity="spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/default" direction="outbound" bytes_sent=0 bytes_recv=0 duration="0ms" error="io error: Connection refused (os error 111)"`
	ztOK      = `2026-12-01T12:08:05.095377Z	info	access	connection complete	src.addr=198.18.0.33:39582 src.workload="fortio-client-5d88847f8c-5t4vd" src.namespace="meshclaims-ambient-l4" src.identity="spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/default" dst.addr=198.18.0.26:15008 dst.hbone_addr=198.18.0.26:8080 dst.service="echo.meshclaims-ambient-l4.svc.cluster.local" dst.workload="echo-6d7586854c-dmhzt" dst.namespace="meshclaims-ambient-l4" dst.identity="spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/default" direction="outbound" bytes_sent=131 bytes_recv=94 duration="3ms"`
)

func TestZtunnelUpstreamRefusal(t *testing.T) {
	why, ok := ztunnelUpstreamRefusal(ztOK+"\n"+ztRefused+"\n", "meshclaims-ambient-l4")
	if !ok || !strings.Contains(why, "198.18.0.27:15008") || !strings.Contains(why, "Connection refused") {
		t.Fatalf("refused line not found: %q %v", why, ok)
	}
	timedOut := strings.Replace(ztRefused, "io error: Connection refused (os error 111)", "io error: connection timed out", 1)
	if _, ok := ztunnelUpstreamRefusal(timedOut, "meshclaims-ambient-l4"); !ok {
		t.Error("a timed-out connect (a dropping policy) not found")
	}
	// Negative controls: a completed connection, another namespace's
	// refusal, an inbound line, a refusal to the app port itself.
	for name, log := range map[string]string{
		"completed":       ztOK,
		"other namespace": ztRefused,
		"inbound":         strings.Replace(ztRefused, `direction="outbound"`, `direction="inbound"`, 1),
		"not HBONE":       strings.Replace(ztRefused, "dst.addr=198.18.0.27:15008", "dst.addr=198.18.0.27:8080", 1),
	} {
		ns := "meshclaims-ambient-l4"
		if name == "other namespace" {
			ns = "meshclaims-ambient-l7"
		}
		if why, ok := ztunnelUpstreamRefusal(log, ns); ok {
			t.Errorf("%s: found %q", name, why)
		}
	}
}
