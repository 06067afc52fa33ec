package mtls

import (
	"crypto/x509"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/proxycert"
	pct "github.com/meshclaims/meshclaims/framework/proxycert/proxycerttest"
)

// The identity claim's judgement on dumps shaped as ztunnel and Envoy write
// them: verified when the proxy holds the namespace's identity and trusts
// the root every meshed namespace was given; not verified for a held
// identity that is not Available, for a root the proxy does not trust, or
// for namespaces given different roots (the same PEM written differently
// is the same root).
func TestJudgeIdentity(t *testing.T) {
	ca, other := pct.NewPKI(t), pct.NewPKI(t)
	l4, sc := mode.AmbientL4, mode.Sidecar
	want := func(m mode.Mode) identity {
		return identity{Want: "spiffe://cluster.local/ns/" + m.Namespace() + "/sa/default"}
	}
	root := string(pct.PEM(ca.Root))
	same := []namespaceRoot{{l4, root}, {sc, strings.ReplaceAll(root, "\n", "\r\n")}}
	split := []namespaceRoot{{l4, root}, {sc, string(pct.PEM(other.Root))}}
	ztunnel := func(state string, chain ...*x509.Certificate) []byte {
		return pct.ZtunnelDump(t,
			pct.ZtunnelEntry("spiffe://cluster.local/ns/istio-system/sa/ztunnel", proxycert.ZtunnelAvailable, []*x509.Certificate{ca.Leaf(t, "spiffe://cluster.local/ns/istio-system/sa/ztunnel")}, []*x509.Certificate{ca.Root}),
			pct.ZtunnelEntry(want(l4).Want, state, chain, []*x509.Certificate{ca.Root}))
	}
	envoy := func(trusted *x509.Certificate) []byte {
		return pct.EnvoyDump(t, []map[string]any{
			pct.EnvoySecret("default", pct.PEM(ca.Leaf(t, want(sc).Want), ca.Root), nil),
			pct.EnvoySecret("ROOTCA", nil, pct.PEM(trusted)),
		}, nil)
	}
	cases := []struct {
		name          string
		mode          mode.Mode
		dump          []byte
		parse         func([]byte) (proxycert.Dump, error)
		roots         []namespaceRoot
		found, shared bool
	}{
		{"ztunnel verified", l4, ztunnel(proxycert.ZtunnelAvailable, ca.Leaf(t, want(l4).Want)), proxycert.ParseZtunnel, same, true, true},
		{"ztunnel initializing", l4, ztunnel("Initializing"), proxycert.ParseZtunnel, same, false, false},
		{"ztunnel, namespaces given different roots", l4, ztunnel(proxycert.ZtunnelAvailable, ca.Leaf(t, want(l4).Want)), proxycert.ParseZtunnel, split, true, false},
		{"envoy verified", sc, envoy(ca.Root), proxycert.ParseEnvoy, same, true, true},
		{"envoy trusts another root", sc, envoy(other.Root), proxycert.ParseEnvoy, same, true, false},
	}
	for _, c := range cases {
		id, err := judgeIdentity(want(c.mode), c.mode, c.dump, c.parse, c.roots)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if id.Found != c.found || id.RootShared != c.shared {
			t.Errorf("%s: found=%v shared=%v (%s), want found=%v shared=%v", c.name, id.Found, id.RootShared, id.Detail, c.found, c.shared)
		}
		if out := id.Measurement().Outcome; (out == "verified") != (c.found && c.shared) {
			t.Errorf("%s: outcome %q", c.name, out)
		}
	}
	if _, err := judgeIdentity(want(l4), l4, ztunnel(proxycert.ZtunnelAvailable), proxycert.ParseZtunnel, []namespaceRoot{{l4, "no certificate here"}}); err == nil || !strings.Contains(err.Error(), "meshclaims-ambient-l4/istio-ca-root-cert") {
		t.Errorf("an unreadable root-cert.pem: %v", err)
	}
}
