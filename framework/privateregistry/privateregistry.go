// Package privateregistry runs the CNCF distribution registry (built by
// `make registry` from its upstream Go module, cmd/registry) on loopback as
// a user's private registry looks to the suite: TLS with a CA of its own,
// which neither this process nor the nodes trust by default, and htpasswd
// basic auth, as a private ECR-like registry requires credentials. It
// writes the credentials where a user's `docker login` would (a docker
// config.json in a directory DOCKER_CONFIG names), so the suite reads them
// through its ordinary path.
//
// The registry is a real one with real storage on disk; nothing here stubs
// a response. Tests and the existing-provider CI run both use it.
package privateregistry

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/repo"
)

// Options say how to run the registry. Zero values take the defaults.
type Options struct {
	// Binary is the registry program. Default <repo>/bin/registry/registry.
	Binary string
	// Dir holds its storage, certificates, htpasswd and the docker config.
	// Required; the caller owns it (a t.TempDir, a results directory).
	Dir string
	// User and Password are the one account htpasswd admits.
	// Defaults "meshclaims" and a random password.
	User, Password string
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
}

// Registry is a running registry.
type Registry struct {
	// Host is host:port, what -image-registry starts with.
	Host string
	// CAFile is the PEM CA that signed the serving certificate.
	CAFile string
	// DockerConfigDir holds config.json with Host's credentials: set
	// DOCKER_CONFIG to it and the default keychain reads them.
	DockerConfigDir string
	User, Password  string
	// Log is the registry's own log file.
	Log string

	cmd  *exec.Cmd
	done chan error
}

// Start writes the CA, serving certificate, htpasswd and config, starts the
// registry and waits until it answers TLS on /v2/ (401 without credentials:
// auth is on). The caller must Stop it.
func Start(ctx context.Context, o Options) (*Registry, error) {
	if o.Dir == "" {
		return nil, errors.New("privateregistry: Options.Dir is required")
	}
	if o.Binary == "" {
		root, err := repo.Root()
		if err != nil {
			return nil, err
		}
		o.Binary = filepath.Join(root, "bin", "registry", "registry")
	}
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, fmt.Errorf("%w: %s (build it with `make registry`)", ErrBinaryMissing, o.Binary)
	}
	if o.User == "" {
		o.User = "meshclaims"
	}
	if o.Password == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		o.Password = base64.RawURLEncoding.EncodeToString(b)
	}
	if o.Port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		o.Port = p
	}
	r := &Registry{Host: "127.0.0.1:" + strconv.Itoa(o.Port), User: o.User, Password: o.Password,
		CAFile: filepath.Join(o.Dir, "ca.pem"), DockerConfigDir: filepath.Join(o.Dir, "docker"), Log: filepath.Join(o.Dir, "registry.log")}
	certFile, keyFile := filepath.Join(o.Dir, "tls.crt"), filepath.Join(o.Dir, "tls.key")
	if err := writePKI(r.CAFile, certFile, keyFile); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(o.Password), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	htpasswd := filepath.Join(o.Dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(o.User+":"+string(hash)+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := r.WriteDockerConfig(r.DockerConfigDir, o.User, o.Password); err != nil {
		return nil, err
	}
	conf := filepath.Join(o.Dir, "config.yml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(configTemplate, filepath.Join(o.Dir, "storage"), r.Host, certFile, keyFile, htpasswd)), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(r.Log)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	r.cmd = exec.Command(o.Binary, "serve", conf)
	r.cmd.Stdout, r.cmd.Stderr = log, log
	// Its own process group: an interrupted test run still leaves no
	// registry behind once Stop (or the group's kill) runs.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("privateregistry: starting %s: %w", o.Binary, err)
	}
	r.done = make(chan error, 1)
	go func() { r.done <- r.cmd.Wait() }()
	if err := r.waitReady(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// ErrBinaryMissing is wrapped when the registry program is not built.
var ErrBinaryMissing = errors.New("privateregistry: registry binary not built")

// configTemplate is distribution's configuration: filesystem storage with
// deletes allowed (so the suite's clean-up can remove what it pushed),
// TLS, htpasswd auth.
const configTemplate = `version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: meshclaims-private-registry
    path: %s
`

// WriteDockerConfig writes dir/config.json giving user and password for
// the registry, as `docker login` would (base64 "user:password" in auths).
// A test writes a wrong password with it for the negative control.
func (r *Registry) WriteDockerConfig(dir, user, password string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := map[string]any{"auths": map[string]any{r.Host: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
}

// Client is an HTTP client that trusts the registry's CA, as the suite's
// pushes do with -image-registry-ca.
func (r *Registry) Client() (*http.Client, error) {
	t, err := images.TransportWithCA(r.CAFile)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t, Timeout: 5 * time.Second}, nil
}

// Catalog lists the repositories the registry holds (authenticated).
func (r *Registry) Catalog(ctx context.Context) ([]string, error) {
	c, err := r.Client()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+r.Host+"/v2/_catalog", nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(r.User, r.Password)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("privateregistry: catalog: %s", resp.Status)
	}
	var out struct {
		Repositories []string `json:"repositories"`
	}
	return out.Repositories, json.NewDecoder(resp.Body).Decode(&out)
}

func (r *Registry) waitReady(ctx context.Context) error {
	c, err := r.Client()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-r.done:
			log, _ := os.ReadFile(r.Log)
			return fmt.Errorf("privateregistry: registry exited at start (%v): %s", err, lastLines(log, 10))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := c.Get("https://" + r.Host + "/v2/")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			return nil
		}
		last = fmt.Errorf("/v2/ without credentials answered %s, want 401 (auth on)", resp.Status)
	}
	return fmt.Errorf("privateregistry: not ready in 30 s: %v", last)
}

// Stop ends the registry (its whole process group) and waits for it.
func (r *Registry) Stop() {
	if r == nil || r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	}
}

// writePKI makes a CA and a serving certificate for 127.0.0.1 and
// localhost signed by it.
func writePKI(caFile, certFile, keyFile string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "meshclaims private registry test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", leafDER}, {keyFile, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
