// Package hbone is an HBONE client: what ztunnel does in front of a
// waypoint, done from a test. HBONE is HTTP/2 CONNECT over mutual TLS on
// port 15008 (Istio's "HTTP-Based Overlay Network Environment"): the client
// presents its workload certificate (a SPIFFE identity the mesh's CA
// issued), checks the peer's SPIFFE identity against the mesh's roots,
// sends CONNECT with :authority the destination's address and port, and
// once answered 200 carries the destination's bytes in the stream.
//
// The peer's certificate has a URI SAN and no DNS name, so it is verified
// as ztunnel verifies it: a chain to the mesh's roots and the exact
// identity expected, not a host name.
package hbone

import (
	"bufio"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"golang.org/x/net/http2"
)

// Port is the HBONE port of ztunnel and of a waypoint's connect_terminate
// listener.
const Port = 15008

// Client opens HBONE tunnels as one workload identity.
type Client struct {
	// Chain is the client's certificate chain, leaf first (istiod's
	// answer to a CSR), and Key the leaf's private key.
	Chain []*x509.Certificate
	Key   crypto.Signer
	// Roots are the mesh's roots (istio-ca-root-cert).
	Roots *x509.CertPool
	// PeerID is the SPIFFE identity the peer must present, e.g.
	// spiffe://cluster.local/ns/app/sa/waypoint.
	PeerID string
	// Timeout bounds the dial, the handshake and the CONNECT's answer;
	// zero means 10s.
	Timeout time.Duration
}

// Tunnel is one CONNECT stream: what is written goes to the destination,
// what is read comes from it.
type Tunnel struct {
	// Status is the CONNECT's answer (200 when the tunnel is open).
	Status int
	// Header is the CONNECT response's header.
	Header http.Header
	// PeerID is the identity the peer presented.
	PeerID string

	w    *io.PipeWriter
	body io.ReadCloser
	conn net.Conn
	r    *bufio.Reader
}

func (c Client) check() error {
	switch {
	case len(c.Chain) == 0 || c.Key == nil:
		return errors.New("hbone: Chain and Key are required (a workload certificate from the mesh's CA)")
	case c.Roots == nil:
		return errors.New("hbone: Roots are required (the mesh's istio-ca-root-cert)")
	case c.PeerID == "":
		return errors.New("hbone: PeerID is required (the SPIFFE identity the peer must present)")
	}
	return nil
}

// TLSConfig is the client side of HBONE's mutual TLS: the client's chain,
// ALPN h2, and the peer verified by chain and SPIFFE identity.
func (c Client) TLSConfig() (*tls.Config, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	cert := tls.Certificate{PrivateKey: c.Key, Leaf: c.Chain[0]}
	for _, x := range c.Chain {
		cert.Certificate = append(cert.Certificate, x.Raw)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
		// The peer's certificate names no host; VerifyPeerCertificate does
		// the whole verification instead (chain and identity).
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return VerifyPeer(raw, c.Roots, c.PeerID)
		},
	}, nil
}

// VerifyPeer checks a presented chain (leaf first, DER) against roots and
// requires the leaf's URI SANs to include id.
func VerifyPeer(raw [][]byte, roots *x509.CertPool, id string) error {
	if len(raw) == 0 {
		return errors.New("hbone: the peer presented no certificate")
	}
	var chain []*x509.Certificate
	for i, der := range raw {
		x, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("hbone: peer certificate %d: %w", i, err)
		}
		chain = append(chain, x)
	}
	inter := x509.NewCertPool()
	for _, x := range chain[1:] {
		inter.AddCert(x)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("hbone: peer certificate does not chain to the mesh's roots: %w", err)
	}
	var uris []string
	for _, u := range chain[0].URIs {
		uris = append(uris, u.String())
	}
	if !slices.Contains(uris, id) {
		return fmt.Errorf("hbone: peer presents %v, want %s", uris, id)
	}
	return nil
}

// Connect dials addr (the HBONE peer, host:15008), completes mutual TLS and
// sends CONNECT for authority (the destination, ip:port). A non-200 answer
// is returned as a Tunnel with that Status and no error: the peer refusing
// is an outcome, not a failure to ask. The caller closes the Tunnel.
func (c Client) Connect(ctx context.Context, addr, authority string) (*Tunnel, error) {
	cfg, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("hbone: %s: %w", addr, err)
	}
	tc := conn.(*tls.Conn)
	st := tc.ConnectionState()
	if st.NegotiatedProtocol != "h2" {
		conn.Close()
		return nil, fmt.Errorf("hbone: %s negotiated ALPN %q, not h2", addr, st.NegotiatedProtocol)
	}
	peer := ""
	if len(st.PeerCertificates) > 0 {
		for _, u := range st.PeerCertificates[0].URIs {
			peer = u.String()
		}
	}
	cc, err := (&http2.Transport{}).NewClientConn(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("hbone: HTTP/2 with %s: %w", addr, err)
	}
	pr, pw := io.Pipe()
	// CONNECT: :method and :authority only (RFC 9113 8.5), which is what
	// x/net/http2 sends for a CONNECT request without :protocol.
	req, err := http.NewRequestWithContext(ctx, http.MethodConnect, "http://"+authority, pr)
	if err != nil {
		conn.Close()
		return nil, err
	}
	req.Host = authority
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := cc.RoundTrip(req)
		got <- answer{resp, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(timeout):
		conn.Close()
		pw.Close()
		return nil, fmt.Errorf("hbone: CONNECT %s via %s: no answer within %s", authority, addr, timeout)
	}
	if a.err != nil {
		conn.Close()
		pw.Close()
		return nil, fmt.Errorf("hbone: CONNECT %s via %s: %w", authority, addr, a.err)
	}
	t := &Tunnel{Status: a.resp.StatusCode, Header: a.resp.Header, PeerID: peer, w: pw, body: a.resp.Body, conn: conn}
	t.r = bufio.NewReader(a.resp.Body)
	return t, nil
}

// Write sends bytes to the destination.
func (t *Tunnel) Write(p []byte) (int, error) { return t.w.Write(p) }

// Read receives bytes from the destination.
func (t *Tunnel) Read(p []byte) (int, error) { return t.r.Read(p) }

// Close ends the stream and the connection.
func (t *Tunnel) Close() error {
	t.w.Close()
	t.body.Close()
	return t.conn.Close()
}

// HTTP sends one HTTP/1.1 request through the tunnel and reads its
// response (the body read whole, so the tunnel can carry the next one).
func (t *Tunnel) HTTP(req *http.Request) (*http.Response, []byte, error) {
	if t.Status != http.StatusOK {
		return nil, nil, fmt.Errorf("hbone: tunnel not open (CONNECT answered %d)", t.Status)
	}
	errc := make(chan error, 1)
	go func() { errc <- req.Write(t.w) }()
	resp, err := http.ReadResponse(t.r, req)
	if err != nil {
		return nil, nil, fmt.Errorf("hbone: response through the tunnel: %w", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp, body, err
	}
	if err := <-errc; err != nil {
		return resp, body, fmt.Errorf("hbone: writing the request: %w", err)
	}
	return resp, body, nil
}
