package proxycert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"
)

// pki is a root CA as istiod's self-signed CA makes it (O=cluster.local)
// and the leaves it signs (no subject, one SPIFFE URI SAN).
type pki struct {
	root *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newPKI(t *testing.T) pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: randSerial(t), Subject: pkix.Name{Organization: []string{"cluster.local"}},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	root, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pki{root: root, key: key}
}

// randSerial is a 128-bit serial like Istio's CA uses: large enough that its
// decimal and hex forms differ in every digit position that matters.
func randSerial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n.Add(n, new(big.Int).Lsh(big.NewInt(1), 120))
}

func (p pki) leaf(t *testing.T, spiffe string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(spiffe)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: randSerial(t), URIs: []*url.URL{u},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.root, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ztunnelPEM is ztunnel's der_to_pem (src/tls/certificate.rs): 60 base64
// characters a line, each line and the END line ending in "\n".
func ztunnelPEM(c *x509.Certificate) string {
	b64 := base64.StdEncoding.EncodeToString(c.Raw)
	var s strings.Builder
	s.WriteString("-----BEGIN CERTIFICATE-----\n")
	for len(b64) > 60 {
		s.WriteString(b64[:60] + "\n")
		b64 = b64[60:]
	}
	s.WriteString(b64 + "\n-----END CERTIFICATE-----\n")
	return s.String()
}

// ztunnelCertDump is dump_cert (src/admin.rs): PEM base64-encoded again,
// serial in decimal (x509-parser's BigUint), times RFC 3339 to the second.
func ztunnelCertDump(c *x509.Certificate) map[string]any {
	return map[string]any{
		"pem":            base64.StdEncoding.EncodeToString([]byte(ztunnelPEM(c))),
		"serialNumber":   c.SerialNumber.String(),
		"validFrom":      c.NotBefore.UTC().Format(time.RFC3339),
		"expirationTime": c.NotAfter.UTC().Format(time.RFC3339),
	}
}

func ztunnelEntry(identity, state string, chain, roots []*x509.Certificate) map[string]any {
	e := map[string]any{"identity": identity, "state": state, "certChain": []any{}, "rootCerts": []any{}}
	for _, c := range chain {
		e["certChain"] = append(e["certChain"].([]any), ztunnelCertDump(c))
	}
	for _, c := range roots {
		e["rootCerts"] = append(e["rootCerts"].([]any), ztunnelCertDump(c))
	}
	return e
}

// ztunnelDump is handle_config_dump's body: the dump turned into a
// serde_json Value (a BTreeMap: keys sorted, as Go's maps marshal) and
// written by to_string_pretty (two-space indent, no HTML escaping). The
// proxy-state sections are present and empty; the parser must skip them.
func ztunnelDump(t *testing.T, entries ...map[string]any) []byte {
	t.Helper()
	certs := []any{}
	for _, e := range entries {
		certs = append(certs, e)
	}
	// ProxyStateSerialization (src/state.rs), LocalConfig (src/xds.rs) and
	// BuildInfo (src/version.rs) as empty or placeholder values; "config"
	// (ztunnel's whole Config) is left out.
	dump := map[string]any{
		"certificates":   certs,
		"policies":       []any{},
		"services":       []any{},
		"stagedServices": map[string]any{},
		"workloads":      []any{},
		"staticConfig":   map[string]any{"policies": []any{}, "services": []any{}, "workloads": []any{}},
		"version": map[string]any{"version": "1.30.2", "gitRevision": "unknown", "rustVersion": "unknown", "buildProfile": "release",
			"buildStatus": "Clean", "istioVersion": "1.30.2", "cryptoProvider": "aws-lc"},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(dump); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

const (
	want  = "spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/default"
	other = "spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/good"
)

func TestZtunnelDumpAsZtunnelWritesIt(t *testing.T) {
	ca, otherCA := newPKI(t), newPKI(t)
	leaf := ca.leaf(t, want)
	roots := []*x509.Certificate{ca.root}

	// ztunnel's dump, sorted by identity, with the states dump_certs writes.
	good := ztunnelDump(t,
		ztunnelEntry("spiffe://cluster.local/ns/istio-system/sa/ztunnel", "Initializing", nil, nil),
		ztunnelEntry(want, ZtunnelAvailable, []*x509.Certificate{leaf}, roots),
	)
	if !bytes.Contains(good, []byte(`"certChain": [`)) || bytes.Contains(good, []byte("BEGIN CERTIFICATE")) {
		t.Fatalf("fixture is not in ztunnel's shape (camelCase, base64 PEM):\n%s", good)
	}
	d, err := ParseZtunnel(good)
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Check(want, roots); !c.Found || !c.RootsMatch {
		t.Fatalf("Available identity with the namespace's root not verified: %+v", c)
	}

	cases := []struct {
		name        string
		dump        []byte
		found, root bool
		detail      string
	}{
		{"wrong identity", ztunnelDump(t, ztunnelEntry(other, ZtunnelAvailable, []*x509.Certificate{ca.leaf(t, other)}, roots)), false, false, "no entry for it"},
		{"initializing", ztunnelDump(t, ztunnelEntry(want, "Initializing", nil, nil)), false, false, `state "Initializing"`},
		{"unavailable", ztunnelDump(t, ztunnelEntry(want, "Unavailable: the identity is no longer needed", nil, nil)), false, false, "Unavailable"},
		{"available, empty chain", ztunnelDump(t, ztunnelEntry(want, ZtunnelAvailable, nil, roots)), false, false, "empty certificate chain"},
		{"entry named for want, leaf for another", ztunnelDump(t, ztunnelEntry(want, ZtunnelAvailable, []*x509.Certificate{ca.leaf(t, other)}, roots)), false, false, "URI SANs"},
		{"other root", ztunnelDump(t, ztunnelEntry(want, ZtunnelAvailable, []*x509.Certificate{leaf}, []*x509.Certificate{otherCA.root})), true, false, "NOT the namespace's root"},
	}
	for _, c := range cases {
		d, err := ParseZtunnel(c.dump)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := d.Check(want, roots)
		if got.Found != c.found || got.RootsMatch != c.root || !strings.Contains(got.Detail, c.detail) {
			t.Errorf("%s: %+v, want found=%v roots=%v detail containing %q", c.name, got, c.found, c.root, c.detail)
		}
	}
}

// Dumps in shapes ztunnel 1.30 does not write are errors naming the field,
// not silent misses: a raw PEM (older ztunnel), a hex serial, snake_case
// keys, another proxy's dump.
func TestZtunnelDumpInOtherShapesIsRefused(t *testing.T) {
	ca := newPKI(t)
	leaf := ca.leaf(t, want)
	rawPEM := ztunnelEntry(want, ZtunnelAvailable, []*x509.Certificate{leaf}, []*x509.Certificate{ca.root})
	rawPEM["certChain"].([]any)[0].(map[string]any)["pem"] = ztunnelPEM(leaf)
	hexSerial := ztunnelEntry(want, ZtunnelAvailable, []*x509.Certificate{leaf}, []*x509.Certificate{ca.root})
	hexSerial["rootCerts"].([]any)[0].(map[string]any)["serialNumber"] = fmt.Sprintf("%x", ca.root.SerialNumber)
	snake := fmt.Sprintf(`{"certificates":[{"identity":%q,"state":"Available","cert_chain":[{"pem":%q}],"root_certs":[]}]}`, want, ztunnelPEM(leaf))

	for _, c := range []struct {
		name, dump, err string
	}{
		{"raw PEM", string(ztunnelDump(t, rawPEM)), "certChain[0].pem: not base64"},
		{"hex serial", string(ztunnelDump(t, hexSerial)), "rootCerts[0].serialNumber"},
		{"envoy dump", `{"configs":[]}`, `no "certificates" section`},
		{"not JSON", "<html>", "ztunnel config_dump"},
	} {
		if _, err := ParseZtunnel([]byte(c.dump)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
	// snake_case keys parse (JSON ignores them) but yield no usable chain.
	d, err := ParseZtunnel([]byte(snake))
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Check(want, []*x509.Certificate{ca.root}); c.Found {
		t.Errorf("snake_case dump taken for ztunnel's: %+v", c)
	}
}

// envoySecret is one entry of SecretsConfigDump.dynamic_active_secrets as
// Envoy writes it for istio-agent's SDS secrets (istioctl's testdata
// secret/istio/config_dump.json has the same shape): bytes fields are
// base64 in proto JSON, and the private key is redacted.
func envoySecretJSON(name string, chainPEM, trustedPEM []byte) map[string]any {
	secret := map[string]any{"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", "name": name}
	if chainPEM != nil {
		secret["tls_certificate"] = map[string]any{
			"certificate_chain": map[string]any{"inline_bytes": chainPEM},
			"private_key":       map[string]any{"inline_bytes": []byte("[redacted]")},
		}
	}
	if trustedPEM != nil {
		secret["validation_context"] = map[string]any{"trusted_ca": map[string]any{"inline_bytes": trustedPEM}}
	}
	return map[string]any{"name": name, "version_info": "2026-12-01T07:30:00Z/1", "last_updated": "2026-12-01T07:30:00.123Z", "secret": secret}
}

func goPEM(cs ...*x509.Certificate) []byte {
	var b []byte
	for _, c := range cs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return b
}

func envoyDump(t *testing.T, active, warming []map[string]any) []byte {
	t.Helper()
	secrets := map[string]any{"@type": SecretsConfigDumpType, "dynamic_active_secrets": active}
	if warming != nil {
		secrets["dynamic_warming_secrets"] = warming
	}
	dump := map[string]any{"configs": []any{
		map[string]any{"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump", "bootstrap": map[string]any{"node": map[string]any{"id": "sidecar~10.244.0.7~echo-1.meshclaims-sidecar~meshclaims-sidecar.svc.cluster.local"}}},
		map[string]any{"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump", "version_info": "2026-12-01T07:30:00Z/4"},
		secrets,
	}}
	b, err := json.MarshalIndent(dump, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEnvoySecretsAsEnvoyWritesThem(t *testing.T) {
	ca, otherCA := newPKI(t), newPKI(t)
	leaf := ca.leaf(t, want)
	roots := []*x509.Certificate{ca.root}
	good := envoyDump(t, []map[string]any{
		envoySecretJSON("default", goPEM(leaf, ca.root), nil),
		envoySecretJSON("ROOTCA", nil, goPEM(ca.root)),
	}, nil)
	if bytes.Contains(good, []byte("BEGIN CERTIFICATE")) {
		t.Fatal("fixture carries raw PEM; Envoy writes inline_bytes base64")
	}
	d, err := ParseEnvoy(good)
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Check(want, roots); !c.Found || !c.RootsMatch {
		t.Fatalf("sidecar's SDS identity with the namespace's root not verified: %+v", c)
	}

	cases := []struct {
		name        string
		dump        []byte
		found, root bool
	}{
		{"wrong identity", envoyDump(t, []map[string]any{envoySecretJSON("default", goPEM(ca.leaf(t, other)), nil), envoySecretJSON("ROOTCA", nil, goPEM(ca.root))}, nil), false, false},
		{"only warming", envoyDump(t, []map[string]any{envoySecretJSON("ROOTCA", nil, goPEM(ca.root))}, []map[string]any{envoySecretJSON("default", goPEM(leaf), nil)}), false, false},
		{"empty chain", envoyDump(t, []map[string]any{envoySecretJSON("default", []byte{}, nil), envoySecretJSON("ROOTCA", nil, goPEM(ca.root))}, nil), false, false},
		{"other root", envoyDump(t, []map[string]any{envoySecretJSON("default", goPEM(leaf), nil), envoySecretJSON("ROOTCA", nil, goPEM(otherCA.root))}, nil), true, false},
		{"no ROOTCA", envoyDump(t, []map[string]any{envoySecretJSON("default", goPEM(leaf), nil)}, nil), true, false},
	}
	for _, c := range cases {
		d, err := ParseEnvoy(c.dump)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := d.Check(want, roots); got.Found != c.found || got.RootsMatch != c.root {
			t.Errorf("%s: %+v, want found=%v roots=%v", c.name, got, c.found, c.root)
		}
	}

	// The identity's text anywhere else in the dump (a cluster name, a
	// log line) is not an identity.
	mention := envoyDump(t, []map[string]any{envoySecretJSON("ROOTCA", nil, goPEM(ca.root)), envoySecretJSON(want, nil, nil)}, nil)
	if d, err := ParseEnvoy(mention); err != nil || d.Check(want, roots).Found {
		t.Errorf("a secret merely named for the identity counted: %v %+v", err, d.Check(want, roots))
	}
	if _, err := ParseEnvoy(ztunnelDump(t)); err == nil || !strings.Contains(err.Error(), SecretsConfigDumpType) {
		t.Errorf("ztunnel's dump read as Envoy's: %v", err)
	}
}

func TestParsePEM(t *testing.T) {
	ca, ca2 := newPKI(t), newPKI(t)
	got, err := ParsePEM(goPEM(ca.root, ca2.root))
	if err != nil || len(got) != 2 || !got[0].Equal(ca.root) || !got[1].Equal(ca2.root) {
		t.Fatalf("bundle of two roots: %v %v", got, err)
	}
	if _, err := ParsePEM([]byte("root-cert.pem missing")); err == nil || !strings.Contains(err.Error(), "no PEM CERTIFICATE block") {
		t.Errorf("garbage accepted: %v", err)
	}
}
