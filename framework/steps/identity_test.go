package steps

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

func rootPEM(t *testing.T, serial int64) (string, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{Organization: []string{"cluster.local"}},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), c
}

// The shared-root check finds the root in Envoy's /certs (serial number) and
// in ztunnel's dump (PEM), and fires for a dump holding another root.
func TestRootInDump(t *testing.T) {
	root, cert := rootPEM(t, 0x1f2e3d4c5b6a)
	other, _ := rootPEM(t, 0x0a0b0c)
	envoy := fmt.Sprintf(`{"certificates":[{"ca_cert":[{"serial_number":"%x"}],"cert_chain":[{"subject_alt_names":[{"uri":"spiffe://cluster.local/ns/x/sa/default"}]}]}]}`, cert.SerialNumber)
	ztunnel := `{"certificates":[{"identity":"spiffe://cluster.local/ns/x/sa/default","root_certs":[{"pem":"` + strings.ReplaceAll(root, "\n", `\n`) + `"}]}]}`
	if !rootInDump(root, envoy) {
		t.Error("root not found by serial in an Envoy /certs dump")
	}
	if !rootInDump(root, ztunnel) {
		t.Error("root not found by PEM in a ztunnel dump")
	}
	if rootInDump(other, envoy) || rootInDump(other, ztunnel) {
		t.Error("another root was taken for the shared one")
	}
	if rootInDump("not a pem", envoy) {
		t.Error("garbage root accepted")
	}
}
