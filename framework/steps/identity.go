package steps

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
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

// WorkloadIdentity reads echo's certificate from the proxy that holds it:
// the sidecar's Envoy admin (/certs) or, in ambient, the ztunnel on echo's
// node (/config_dump on its admin port), and compares the root CA that
// istiod published in every meshed namespace (ConfigMap istio-ca-root-cert).
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
	path := "/certs"
	id.Issuer = "istio-proxy"
	if r.Mode.Ambient() {
		zt, err := m.K.Client.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel", FieldSelector: "spec.nodeName=" + echo.Spec.NodeName})
		if err != nil || len(zt.Items) == 0 {
			return id, fmt.Errorf("no ztunnel pod on node %s: %v", echo.Spec.NodeName, err)
		}
		ns, pod, path, id.Issuer = "istio-system", zt.Items[0].Name, "/config_dump", "ztunnel"
	}
	dump, err := m.K.AdminGet(ctx, ns, pod, path)
	if err != nil {
		return id, err
	}
	if err := r.SaveRaw("identity-"+pod, []byte(dump), map[string]string{"pod": ns + "/" + pod, "path": path}); err != nil {
		return id, err
	}
	id.Found = strings.Contains(dump, id.Want)

	roots := map[string][]string{}
	for _, mm := range r.Env.Config.Modes {
		if !mm.Meshed() {
			continue
		}
		cm, err := m.K.Client.CoreV1().ConfigMaps(mm.Namespace()).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		if err != nil {
			return id, fmt.Errorf("root CA of %s: %w", mm.Namespace(), err)
		}
		roots[cm.Data["root-cert.pem"]] = append(roots[cm.Data["root-cert.pem"]], string(mm))
	}
	id.RootShared = len(roots) == 1
	// The workload's own chain must end in that root: the proxy's dump names
	// the root by serial number (Envoy /certs) or carries its PEM (ztunnel).
	for root := range roots {
		if !rootInDump(root, dump) {
			id.RootShared = false
			id.Detail = "the proxy's dump does not show the namespace's root CA; "
		}
	}
	id.Detail += fmt.Sprintf("issuer %s (%s/%s %s): %s %s; %d distinct root(s) across meshed namespaces %v",
		id.Issuer, ns, pod, path, id.Want, map[bool]string{true: "found", false: "NOT found"}[id.Found], len(roots), roots2modes(roots))
	return id, nil
}

func roots2modes(roots map[string][]string) [][]string {
	var out [][]string
	for _, v := range roots {
		out = append(out, v)
	}
	return out
}

// rootInDump reports whether a proxy's certificate dump refers to the root
// CA given as PEM: by its serial number (hex, with or without colons) or by
// the PEM body itself.
func rootInDump(rootPEM, dump string) bool {
	block, _ := pem.Decode([]byte(rootPEM))
	if block == nil {
		return false
	}
	body := strings.Join(strings.Fields(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(rootPEM), "-----BEGIN CERTIFICATE-----"), "-----END CERTIFICATE-----"))), "")
	flat := strings.Join(strings.Fields(strings.ReplaceAll(dump, `\n`, "")), "")
	if len(body) > 64 && strings.Contains(flat, body[:64]) {
		return true
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	hexSerial := fmt.Sprintf("%x", cert.SerialNumber)
	lower := strings.ToLower(dump)
	if strings.Contains(lower, hexSerial) {
		return true
	}
	var pairs []string
	b := cert.SerialNumber.Bytes()
	for _, x := range b {
		pairs = append(pairs, fmt.Sprintf("%02x", x))
	}
	return len(pairs) > 0 && strings.Contains(lower, strings.Join(pairs, ":"))
}
