package mtls

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/proxycert"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// identity is what was found of a workload's mesh certificate.
type identity struct {
	Want       string // spiffe://cluster.local/ns/<ns>/sa/default
	Found      bool   // the proxy's dump names Want
	Issuer     string // istio-proxy or ztunnel
	RootShared bool   // every meshed namespace of the run holds the same root
	Detail     string
}

// Measurement turns the findings into the claim's outcome.
func (i identity) Measurement() verdict.Measurement {
	out := "not verified"
	if i.Found && i.RootShared {
		out = "verified"
	}
	return verdict.Measurement{Outcome: out, Detail: i.Detail}
}

// workloadIdentity reads echo's certificate from the proxy that holds it and
// decodes it (framework/proxycert): the sidecar's Envoy /config_dump (its SDS
// secrets "default" and "ROOTCA") or, in ambient, the /config_dump of the
// ztunnel on echo's node (its "certificates" list). The identity counts only
// when the proxy can present it (ztunnel: Available, a chain whose leaf
// carries the SPIFFE URI); the root counts when that entry trusts the very
// certificate istiod published in the namespace (ConfigMap
// istio-ca-root-cert), and every meshed namespace of the run holds the same.
func workloadIdentity(ctx context.Context, r *spec.Run) (identity, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return identity{}, err
	}
	id := identity{Want: fmt.Sprintf("spiffe://cluster.local/ns/%s/sa/default", r.Namespace())}
	echo, err := m.Kube.OneReadyPod(ctx, r.Namespace(), fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil {
		return id, err
	}
	ns, pod := r.Namespace(), echo.Name
	id.Issuer = "istio-proxy"
	parse := proxycert.ParseEnvoy
	if r.Mode.Ambient() {
		zt, err := m.Kube.Client.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel", FieldSelector: "spec.nodeName=" + echo.Spec.NodeName})
		if err != nil || len(zt.Items) == 0 {
			return id, fmt.Errorf("no ztunnel pod on node %s: %v", echo.Spec.NodeName, err)
		}
		ns, pod, id.Issuer, parse = "istio-system", zt.Items[0].Name, "ztunnel", proxycert.ParseZtunnel
	}
	const path = "/config_dump"
	dump, err := m.Kube.AdminGet(ctx, ns, pod, path)
	if err != nil {
		return id, err
	}
	if err := r.SaveRaw("identity-"+pod, []byte(dump), map[string]string{"pod": ns + "/" + pod, "path": path}); err != nil {
		return id, err
	}
	var roots []namespaceRoot
	for _, mm := range r.Env.Config.Modes {
		if !mm.Meshed() {
			continue
		}
		cm, err := m.Kube.Client.CoreV1().ConfigMaps(mm.Namespace()).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		if err != nil {
			return id, fmt.Errorf("root CA of %s: %w", mm.Namespace(), err)
		}
		roots = append(roots, namespaceRoot{Mode: mm, PEM: cm.Data["root-cert.pem"]})
	}
	id, err = judgeIdentity(id, r.Mode, []byte(dump), parse, roots)
	if err != nil {
		return id, fmt.Errorf("%s/%s %s: %w", ns, pod, path, err)
	}
	id.Detail = fmt.Sprintf("issuer %s (%s/%s %s): %s", id.Issuer, ns, pod, path, id.Detail)
	return id, nil
}

// namespaceRoot is the root-cert.pem istiod published in a mode's namespace
// (ConfigMap istio-ca-root-cert).
type namespaceRoot struct {
	Mode mode.Mode
	PEM  string
}

// judgeIdentity decides from a proxy's dump whether it holds id.Want usably
// and trusts the root of mode own, and whether every meshed namespace of the
// run holds the same root (compared as certificates, not as PEM text).
func judgeIdentity(id identity, own mode.Mode, dump []byte, parse func([]byte) (proxycert.Dump, error), roots []namespaceRoot) (identity, error) {
	held, err := parse(dump)
	if err != nil {
		return id, err
	}
	groups := map[string][]string{}
	var keys []string
	var ownRoots []*x509.Certificate
	for _, nr := range roots {
		certs, err := proxycert.ParsePEM([]byte(nr.PEM))
		if err != nil {
			return id, fmt.Errorf("ConfigMap %s/istio-ca-root-cert root-cert.pem: %w", nr.Mode.Namespace(), err)
		}
		if nr.Mode == own {
			ownRoots = certs
		}
		key := derKey(certs)
		if _, seen := groups[key]; !seen {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], string(nr.Mode))
	}
	if ownRoots == nil {
		return id, fmt.Errorf("no root CA of mode %s among the meshed namespaces' roots", own)
	}
	var modes [][]string
	for _, k := range keys {
		modes = append(modes, groups[k])
	}
	c := held.Check(id.Want, ownRoots)
	id.Found = c.Found
	id.RootShared = len(groups) == 1 && c.RootsMatch
	id.Detail = fmt.Sprintf("%s; %d distinct root(s) across meshed namespaces %v", c.Detail, len(groups), modes)
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
