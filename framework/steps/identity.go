package steps

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/proxycert"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Identity is what was found of a workload's mesh certificate.
type Identity struct {
	Want       string // spiffe://cluster.local/ns/<ns>/sa/default
	Found      bool   // the proxy's dump names Want
	Issuer     string // istio-proxy or ztunnel
	RootShared bool   // every meshed namespace of the run holds the same root
	Detail     string
}

// Measured turns the findings into the claim's outcome.
func (i Identity) Measured() verdict.Measured {
	out := "not verified"
	if i.Found && i.RootShared {
		out = "verified"
	}
	return verdict.Measured{Outcome: out, Detail: i.Detail}
}

// WorkloadIdentity reads echo's certificate from the proxy that holds it and
// decodes it (framework/proxycert): the sidecar's Envoy /config_dump (its SDS
// secrets "default" and "ROOTCA") or, in ambient, the /config_dump of the
// ztunnel on echo's node (its "certificates" list). The identity counts only
// when the proxy can present it (ztunnel: Available, a chain whose leaf
// carries the SPIFFE URI); the root counts when that entry trusts the very
// certificate istiod published in the namespace (ConfigMap
// istio-ca-root-cert), and every meshed namespace of the run holds the same.
func WorkloadIdentity(ctx context.Context, r *spec.Run) (Identity, error) {
	m, err := Of(r)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Want: fmt.Sprintf("spiffe://cluster.local/ns/%s/sa/default", r.Namespace())}
	echo, err := m.K.OneReadyPod(ctx, r.Namespace(), fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil {
		return id, err
	}
	ns, pod := r.Namespace(), echo.Name
	id.Issuer = "istio-proxy"
	parse := proxycert.ParseEnvoy
	if r.Mode.Ambient() {
		zt, err := m.K.Client.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel", FieldSelector: "spec.nodeName=" + echo.Spec.NodeName})
		if err != nil || len(zt.Items) == 0 {
			return id, fmt.Errorf("no ztunnel pod on node %s: %v", echo.Spec.NodeName, err)
		}
		ns, pod, id.Issuer, parse = "istio-system", zt.Items[0].Name, "ztunnel", proxycert.ParseZtunnel
	}
	const path = "/config_dump"
	dump, err := m.K.AdminGet(ctx, ns, pod, path)
	if err != nil {
		return id, err
	}
	if err := r.SaveRaw("identity-"+pod, []byte(dump), map[string]string{"pod": ns + "/" + pod, "path": path}); err != nil {
		return id, err
	}
	held, err := parse([]byte(dump))
	if err != nil {
		return id, fmt.Errorf("%s/%s %s: %w", ns, pod, path, err)
	}

	// The namespaces' roots, grouped by the certificates they hold (DER), not
	// by the text of the PEM.
	roots := map[string][]string{}
	var own []*x509.Certificate
	for _, mm := range r.Env.Config.Modes {
		if !mm.Meshed() {
			continue
		}
		cm, err := m.K.Client.CoreV1().ConfigMaps(mm.Namespace()).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		if err != nil {
			return id, fmt.Errorf("root CA of %s: %w", mm.Namespace(), err)
		}
		certs, err := proxycert.ParsePEM([]byte(cm.Data["root-cert.pem"]))
		if err != nil {
			return id, fmt.Errorf("ConfigMap %s/istio-ca-root-cert root-cert.pem: %w", mm.Namespace(), err)
		}
		if mm.Namespace() == r.Namespace() {
			own = certs
		}
		key := derKey(certs)
		roots[key] = append(roots[key], string(mm))
	}
	if own == nil {
		return id, fmt.Errorf("mode %s is not among the run's meshed modes %v; no root CA to compare", r.Mode, r.Env.Config.Modes)
	}
	c := held.Check(id.Want, own)
	id.Found = c.Found
	id.RootShared = len(roots) == 1 && c.RootsMatch
	id.Detail = fmt.Sprintf("issuer %s (%s/%s %s): %s; %d distinct root(s) across meshed namespaces %v",
		id.Issuer, ns, pod, path, c.Detail, len(roots), roots2modes(roots))
	return id, nil
}

// derKey identifies a set of certificates by their DER bytes, in order.
func derKey(certs []*x509.Certificate) string {
	var b strings.Builder
	for _, c := range certs {
		b.Write(c.Raw)
	}
	return b.String()
}

func roots2modes(roots map[string][]string) [][]string {
	var out [][]string
	for _, v := range roots {
		out = append(out, v)
	}
	return out
}
