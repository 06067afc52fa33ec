// Package proxycerttest makes proxy certificate dumps for tests, in the
// shapes the proxies really write them: certificates are created here
// (crypto/x509, a CA like istiod's self-signed one) and encoded as ztunnel
// 1.30's admin serializer (src/admin.rs) and Envoy's proto JSON
// (SecretsConfigDump of /config_dump) encode them. Tests of anything that
// reads those dumps use it instead of hand-written JSON.
package proxycerttest

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
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/proxycert"
)

// PKI is a root CA as istiod's self-signed CA makes it (O=cluster.local)
// and the leaves it signs (no subject, one SPIFFE URI SAN).
type PKI struct {
	Root *x509.Certificate
	key  *ecdsa.PrivateKey
}

func NewPKI(t testing.TB) PKI {
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
	return PKI{Root: root, key: key}
}

// randSerial is a 128-bit serial like Istio's CA uses: large enough that its
// decimal and hex forms differ in every digit position that matters.
func randSerial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n.Add(n, new(big.Int).Lsh(big.NewInt(1), 120))
}

func (p PKI) Leaf(t testing.TB, spiffe string) *x509.Certificate {
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.Root, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ZtunnelPEM is ztunnel's der_to_pem (src/tls/certificate.rs): 60 base64
// characters a line, each line and the END line ending in "\n".
func ZtunnelPEM(c *x509.Certificate) string {
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

// ZtunnelCertDump is dump_cert (src/admin.rs): PEM base64-encoded again,
// serial in decimal (x509-parser's BigUint), times RFC 3339 to the second.
func ZtunnelCertDump(c *x509.Certificate) map[string]any {
	return map[string]any{
		"pem":            base64.StdEncoding.EncodeToString([]byte(ZtunnelPEM(c))),
		"serialNumber":   c.SerialNumber.String(),
		"validFrom":      c.NotBefore.UTC().Format(time.RFC3339),
		"expirationTime": c.NotAfter.UTC().Format(time.RFC3339),
	}
}

// ZtunnelEntry is one CertsDump (src/admin.rs): an Available entry carries
// its chain (leaf and intermediates) and roots; Initializing and
// "Unavailable: ..." entries carry empty lists.
func ZtunnelEntry(identity, state string, chain, roots []*x509.Certificate) map[string]any {
	e := map[string]any{"identity": identity, "state": state, "certChain": []any{}, "rootCerts": []any{}}
	for _, c := range chain {
		e["certChain"] = append(e["certChain"].([]any), ZtunnelCertDump(c))
	}
	for _, c := range roots {
		e["rootCerts"] = append(e["rootCerts"].([]any), ZtunnelCertDump(c))
	}
	return e
}

// ZtunnelDump is handle_config_dump's body: the dump turned into a
// serde_json Value (a BTreeMap: keys sorted, as Go's maps marshal) and
// written by to_string_pretty (two-space indent, no HTML escaping). The
// proxy-state sections are present and empty; the parser must skip them.
func ZtunnelDump(t testing.TB, entries ...map[string]any) []byte {
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

// EnvoySecret is one entry of SecretsConfigDump.dynamic_active_secrets as
// Envoy writes it for istio-agent's SDS secrets (istioctl's testdata
// secret/istio/config_dump.json has the same shape): bytes fields are
// base64 in proto JSON, and the private key is redacted.
func EnvoySecret(name string, chainPEM, trustedPEM []byte) map[string]any {
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

// PEM encodes certificates as Go's pem package does (istio-agent, istiod).
func PEM(cs ...*x509.Certificate) []byte {
	var b []byte
	for _, c := range cs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return b
}

// EnvoyDump is an Envoy /config_dump whose configs hold a bootstrap, a
// clusters section and the SecretsConfigDump with the given active and
// warming secrets.
func EnvoyDump(t testing.TB, active, warming []map[string]any) []byte {
	t.Helper()
	secrets := map[string]any{"@type": proxycert.SecretsConfigDumpType, "dynamic_active_secrets": active}
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
