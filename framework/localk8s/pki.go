package localk8s

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// PKIParams is what the certificates must name.
type PKIParams struct {
	// ClusterName names the kubeconfigs' cluster and context.
	ClusterName string
	// NodeName is the kubelet's identity (system:node:<NodeName>).
	NodeName string
	// NodeIP and APIServiceIP go into the API server's certificate: clients
	// on the host dial the node IP, pods dial the kubernetes Service IP.
	NodeIP, APIServiceIP net.IP
	// ServerURL is the API server URL every kubeconfig points at.
	ServerURL string
	// Validity of every certificate; default one year. A test cluster lives
	// for minutes, but a reused state directory may live for weeks.
	Validity time.Duration
}

// Client identities. The organisation is the group RBAC binds.
type clientIdentity struct {
	File, CommonName, Org string
	// Kubeconfig says whether a kubeconfig is written for it (the
	// apiserver's kubelet client uses the bare certificate).
	Kubeconfig bool
}

// ClientNames are the client certificates GeneratePKI issues, by file name.
var ClientNames = []string{"admin", "apiserver-kubelet-client", "controller-manager", "scheduler", "kube-proxy", "kubelet", "kube-router"}

func clientIdentities(node string) []clientIdentity {
	return []clientIdentity{
		{"admin", "meshclaims-admin", "system:masters", true},
		// The API server's identity towards kubelets (logs, exec,
		// port-forward): the bootstrap policy lets system:masters do that.
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters", false},
		// The bootstrap RBAC policy binds these user names.
		{"controller-manager", "system:kube-controller-manager", "", true},
		{"scheduler", "system:kube-scheduler", "", true},
		{"kube-proxy", "system:kube-proxy", "", true},
		{"kubelet", "system:node:" + node, "system:nodes", true},
		// kube-router needs to list pods, namespaces, nodes and
		// NetworkPolicies cluster-wide; a single-node test cluster does not
		// gain from a narrower role, and the certificate never leaves it.
		{"kube-router", "meshclaims-kube-router", "system:masters", true},
	}
}

// PKI is a generated set of PEM files, keyed by file name relative to the
// PKI directory (e.g. "ca.crt", "admin.kubeconfig").
type PKI struct {
	Files map[string][]byte
}

// GeneratePKI creates a CA, the API server's and kubelet's serving
// certificates, a client certificate per component, the service-account
// signing key pair and a kubeconfig per client. Keys are ECDSA P-256: fast
// to generate, accepted by every component.
func GeneratePKI(p PKIParams) (*PKI, error) {
	if p.NodeName == "" || p.ClusterName == "" || p.ServerURL == "" {
		return nil, errors.New("localk8s: PKIParams needs ClusterName, NodeName and ServerURL")
	}
	if p.NodeIP == nil || p.APIServiceIP == nil {
		return nil, errors.New("localk8s: PKIParams needs NodeIP and APIServiceIP")
	}
	if p.Validity == 0 {
		p.Validity = 365 * 24 * time.Hour
	}
	g := &issuer{validity: p.Validity}
	out := &PKI{Files: map[string][]byte{}}

	ca, caKey, err := g.issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "meshclaims-local-ca " + p.ClusterName},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	caPEM := pemCert(ca.Raw)
	out.Files["ca.crt"] = caPEM
	if out.Files["ca.key"], err = pemKey(caKey); err != nil {
		return nil, err
	}

	serving := []struct {
		file string
		cn   string
		dns  []string
		ips  []net.IP
	}{
		{"apiserver", "kube-apiserver",
			[]string{"localhost", p.NodeName, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			[]net.IP{net.IPv4(127, 0, 0, 1), p.NodeIP, p.APIServiceIP}},
		{"kubelet", p.NodeName, []string{"localhost", p.NodeName}, []net.IP{net.IPv4(127, 0, 0, 1), p.NodeIP}},
	}
	for _, s := range serving {
		c, k, err := g.issue(&x509.Certificate{
			Subject:     pkix.Name{CommonName: s.cn},
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    s.dns,
			IPAddresses: s.ips,
		}, ca, caKey)
		if err != nil {
			return nil, err
		}
		out.Files[s.file+".crt"] = pemCert(c.Raw)
		if out.Files[s.file+".key"], err = pemKey(k); err != nil {
			return nil, err
		}
	}

	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if out.Files["sa.key"], err = pemKey(sa); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return nil, err
	}
	out.Files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})

	for _, id := range clientIdentities(p.NodeName) {
		subj := pkix.Name{CommonName: id.CommonName}
		if id.Org != "" {
			subj.Organization = []string{id.Org}
		}
		c, k, err := g.issue(&x509.Certificate{
			Subject:     subj,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, ca, caKey)
		if err != nil {
			return nil, err
		}
		certPEM := pemCert(c.Raw)
		keyPEM, err := pemKey(k)
		if err != nil {
			return nil, err
		}
		out.Files[id.File+"-client.crt"] = certPEM
		out.Files[id.File+"-client.key"] = keyPEM
		if id.Kubeconfig {
			kc, err := Kubeconfig(p.ClusterName, p.ServerURL, id.CommonName, caPEM, certPEM, keyPEM)
			if err != nil {
				return nil, err
			}
			out.Files[id.File+".kubeconfig"] = kc
		}
	}
	return out, nil
}

// Kubeconfig renders a kubeconfig with embedded credentials and one context
// named after the cluster.
func Kubeconfig(cluster, server, user string, caPEM, certPEM, keyPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	cfg.CurrentContext = cluster
	return clientcmd.Write(*cfg)
}

// Write stores every file under dir (created 0700; files 0600: they hold
// private keys).
func (p *PKI) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, b := range p.Files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

type issuer struct {
	validity time.Duration
}

func (g *issuer) issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	// Random 128-bit serials: a reissued PKI never repeats a serial a client
	// may have cached.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	// Backdated an hour so a clock step right after start does not make
	// the certificates "not yet valid".
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(g.validity)
	signer := parentKey
	if parent == nil {
		parent, signer = tmpl, k
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, signer)
	if err != nil {
		return nil, nil, fmt.Errorf("localk8s: issuing %q: %w", tmpl.Subject.CommonName, err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return c, k, nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(k *ecdsa.PrivateKey) ([]byte, error) {
	b, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b}), nil
}
