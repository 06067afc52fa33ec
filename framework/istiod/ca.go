package istiod

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	pb "istio.io/api/security/v1alpha1"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CA is istiod's certificate service as pilot-agent reaches it: gRPC over
// TLS on port 15012, istiod's serving certificate checked against the
// mesh's root (the istio-ca-root-cert ConfigMap) for istiod's Service name.
type CA struct {
	// Addr is host:port of istiod's 15012 (a pod or Service address).
	Addr string
	// ServerName is the name istiod's certificate must carry, e.g.
	// istiod.istio-system.svc.
	ServerName string
	// Roots verify istiod's serving certificate and the issued chains.
	Roots *x509.CertPool
	// ClusterID is sent as pilot-agent sends it ("Kubernetes" unless the
	// mesh is multi-cluster).
	ClusterID string
}

// TokenAudience is the audience istiod accepts on CA requests (its
// TOKEN_AUDIENCES default; the projected token pilot-agent reads is
// requested with it).
const TokenAudience = "istio-ca"

// ServiceAccountToken asks the API server (TokenRequest, what the kubelet
// does for a projected service-account token volume) for a token of sa in
// ns with the given audiences, valid 10 minutes (the API's minimum).
func ServiceAccountToken(ctx context.Context, cs kubernetes.Interface, ns, sa string, audiences ...string) (string, error) {
	exp := int64(600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", ns, sa, err)
	}
	return tr.Status.Token, nil
}

// SPIFFEID is the identity Istio gives sa in ns in trust domain td.
func SPIFFEID(td, ns, sa string) string {
	return "spiffe://" + td + "/ns/" + ns + "/sa/" + sa
}

// CSR makes a certificate signing request with the URI SAN id, as
// pilot-agent does for its workload (a fresh key each time; P-256 here,
// pilot-agent's ECC option), and returns it PEM-encoded.
func CSR(id string) ([]byte, error) {
	csr, _, err := CSRWithKey(id)
	return csr, err
}

// CSRWithKey is CSR and the private key it was made with, for a client
// that then presents the issued certificate (an HBONE client).
func CSRWithKey(id string) ([]byte, *ecdsa.PrivateKey, error) {
	u, err := url.Parse(id)
	if err != nil {
		return nil, nil, fmt.Errorf("SPIFFE ID %q: %w", id, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{URIs: []*url.URL{u}}, key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), key, nil
}

// Sign sends csr to istiod's CreateCertificate with token as the bearer
// credential and returns the chain istiod answered: leaf first, root last.
func (ca CA) Sign(ctx context.Context, token string, csr []byte, ttl time.Duration) ([]*x509.Certificate, error) {
	if ca.Roots == nil || ca.Addr == "" || ca.ServerName == "" {
		return nil, errors.New("istiod CA: Addr, ServerName and Roots are required")
	}
	creds := credentials.NewTLS(&tls.Config{RootCAs: ca.Roots, ServerName: ca.ServerName, MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(ca.Addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("istiod CA %s: %w", ca.Addr, err)
	}
	defer conn.Close()
	md := metadata.Pairs("authorization", "Bearer "+token)
	if ca.ClusterID != "" {
		md.Append("ClusterID", ca.ClusterID)
	}
	resp, err := pb.NewIstioCertificateServiceClient(conn).CreateCertificate(metadata.NewOutgoingContext(ctx, md),
		&pb.IstioCertificateRequest{Csr: string(csr), ValidityDuration: int64(ttl / time.Second)})
	if err != nil {
		return nil, fmt.Errorf("istiod CA %s: CreateCertificate: %w", ca.Addr, err)
	}
	var chain []*x509.Certificate
	for i, p := range resp.CertChain {
		block, _ := pem.Decode([]byte(p))
		if block == nil {
			return nil, fmt.Errorf("istiod CA: chain element %d is not PEM", i)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("istiod CA: chain element %d: %w", i, err)
		}
		chain = append(chain, c)
	}
	if len(chain) < 2 {
		return nil, fmt.Errorf("istiod CA: chain of %d certificates; want the leaf and the root at least", len(chain))
	}
	return chain, nil
}

// CheckIssued verifies that chain's leaf names exactly the URI SAN id and
// chains to roots (the istio-ca-root-cert ConfigMap's), through the
// intermediates istiod sent.
func CheckIssued(chain []*x509.Certificate, id string, roots *x509.CertPool) error {
	leaf := chain[0]
	var uris []string
	for _, u := range leaf.URIs {
		uris = append(uris, u.String())
	}
	if !slices.Equal(uris, []string{id}) {
		return fmt.Errorf("issued certificate has URI SANs %v, want exactly [%s]", uris, id)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1 : len(chain)-1] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("issued certificate for %s does not chain to the mesh root: %w", id, err)
	}
	return nil
}

// RootPool parses the root-cert.pem of the istio-ca-root-cert ConfigMap.
func RootPool(rootCertPEM string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(rootCertPEM)) {
		return nil, errors.New("istio-ca-root-cert: root-cert.pem holds no PEM certificate")
	}
	return pool, nil
}
