package hbone

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A CA of the test's own issuing SPIFFE certificates, as istiod does.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"hbone test"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return testCA{c, key, pool}
}

func (ca testCA) issue(t *testing.T, id string) ([]*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	u, _ := url.Parse(id)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		URIs: []*url.URL{u}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return []*x509.Certificate{c, ca.cert}, key
}

// peer is an HTTP/2 CONNECT terminator standing in for the waypoint's
// connect_terminate in this unit test of the client: it requires a client
// certificate of ca, answers 403 to a CONNECT for "denied:80", and otherwise
// answers 200 and then one HTTP/1.1 request inside the stream, echoing the
// client's identity and the authority.
func peer(t *testing.T, ca testCA, id string) string {
	t.Helper()
	chain, key := ca.issue(t, id)
	cert := tls.Certificate{Certificate: [][]byte{chain[0].Raw, chain[1].Raw}, PrivateKey: key}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		if r.Host == "denied:80" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		in, err := http.ReadRequest(bufio.NewReader(r.Body))
		if err != nil {
			return
		}
		client := r.TLS.PeerCertificates[0].URIs[0].String()
		body := "from " + client + " to " + r.Host + " path " + in.URL.Path
		resp := "HTTP/1.1 200 OK\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
		w.Write([]byte(resp))
		w.(http.Flusher).Flush()
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool, NextProtos: []string{"h2"}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

func TestConnect(t *testing.T) {
	ca := newCA(t)
	const wp = "spiffe://cluster.local/ns/app/sa/waypoint"
	addr := peer(t, ca, wp)
	chain, key := ca.issue(t, "spiffe://cluster.local/ns/app/sa/good")
	c := Client{Chain: chain, Key: key, Roots: ca.pool, PeerID: wp}
	ctx := context.Background()

	tun, err := c.Connect(ctx, addr, "10.96.0.10:8080")
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	if tun.Status != 200 || tun.PeerID != wp {
		t.Fatalf("CONNECT: status %d peer %q", tun.Status, tun.PeerID)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://10.96.0.10:8080/debug", nil)
	resp, body, err := tun.HTTP(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := "from spiffe://cluster.local/ns/app/sa/good to 10.96.0.10:8080 path /debug"; resp.StatusCode != 200 || string(body) != want {
		t.Errorf("through the tunnel: %d %q, want 200 %q", resp.StatusCode, body, want)
	}

	// The peer refusing is an outcome with its status.
	denied, err := c.Connect(ctx, addr, "denied:80")
	if err != nil {
		t.Fatal(err)
	}
	defer denied.Close()
	if denied.Status != http.StatusForbidden {
		t.Errorf("denied CONNECT: status %d", denied.Status)
	}
	if _, _, err := denied.HTTP(req); err == nil {
		t.Error("HTTP through a refused tunnel did not fail")
	}

	// Negative controls: another identity expected, another mesh's roots.
	other := c
	other.PeerID = "spiffe://cluster.local/ns/app/sa/other"
	if _, err := other.Connect(ctx, addr, "10.96.0.10:8080"); err == nil || !strings.Contains(err.Error(), "want spiffe://cluster.local/ns/app/sa/other") {
		t.Errorf("wrong peer identity: %v", err)
	}
	foreign := c
	foreign.Roots = newCA(t).pool
	if _, err := foreign.Connect(ctx, addr, "10.96.0.10:8080"); err == nil || !strings.Contains(err.Error(), "does not chain") {
		t.Errorf("foreign roots: %v", err)
	}
	// A client certificate of another CA is refused by the peer.
	stranger, skey := newCA(t).issue(t, "spiffe://cluster.local/ns/app/sa/good")
	bad := Client{Chain: stranger, Key: skey, Roots: ca.pool, PeerID: wp}
	if tun, err := bad.Connect(ctx, addr, "10.96.0.10:8080"); err == nil {
		tun.Close()
		t.Error("a client certificate of another CA was accepted")
	}
	if _, err := (Client{}).Connect(ctx, addr, "x:1"); err == nil || !strings.Contains(err.Error(), "Chain and Key are required") {
		t.Errorf("empty client: %v", err)
	}
}
