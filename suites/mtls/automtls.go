package mtls

import (
	"context"
	"fmt"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Auto mTLS is seen where it ends: the server's sidecar, when the inbound
// connection was mutual TLS, sets X-Forwarded-Client-Cert on the request it
// hands to the app, with the peer's SPIFFE identity as URI= (Envoy's
// forward_client_cert_details on Istio's inbound listener). fortio's debug
// page prints the request's headers, so echo shows what its sidecar was
// given. A plaintext hop carries no such header.
const headerXFCC = "X-Forwarded-Client-Cert"

// xfccURI returns the URI= element of the X-Forwarded-Client-Cert line in
// fortio's debug page body ("" when there is none).
func xfccURI(body string) string {
	for _, line := range strings.Split(body, "\n") {
		name, v, ok := strings.Cut(line, ": ")
		if !ok || !strings.EqualFold(name, headerXFCC) {
			continue
		}
		// Elements are ';'-separated key=value; several certs are ','-separated.
		for _, el := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' }) {
			if u, ok := strings.CutPrefix(el, "URI="); ok {
				return u
			}
		}
	}
	return ""
}

// judgeAutoMTLS: verified when echo's debug page shows the client's SPIFFE
// identity (spiffe://cluster.local/ns/<ns>/sa/default) forwarded by its
// sidecar; an answer with no such header, or another identity, is not.
func judgeAutoMTLS(res probe.Result, ns string) (verdict.Measurement, error) {
	if res.Outcome != "http-200" {
		return verdict.Measurement{}, fmt.Errorf("echo's debug page answered %s %s, not 200: nothing to read", res.Outcome, res.Detail)
	}
	want := fmt.Sprintf("spiffe://cluster.local/ns/%s/sa/default", ns)
	got := xfccURI(res.Body)
	out := "verified"
	if got != want {
		out = "not verified"
	}
	return verdict.Measurement{Outcome: out, Detail: fmt.Sprintf("%s URI=%q (client identity %s)", headerXFCC, got, want)}, nil
}

// echoDestinationRules names the DestinationRules in the run's namespace
// whose host is echo (short or full name): auto mTLS is claimed without one.
func echoDestinationRules(ctx context.Context, r *spec.Run) ([]string, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	var l networkingv1.DestinationRuleList
	if err := m.Applier.Client().List(ctx, &l, client.InNamespace(r.Namespace())); err != nil {
		return nil, err
	}
	var out []string
	for _, dr := range l.Items {
		h := dr.Spec.Host
		if h == fixtures.EchoName || strings.HasPrefix(h, fixtures.EchoName+"."+r.Namespace()) {
			out = append(out, dr.Name)
		}
	}
	return out, nil
}

// autoMTLS proves no DestinationRule targets echo (else unmet), then calls
// echo's debug page from the in-mesh client and judges the forwarded
// client certificate.
func autoMTLS(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	drs, err := echoDestinationRules(ctx, r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	if len(drs) > 0 {
		return verdict.Measurement{Unmet: fmt.Sprintf("no DestinationRule for echo: found %v", drs)}, nil
	}
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	res, err := probe.From(ctx, m.Kube, scenario.InMesh(r), scenario.EchoURL(r)+strings.TrimPrefix(fixtures.DebugPath, "/"), r.Env.Config.Timeouts.Probe)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := judgeAutoMTLS(res, r.Namespace())
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("auto mTLS: %s", got.Detail)
	return got, nil
}
