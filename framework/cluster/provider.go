// Package cluster brings up, or attaches to, the Kubernetes cluster a run
// uses, pins its REST config for the whole run, and guards every phase that
// writes against the cluster changing underneath (Guard).
//
// Three providers: "kind" creates, reuses and deletes a local kind cluster
// through kind's Go API; "existing" attaches to a cluster named by a
// kubeconfig and context (EKS release qualification); "local" runs a
// single-node cluster as host processes (framework/localk8s), for hosts
// with no container engine. All plug into e2e-framework's environment with
// Setup and Finish.
package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/framework/localk8s"
)

// Provider is a cluster a run can use.
type Provider interface {
	// Name is the -provider value that selects this provider.
	Name() string
	// Start creates the cluster, or reuses/attaches to an existing one, and
	// resolves the REST config the run will use. It is called once.
	Start(ctx context.Context) error
	// RESTConfig is the REST config resolved by Start (a copy each call).
	// Nothing re-reads the kubeconfig after Start.
	RESTConfig() *rest.Config
	// KubeConfig is the kubeconfig file and context Start resolved from;
	// for humans and tools, and for the Guard's drift detector.
	KubeConfig() KubeconfigSelector
	// LoadImage loads an image archive (docker save / OCI tarball) into
	// every node, so pods can use it without a registry.
	LoadImage(ctx context.Context, tarball string) error
	// ExportLogs writes what is needed to debug a failed run into dir.
	ExportLogs(ctx context.Context, dir string) error
	// Delete removes the cluster if this provider created it; providers
	// never delete clusters they only attached to.
	Delete(ctx context.Context) error
	// Facts are what the provider knows of the nodes (facts.go); kind and
	// existing read theirs at Start, and report the zero Facts before.
	Facts() Facts
}

// Provider names accepted by New.
const (
	KindName     = "kind"
	ExistingName = "existing"
	LocalName    = "local"
)

// Accepted lists the -provider values this package implements.
func Accepted() string { return strings.Join([]string{KindName, ExistingName, LocalName}, ", ") }

// Options configures the provider New builds; each provider reads its part.
type Options struct {
	// ClusterName is the kind cluster's name (default "meshclaims").
	ClusterName string
	// KindConfig is the kind cluster config file (default
	// testdata/kind/cluster.yaml, found from the working directory upwards).
	KindConfig string
	// NodeImage is the kind node image of every node ("" = DefaultNodeImage,
	// Kubernetes 1.36); it overrides the images a kind config names.
	NodeImage string
	// KubeProxyMode is the kube-proxy mode of a kind cluster the provider
	// creates ("" = the config's own, iptables in the shipped one): HYBRID
	// measured a new Service's time per mode, on a fresh cluster each.
	KubeProxyMode string
	// Reuse lets kind use a cluster of the same name that already exists
	// instead of refusing to start.
	Reuse bool
	// KubeconfigOut is where the kind provider writes the cluster's
	// kubeconfig (default: a file in the OS temp dir named after the cluster).
	// The user's ~/.kube/config is never modified.
	KubeconfigOut string
	// Kubeconfig and Context select the existing cluster.
	Kubeconfig KubeconfigSelector
}

// New builds the provider named by a -provider value.
func New(name string, o Options) (Provider, error) {
	switch name {
	case KindName:
		return NewKind(o), nil
	case ExistingName:
		return NewExisting(o.Kubeconfig), nil
	case LocalName:
		// Reuse keeps the state directory (PKI, etcd, imported images)
		// between runs; the processes always die with the run.
		k, err := localk8s.New(localk8s.Config{Name: o.ClusterName, KeepState: o.Reuse})
		if err != nil {
			return nil, err
		}
		k.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "[meshclaims %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
		}
		return &localProvider{k}, nil
	default:
		return nil, fmt.Errorf("unknown -provider=%q; accepted: %s", name, Accepted())
	}
}

// localProvider adapts a localk8s.Cluster (which cannot import this package)
// to Provider.
type localProvider struct{ *localk8s.Cluster }

func (l *localProvider) Name() string { return LocalName }

func (l *localProvider) KubeConfig() KubeconfigSelector {
	return KubeconfigSelector{Path: l.KubeconfigPath()}
}

// Describer is implemented by providers that can say what runs the cluster
// beyond the API server's version (the local provider's containerd, runc,
// CNI, DNS and NetworkPolicy programs); the report records it.
type Describer interface {
	Describe() string
}

// NodeImager is implemented by providers that run their nodes from an image
// (kind); the report records the image the nodes ran.
type NodeImager interface {
	NodeImage() string
}

// Describe names the host programs of the local cluster with their versions.
func (l *localProvider) Describe() string {
	c := l.Config()
	first := func(bin string, args ...string) string {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			return filepath.Base(bin) + " (version unknown)"
		}
		return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	return fmt.Sprintf("local single-node cluster: %s; %s; CNI bridge/host-local; CoreDNS v1.15.0 and %s built from their modules",
		first(c.Containerd, "--version"), first(c.Runc, "--version"), localKubeRouter)
}

// LocalCPURequest is the CPU request of every workload container on the
// local node (Sizing): two shared cores cannot hold the requests of every
// mode's namespace at GUIDE's 50m (none, one meshed mode and the outside
// client are 38 pods, 1.9 cores, before any container a mesh adds); 10m
// keeps them all schedulable. Limits stay GUIDE's (300m), so a pod's share
// under load is what it was.
const LocalCPURequest = "10m"

// localKubeRouter is the local node's NetworkPolicy controller (cmd/kube-router),
// a kube-router before KubeRouterIpsetFix.
const localKubeRouter = "kube-router v2.1.0"

// localNetnsDir is where the local node's containerd keeps the pods'
// network namespaces (its default, not under its state directory:
// localk8s's render.go), a tmpfs of the node's own mount namespace
// (localk8s.NodeRunDirs).
const localNetnsDir = "/var/run/netns"

// Facts of the local node: the host's own processes on two shared cores,
// its CNI directories in the state directory (the plugins' are links to
// the Debian plugins), and its kube-router, which rewrites every host
// ipset (KubeRouterIpsetFix).
func (l *localProvider) Facts() Facts {
	c := l.Config()
	return Facts{
		HostProcesses: true,
		CNIBinDir:     c.Layout().CNIBinDir(),
		CNIConfDir:    c.Layout().CNIConfDir(),
		NetnsDir:      localNetnsDir,
		IpsetRewriter: localKubeRouter,
		Sizing:        Sizing{CPURequest: LocalCPURequest, Why: "the local node has 2 shared cores"},
	}
}
