package proxycert_test

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/proxycert"
	pct "github.com/meshclaims/meshclaims/framework/proxycert/proxycerttest"
)

const (
	want  = "spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/default"
	other = "spiffe://cluster.local/ns/meshclaims-ambient-l4/sa/good"
)

func TestZtunnelDumpAsZtunnelWritesIt(t *testing.T) {
	ca, otherCA := pct.NewPKI(t), pct.NewPKI(t)
	leaf := ca.Leaf(t, want)
	roots := []*x509.Certificate{ca.Root}

	// ztunnel's dump, sorted by identity, with the states dump_certs writes.
	good := pct.ZtunnelDump(t,
		pct.ZtunnelEntry("spiffe://cluster.local/ns/istio-system/sa/ztunnel", "Initializing", nil, nil),
		pct.ZtunnelEntry(want, proxycert.ZtunnelAvailable, []*x509.Certificate{leaf}, roots),
	)
	if !bytes.Contains(good, []byte(`"certChain": [`)) || bytes.Contains(good, []byte("BEGIN CERTIFICATE")) {
		t.Fatalf("fixture is not in ztunnel's shape (camelCase, base64 PEM):\n%s", good)
	}
	d, err := proxycert.ParseZtunnel(good)
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
		{"wrong identity", pct.ZtunnelDump(t, pct.ZtunnelEntry(other, proxycert.ZtunnelAvailable, []*x509.Certificate{ca.Leaf(t, other)}, roots)), false, false, "no entry for it"},
		{"initializing", pct.ZtunnelDump(t, pct.ZtunnelEntry(want, "Initializing", nil, nil)), false, false, `state "Initializing"`},
		{"unavailable", pct.ZtunnelDump(t, pct.ZtunnelEntry(want, "Unavailable: the identity is no longer needed", nil, nil)), false, false, "Unavailable"},
		{"available, empty chain", pct.ZtunnelDump(t, pct.ZtunnelEntry(want, proxycert.ZtunnelAvailable, nil, roots)), false, false, "empty certificate chain"},
		{"entry named for want, leaf for another", pct.ZtunnelDump(t, pct.ZtunnelEntry(want, proxycert.ZtunnelAvailable, []*x509.Certificate{ca.Leaf(t, other)}, roots)), false, false, "URI SANs"},
		{"other root", pct.ZtunnelDump(t, pct.ZtunnelEntry(want, proxycert.ZtunnelAvailable, []*x509.Certificate{leaf}, []*x509.Certificate{otherCA.Root})), true, false, "NOT the namespace's root"},
	}
	for _, c := range cases {
		d, err := proxycert.ParseZtunnel(c.dump)
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
	ca := pct.NewPKI(t)
	leaf := ca.Leaf(t, want)
	rawPEM := pct.ZtunnelEntry(want, proxycert.ZtunnelAvailable, []*x509.Certificate{leaf}, []*x509.Certificate{ca.Root})
	rawPEM["certChain"].([]any)[0].(map[string]any)["pem"] = pct.ZtunnelPEM(leaf)
	hexSerial := pct.ZtunnelEntry(want, proxycert.ZtunnelAvailable, []*x509.Certificate{leaf}, []*x509.Certificate{ca.Root})
	hexSerial["rootCerts"].([]any)[0].(map[string]any)["serialNumber"] = fmt.Sprintf("%x", ca.Root.SerialNumber)
	snake := fmt.Sprintf(`{"certificates":[{"identity":%q,"state":"Available","cert_chain":[{"pem":%q}],"root_certs":[]}]}`, want, pct.ZtunnelPEM(leaf))

	for _, c := range []struct {
		name, dump, err string
	}{
		{"raw PEM", string(pct.ZtunnelDump(t, rawPEM)), "certChain[0].pem: not base64"},
		{"hex serial", string(pct.ZtunnelDump(t, hexSerial)), "rootCerts[0].serialNumber"},
		{"envoy dump", `{"configs":[]}`, `no "certificates" section`},
		{"not JSON", "<html>", "ztunnel config_dump"},
	} {
		if _, err := proxycert.ParseZtunnel([]byte(c.dump)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
	// snake_case keys parse (JSON ignores them) but yield no usable chain.
	d, err := proxycert.ParseZtunnel([]byte(snake))
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Check(want, []*x509.Certificate{ca.Root}); c.Found {
		t.Errorf("snake_case dump taken for ztunnel's: %+v", c)
	}
}

func TestEnvoySecretsAsEnvoyWritesThem(t *testing.T) {
	ca, otherCA := pct.NewPKI(t), pct.NewPKI(t)
	leaf := ca.Leaf(t, want)
	roots := []*x509.Certificate{ca.Root}
	good := pct.EnvoyDump(t, []map[string]any{
		pct.EnvoySecret("default", pct.PEM(leaf, ca.Root), nil),
		pct.EnvoySecret("ROOTCA", nil, pct.PEM(ca.Root)),
	}, nil)
	if bytes.Contains(good, []byte("BEGIN CERTIFICATE")) {
		t.Fatal("fixture carries raw PEM; Envoy writes inline_bytes base64")
	}
	d, err := proxycert.ParseEnvoy(good)
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
		{"wrong identity", pct.EnvoyDump(t, []map[string]any{pct.EnvoySecret("default", pct.PEM(ca.Leaf(t, other)), nil), pct.EnvoySecret("ROOTCA", nil, pct.PEM(ca.Root))}, nil), false, false},
		{"only warming", pct.EnvoyDump(t, []map[string]any{pct.EnvoySecret("ROOTCA", nil, pct.PEM(ca.Root))}, []map[string]any{pct.EnvoySecret("default", pct.PEM(leaf), nil)}), false, false},
		{"empty chain", pct.EnvoyDump(t, []map[string]any{pct.EnvoySecret("default", []byte{}, nil), pct.EnvoySecret("ROOTCA", nil, pct.PEM(ca.Root))}, nil), false, false},
		{"other root", pct.EnvoyDump(t, []map[string]any{pct.EnvoySecret("default", pct.PEM(leaf), nil), pct.EnvoySecret("ROOTCA", nil, pct.PEM(otherCA.Root))}, nil), true, false},
		{"no ROOTCA", pct.EnvoyDump(t, []map[string]any{pct.EnvoySecret("default", pct.PEM(leaf), nil)}, nil), true, false},
	}
	for _, c := range cases {
		d, err := proxycert.ParseEnvoy(c.dump)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := d.Check(want, roots); got.Found != c.found || got.RootsMatch != c.root {
			t.Errorf("%s: %+v, want found=%v roots=%v", c.name, got, c.found, c.root)
		}
	}

	// The identity's text anywhere else in the dump (a cluster name, a
	// log line) is not an identity.
	mention := pct.EnvoyDump(t, []map[string]any{pct.EnvoySecret("ROOTCA", nil, pct.PEM(ca.Root)), pct.EnvoySecret(want, nil, nil)}, nil)
	if d, err := proxycert.ParseEnvoy(mention); err != nil || d.Check(want, roots).Found {
		t.Errorf("a secret merely named for the identity counted: %v %+v", err, d.Check(want, roots))
	}
	if _, err := proxycert.ParseEnvoy(pct.ZtunnelDump(t)); err == nil || !strings.Contains(err.Error(), proxycert.SecretsConfigDumpType) {
		t.Errorf("ztunnel's dump read as Envoy's: %v", err)
	}
}

func TestParsePEM(t *testing.T) {
	ca, ca2 := pct.NewPKI(t), pct.NewPKI(t)
	got, err := proxycert.ParsePEM(pct.PEM(ca.Root, ca2.Root))
	if err != nil || len(got) != 2 || !got[0].Equal(ca.Root) || !got[1].Equal(ca2.Root) {
		t.Fatalf("bundle of two roots: %v %v", got, err)
	}
	if _, err := proxycert.ParsePEM([]byte("root-cert.pem missing")); err == nil || !strings.Contains(err.Error(), "no PEM CERTIFICATE block") {
		t.Errorf("garbage accepted: %v", err)
	}
}
