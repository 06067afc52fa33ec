package istiod

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	securityapi "istio.io/api/security/v1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// The API server's words when a webhook denies (staging/.../admission/
// plugin/webhook/errors: "admission webhook %q denied the request: %s"),
// and when it cannot call one.
func TestIsIstioDenial(t *testing.T) {
	denied := errors.New(`apply VirtualService meshclaims-sidecar/order-retries-broken: admission webhook "validation.istio.io" denied the request: configuration is invalid: attempts cannot be negative`)
	rev := errors.New(`admission webhook "rev.validation.istio.io" denied the request: configuration is invalid: x`)
	for _, err := range []error{denied, rev} {
		if !IsIstioDenial(err) {
			t.Errorf("not seen as istiod's denial: %v", err)
		}
	}
	for _, err := range []error{
		nil,
		errors.New(`Internal error occurred: failed calling webhook "validation.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/validate?timeout=10s": dial tcp 10.96.0.20:443: connect: connection refused`),
		errors.New(`VirtualService.networking.istio.io "x" is invalid: spec.http[0].retries.attempts: Invalid value: "string": spec.http[0].retries.attempts in body must be of type integer`),
		errors.New(`admission webhook "validation.gateway.networking.k8s.io" denied the request: x`),
	} {
		if IsIstioDenial(err) {
			t.Errorf("taken for istiod's denial: %v", err)
		}
	}
}

// istioTestdata reads a file of Istio's injector tests (pkg/kube/inject/
// testdata/inject) from the istio.io/istio module the Makefile downloads.
func istioTestdata(t *testing.T, name string) []byte {
	t.Helper()
	dir := os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if dir == "" {
		if os.Getenv(apiserver.EnvRequire) == "1" {
			t.Fatal("MESHCLAIMS_ISTIO_CHARTS is not set: the istio.io/istio module directory")
		}
		t.Skip("MESHCLAIMS_ISTIO_CHARTS not set (the istio.io/istio module directory)")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "pkg", "kube", "inject", "testdata", "inject", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func upstreamPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	raw := istioTestdata(t, name)
	var pod corev1.Pod
	if err := yaml.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Kind == "Deployment" {
		var d appsv1.Deployment
		if err := yaml.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		pod = corev1.Pod{ObjectMeta: d.Spec.Template.ObjectMeta, Spec: d.Spec.Template.Spec}
		pod.Name = d.Name
	}
	return &pod
}

// FindSidecar on pods as Istio's own injector tests record them: native
// (init container, restartPolicy Always), opted out of native (a regular
// container), and with a proxy.istio.io/config whose proxyMetadata becomes
// the container's environment.
func TestFindSidecarOnIstioInjectorOutput(t *testing.T) {
	s, ok, err := FindSidecar(upstreamPod(t, "native-sidecar.yaml.injected"))
	if err != nil || !ok || !s.Native {
		t.Fatalf("native-sidecar: ok %v native %v err %v", ok, s.Native, err)
	}
	if s.ProxyConfig == nil {
		t.Errorf("native-sidecar: no PROXY_CONFIG parsed")
	}
	s, ok, err = FindSidecar(upstreamPod(t, "native-sidecar-opt-out.yaml.injected"))
	if err != nil || !ok || s.Native {
		t.Fatalf("native-sidecar-opt-out: ok %v native %v err %v, want a regular container", ok, s.Native, err)
	}
	s, ok, err = FindSidecar(upstreamPod(t, "traffic-annotations.yaml.injected"))
	if err != nil || !ok {
		t.Fatalf("traffic-annotations: ok %v err %v", ok, err)
	}
	if s.Env["FOO"] != "bar" {
		t.Errorf("traffic-annotations: proxyMetadata FOO not in the environment: %v", s.Env)
	}
	if _, set, _ := s.TerminationDrain(); set {
		t.Errorf("traffic-annotations sets no terminationDrainDuration, yet one was read")
	}
	// Negative control: the pod before injection has no sidecar.
	before := upstreamPod(t, "native-sidecar.yaml")
	if _, ok, err := FindSidecar(before); ok || err != nil {
		t.Errorf("uninjected pod: ok %v err %v", ok, err)
	}
}

func TestTerminationDrain(t *testing.T) {
	s := Sidecar{ProxyConfig: map[string]any{"terminationDrainDuration": "30s"}}
	if d, ok, err := s.TerminationDrain(); d != 30*time.Second || !ok || err != nil {
		t.Errorf("30s read as %v %v %v", d, ok, err)
	}
	s.ProxyConfig["terminationDrainDuration"] = 30
	if _, _, err := s.TerminationDrain(); err == nil {
		t.Errorf("a number accepted as a duration")
	}
}

// testCA is a root and a leaf signer for CheckIssued.
func testCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"cluster.local"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func signCSR(t *testing.T, root *x509.Certificate, key *ecdsa.PrivateKey, csrPEM []byte, id string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(csrPEM)
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(id)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), URIs: []*url.URL{u},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, root, csr.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func TestCSRAndCheckIssued(t *testing.T) {
	id := SPIFFEID("cluster.local", "meshclaims-sidecar", "good")
	if id != "spiffe://cluster.local/ns/meshclaims-sidecar/sa/good" {
		t.Fatalf("SPIFFEID = %s", id)
	}
	csrPEM, err := CSR(id)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(csrPEM)
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || len(csr.URIs) != 1 || csr.URIs[0].String() != id || csr.CheckSignature() != nil {
		t.Fatalf("CSR: %v %v", csr, err)
	}
	root, key := testCA(t)
	roots := x509.NewCertPool()
	roots.AddCert(root)
	leaf := signCSR(t, root, key, csrPEM, id)
	if err := CheckIssued([]*x509.Certificate{leaf, root}, id, roots); err != nil {
		t.Fatalf("good chain refused: %v", err)
	}
	// Negative controls: another identity, another root.
	other := signCSR(t, root, key, csrPEM, SPIFFEID("cluster.local", "meshclaims-sidecar", "bad"))
	if err := CheckIssued([]*x509.Certificate{other, root}, id, roots); err == nil || !strings.Contains(err.Error(), "want exactly") {
		t.Errorf("certificate of sa bad accepted for sa good: %v", err)
	}
	stranger, _ := testCA(t)
	strangers := x509.NewCertPool()
	strangers.AddCert(stranger)
	if err := CheckIssued([]*x509.Certificate{leaf, root}, id, strangers); err == nil || !strings.Contains(err.Error(), "does not chain") {
		t.Errorf("chain accepted against an unrelated root: %v", err)
	}
	if _, err := RootPool("not pem"); err == nil {
		t.Errorf("RootPool accepted garbage")
	}
}

type fakeDryRun struct{ err error }

func (f fakeDryRun) DryRun(context.Context, ...client.Object) error { return f.err }

// ExpectDenied passes only on istiod's own denial for the stated reason.
func TestExpectDenied(t *testing.T) {
	vs, want := BrokenVirtualService(fixtures.Target{Namespace: "meshclaims-sidecar", Run: "r1"})
	if vs.(*networkingv1.VirtualService).Spec.Http[0].Retries.Attempts != -3 {
		t.Fatalf("broken VirtualService is not broken: %+v", vs)
	}
	ap, _ := BrokenAuthorizationPolicy(fixtures.Target{Namespace: "meshclaims-sidecar", Run: "r1"})
	if p := ap.(*securityv1.AuthorizationPolicy); p.Spec.Action != securityapi.AuthorizationPolicy_DENY || p.Spec.Rules != nil {
		t.Fatalf("broken AuthorizationPolicy is not broken: %+v", p)
	}
	denied := fmt.Errorf(`apply: admission webhook "validation.istio.io" denied the request: configuration is invalid: %s`, want)
	if err := ExpectDenied(context.Background(), fakeDryRun{denied}, vs, want); err != nil {
		t.Errorf("istiod's denial not accepted: %v", err)
	}
	for name, err := range map[string]error{
		"admitted":           nil,
		"schema, not istiod": errors.New(`VirtualService.networking.istio.io "x" is invalid: spec.http[0].retries.attempts: Invalid value`),
		"another reason":     errors.New(`admission webhook "validation.istio.io" denied the request: configuration is invalid: host must be a FQDN`),
	} {
		if ExpectDenied(context.Background(), fakeDryRun{err}, vs, want) == nil {
			t.Errorf("%s: ExpectDenied passed", name)
		}
	}
}
