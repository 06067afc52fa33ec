// Package apiserver starts a real Kubernetes API server (etcd + kube-apiserver,
// through controller-runtime's envtest) with Istio's and Gateway API's CRDs
// installed, so fixtures, apply, clean-up, the cluster guard and the Istio
// installer are checked by the same validation a cluster runs, not by fakes.
//
// There are no controllers: nothing schedules pods, and namespaces stay
// Terminating after deletion (no namespace controller empties them).
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// EnvAssets names the directory holding etcd and kube-apiserver (envtest's own
// variable, so `KUBEBUILDER_ASSETS=bin/k8s go test` works as envtest users expect).
const EnvAssets = "KUBEBUILDER_ASSETS"

// DefaultStartTimeout is generous on purpose: the machines that run this are
// small and shared, and a start that is slow is not a failure of the code.
const DefaultStartTimeout = 3 * time.Minute

// Options configures Start. The zero value is what tests want.
type Options struct {
	// BinaryDir holds executables named etcd and kube-apiserver. Empty means
	// $KUBEBUILDER_ASSETS, else <repo root>/bin/k8s (what `make k8s-bin` builds).
	BinaryDir string
	// IstioCRDFile is Istio's CRD bundle. Empty means
	// <istio.io/api module>/kubernetes/customresourcedefinitions.gen.yaml.
	IstioCRDFile string
	// GatewayCRDDir is Gateway API's standard-channel CRD directory. Empty means
	// <sigs.k8s.io/gateway-api module>/config/crd/standard.
	GatewayCRDDir string
	// NoGatewayCRDs starts without any Gateway API CRDs: a cluster on which
	// an installer must put them itself.
	NoGatewayCRDs bool
	// ExtraCRDPaths are further CRD files or directories to install.
	ExtraCRDPaths []string
	// StartTimeout bounds the start of each of etcd and kube-apiserver; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
}

// Server is one running API server. Config is an admin (system:masters) REST
// config for it; every Server has its own etcd, so two Servers share nothing.
type Server struct {
	Config *rest.Config

	env      *envtest.Environment
	stopOnce sync.Once
	stopErr  error
}

// ErrBinariesMissing is wrapped by Start's error when etcd or kube-apiserver is
// not in the binary directory, so callers can tell "not built" from "broken".
var ErrBinariesMissing = errors.New("API server binaries not found")

// Start starts etcd and kube-apiserver, installs the Istio and Gateway API
// CRDs and waits until they are served. The caller must Stop the Server.
//
// envtest's start cannot be interrupted, so ctx is checked before starting and
// once the server is up: a cancelled ctx stops the server and returns ctx.Err().
func Start(ctx context.Context, opts Options) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := resolveBinaryDir(opts.BinaryDir)
	if err != nil {
		return nil, err
	}
	if err := checkBinaries(dir); err != nil {
		return nil, err
	}
	crdPaths, err := crdPaths(opts)
	if err != nil {
		return nil, err
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	useExisting := false
	env := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		// Pinned off: envtest otherwise honours USE_EXISTING_CLUSTER and would
		// write test objects into whatever cluster the kubeconfig points at.
		UseExistingCluster:       &useExisting,
		ErrorIfCRDPathMissing:    true,
		CRDInstallOptions:        envtest.CRDInstallOptions{Paths: crdPaths, ErrorIfPathMissing: true},
		ControlPlaneStartTimeout: timeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		// Start may have left etcd running when the API server or CRDs failed.
		_ = env.Stop()
		return nil, fmt.Errorf("start API server from %s: %w", dir, err)
	}
	s := &Server{Config: cfg, env: env}
	if err := ctx.Err(); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop stops kube-apiserver and etcd and removes their data. Safe to call
// more than once; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.env.Stop() })
	return s.stopErr
}

// WriteKubeconfig writes (or merges into an existing file at path) a cluster,
// user and context all named contextName for this Server, and makes it the
// current context. Merging is deliberate: writing server A as "a" and then
// server B as "b" into one file is exactly a workstation whose current context
// drifted from A to B, which the cluster guard's tests need.
func (s *Server) WriteKubeconfig(path, contextName string) error {
	return s.WriteKubeconfigFor(path, contextName, s.Config)
}

// AddUser makes a user of the server's own CA, name in groups, and returns
// its REST config: RBAC then decides what it may (nothing, until a test
// binds it a role).
func (s *Server) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := s.env.AddUser(envtest.User{Name: name, Groups: groups}, s.Config)
	if err != nil {
		return nil, fmt.Errorf("apiserver: adding user %s: %w", name, err)
	}
	return u.Config(), nil
}

// WriteKubeconfigFor is WriteKubeconfig with the credentials of cfg (a
// user of AddUser).
func (s *Server) WriteKubeconfigFor(path, contextName string, cfg *rest.Config) error {
	if contextName == "" {
		return fmt.Errorf("WriteKubeconfig(%q): empty context name; accepted: any non-empty name", path)
	}
	kc := clientcmdapi.NewConfig()
	if _, err := os.Stat(path); err == nil {
		kc, err = clientcmd.LoadFromFile(path)
		if err != nil {
			return fmt.Errorf("read existing kubeconfig %s: %w", path, err)
		}
	}
	cluster := clientcmdapi.NewCluster()
	cluster.Server = s.Config.Host
	cluster.CertificateAuthorityData = s.Config.CAData
	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData = cfg.CertData
	user.ClientKeyData = cfg.KeyData
	user.Token = cfg.BearerToken
	ctx := clientcmdapi.NewContext()
	ctx.Cluster = contextName
	ctx.AuthInfo = contextName
	kc.Clusters[contextName] = cluster
	kc.AuthInfos[contextName] = user
	kc.Contexts[contextName] = ctx
	kc.CurrentContext = contextName
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}

func resolveBinaryDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if env := os.Getenv(EnvAssets); env != "" {
		return env, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%w: %s is unset and %v", ErrBinariesMissing, EnvAssets, err)
	}
	return filepath.Join(root, "bin", "k8s"), nil
}

func checkBinaries(dir string) error {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%w: %s (build them with `make k8s-bin`, or set %s to a directory holding etcd and kube-apiserver)", ErrBinariesMissing, p, EnvAssets)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%w: %s is not an executable file", ErrBinariesMissing, p)
		}
	}
	return nil
}

func crdPaths(opts Options) ([]string, error) {
	istio := opts.IstioCRDFile
	if istio == "" {
		dir, err := ModuleDir(istioAPIModule)
		if err != nil {
			return nil, fmt.Errorf("locate Istio CRDs (set Options.IstioCRDFile to override): %w", err)
		}
		istio = filepath.Join(dir, "kubernetes", "customresourcedefinitions.gen.yaml")
	}
	paths := []string{istio}
	gw := opts.GatewayCRDDir
	if gw == "" && !opts.NoGatewayCRDs {
		dir, err := ModuleDir(gatewayAPIModule)
		if err != nil {
			return nil, fmt.Errorf("locate Gateway API CRDs (set Options.GatewayCRDDir to override): %w", err)
		}
		gw = filepath.Join(dir, "config", "crd", "standard")
	}
	if !opts.NoGatewayCRDs {
		paths = append(paths, gw)
	}
	paths = append(paths, opts.ExtraCRDPaths...)
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRD path %s: %w", p, err)
		}
	}
	return paths, nil
}
