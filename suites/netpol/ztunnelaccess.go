package netpol

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// ztunnelUpstreamRefusal finds, in ztunnel's log, an outbound connection
// from namespace ns whose connect to a destination's HBONE port (15008)
// failed: refused (a NetworkPolicy that REJECTs, as kube-router does) or
// timed out (one that DROPs, as EKS's VPC CNI does). In ambient mode the
// client's own ztunnel accepts its connect, so the client sees only EOF or
// a reset when the upstream connect fails; ztunnel's access log says why.
// The line looks like (ztunnel's access log, 1.30):
//
//	error access connection complete src.addr=198.18.0.33:47422 ... src.namespace="ns" ...
//	dst.addr=198.18.0.27:15008 ... direction="outbound" ... error="io error: Connection refused (os error 111)"
func ztunnelUpstreamRefusal(log, ns string) (string, bool) {
	hbone := ":" + strconv.Itoa(fixtures.HBONEPort) + " "
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "access") || !strings.Contains(l, "connection complete") || !strings.Contains(l, `direction="outbound"`) ||
			!strings.Contains(l, `src.namespace="`+ns+`"`) || !strings.Contains(l, "dst.addr=") {
			continue
		}
		dst := l[strings.Index(l, "dst.addr="):]
		if !strings.Contains(strings.SplitN(dst, " ", 2)[0]+" ", hbone) {
			continue
		}
		i := strings.Index(l, `error="`)
		if i < 0 {
			continue
		}
		e := strings.TrimSuffix(strings.SplitN(l[i+len(`error="`):], `"`, 2)[0], `"`)
		if strings.Contains(e, "Connection refused") || strings.Contains(e, "timed out") {
			return strings.SplitN(dst, " ", 2)[0] + ": " + e, true
		}
	}
	return "", false
}

// netpolOutcome turns an ambient probe's no-http-response into blocked
// when the client's ztunnel logged, since t0, that its connect to the
// destination's HBONE port was refused or timed out: the policy stopped the
// connection, which the client can only see as EOF or a reset. Without such
// a line the outcome stays as the client saw it.
func netpolOutcome(ctx context.Context, r *spec.Run, got verdict.Measurement, t0 time.Time) verdict.Measurement {
	if !r.Mode.Ambient() || got.Outcome != probe.NoHTTPResponse {
		return got
	}
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return got
	}
	zt, err := m.Kube.Client.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err != nil {
		return got
	}
	for _, p := range zt.Items {
		log, err := m.Kube.Logs(ctx, p.Namespace, p.Name, "istio-proxy", t0)
		if err != nil {
			continue
		}
		if why, ok := ztunnelUpstreamRefusal(log, r.Namespace()); ok {
			return verdict.Measurement{Outcome: probe.Blocked, Detail: fmt.Sprintf("client saw %s; %s/%s: outbound HBONE connect to %s", got.Detail, p.Namespace, p.Name, why)}
		}
	}
	return got
}

// netpolProbe is ProbeOutcome for the NetworkPolicy specs. In ambient-l7
// the client's request ends at the waypoint, whose Envoy opens its own
// HBONE connection to echo: when the policy refuses that connection the
// client gets no timeout but the waypoint's local reply, a 503 with
// `server: istio-envoy` and Envoy's "upstream connect error" body. That is
// the policy blocking the new path, as a timeout is in ambient-l4, and it
// is recorded with the waypoint's own words (waypointUpstreamRefusal).
func netpolProbe(ctx context.Context, r *spec.Run, c probe.Client, url string) (verdict.Measurement, error) {
	res, err := scenario.Probe(ctx, r, c, url)
	if err != nil {
		return verdict.Measurement{}, err
	}
	if r.Mode == mode.AmbientL7 {
		if why, ok := waypointUpstreamRefusal(res); ok {
			return verdict.Measurement{Outcome: probe.Blocked, Detail: why}, nil
		}
	}
	return verdict.Measurement{Outcome: res.Outcome, Detail: res.Detail}, nil
}

// waypointUpstreamRefusal says whether a probe's answer is a waypoint's
// local reply for an upstream it could not connect to: 503, `server:
// istio-envoy`, a body starting with Envoy's "upstream connect error"
// (source/common/router/router.cc's local reply). A 503 from echo itself,
// or one without those marks, is not.
func waypointUpstreamRefusal(res probe.Result) (string, bool) {
	body := strings.TrimSpace(res.Body)
	if res.Status != 503 || res.Header("server") != "istio-envoy" || !strings.HasPrefix(body, "upstream connect error") {
		return "", false
	}
	if len(body) > 240 {
		body = body[:240]
	}
	return fmt.Sprintf("the waypoint answered 503 (server: istio-envoy): %q: its new connection to echo was refused", body), true
}
