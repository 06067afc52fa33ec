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
	"github.com/meshclaims/meshclaims/framework/probeset"
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
	return fmt.Sprintf("local single-node cluster: %s; %s; CNI bridge/host-local; CoreDNS v1.15.0 and kube-router v2.1.0 built from their modules",
		first(c.Containerd, "--version"), first(c.Runc, "--version"))
}

// IstioValuer is implemented by providers whose nodes need Istio chart
// values of their own, keyed by chart name (base, istiod, cni, ztunnel);
// the installer merges them under the user's -istio-values.
type IstioValuer interface {
	IstioValues() map[string]map[string]any
}

// SharedHost is implemented by providers whose nodes are containers on one
// host (kind): each node reports the host's cores as its capacity, so the
// cluster has the cores of one node, not their sum.
type SharedHost interface {
	NodesShareHost() bool
}

// WorkloadSizer is implemented by providers whose nodes cannot schedule
// the suite's workloads at GUIDE's CPU request (50m per pod); the fixtures
// request WorkloadCPURequest instead, with GUIDE's limits, and the report
// says so with Why.
type WorkloadSizer interface {
	WorkloadCPURequest() (quantity, why string)
}

// LocalCPURequest is the CPU request of every workload container and every
// injected sidecar on the local node: two shared cores cannot hold the
// requests of every mode's namespace at GUIDE's 50m (none, one meshed mode
// and the outside client are 38 pods, 1.9 cores, before the sidecars); 10m
// keeps them all schedulable. Limits stay GUIDE's (300m) and the chart's,
// so a pod's share under load is what it was.
const LocalCPURequest = "10m"

// WorkloadCPURequest is LocalCPURequest, with the reason the report states.
func (l *localProvider) WorkloadCPURequest() (string, string) {
	return LocalCPURequest, "the local node has 2 shared cores: workload CPU requests " + LocalCPURequest +
		" instead of GUIDE's 50m (limits GUIDE's 300m), sidecar CPU requests " + LocalCPURequest + " instead of the chart's 100m"
}

// IstioCNIHost is implemented by providers whose nodes' host is the one the
// suite runs on (the local provider): the suite reads istio-cni's host
// probe set there (readiness diagnostics, the environment record), and the
// provider says what it set for istio-cni beyond Istio's defaults.
type IstioCNIHost interface {
	IstioCNIStater
	// IstioProbeSet reads istio-cni's host probe set.
	IstioProbeSet(ctx context.Context) (probeset.Set, error)
}

// IstioCNIStater is implemented by providers that may set istio-cni apart
// from Istio's defaults (IstioValuer), so the report can say so beside the
// ambient numbers.
type IstioCNIStater interface {
	// IstioCNISettings says, for the report, how istio-cni is configured
	// and why; "" when it keeps Istio's defaults.
	IstioCNISettings() string
}

// LocalIstioCNI is the local provider's istio-cni setting as the report
// states it beside the ambient modes' numbers.
const LocalIstioCNI = "native nftables (global.nativeNftables=true; the node's kube-router v2.1.0 rewrites every host ipset each sync, kube-router#1918; Istio's default is iptables mode)"

// IstioCNISettings states istio-cni's native nftables mode (IstioValues).
func (l *localProvider) IstioCNISettings() string { return LocalIstioCNI }

// IstioProbeSet reads the probe set on this host, which is the node's (the
// node shares the host's network namespace).
func (l *localProvider) IstioProbeSet(ctx context.Context) (probeset.Set, error) {
	return probeset.Read(ctx, probeset.HostRunner)
}

// IstioValues fits Istio to the local single-node cluster: one istiod
// without autoscaling and with small requests (two shared cores), and
// istio-cni chained onto the node's own CNI configuration and plugin
// directories (both in the state directory; the plugins' are links to the
// Debian plugins), with the network namespaces where the node's containerd
// keeps them, in native nftables mode (LocalIstioCNI), and a small ztunnel.
//
// Native nftables here, and on kind over the same kube-router
// (kuberouter.go): the node's kube-router (v2.1.0, the newest
// the Go module proxy serves) ends every sync with `ipset save` of all the
// host's sets and begins the next by restoring and swapping every saved set
// back (its pkg/utils/ipset.go; kube-router#1918, fixed in v2.6.1), which
// wipes the pod IPs istio-cni adds to its iptables-mode probe ipset between
// two syncs; the kubelet's probes of those pods then reach ztunnel
// unSNATed and STRICT mTLS denies them. In nftables mode the probe set is
// an nftables set in istio-cni's own table, which ipset never sees. Only
// istio-cni's chart reads global.nativeNftables for ambient (istiod's uses
// it for the sidecar's istio-init, which this leaves as it is; ztunnel's
// chart has no such value).
func (l *localProvider) IstioValues() map[string]map[string]any {
	c := l.Config()
	return map[string]map[string]any{
		"istiod": {
			"autoscaleEnabled": false,
			"replicaCount":     1,
			"resources":        map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "256Mi"}},
			// The injected istio-init and istio-proxy request 100m each by
			// default: 18 sidecar pods would ask for 1.8 of the 2 cores.
			// Requests only; the limits stay the chart's.
			"global": map[string]any{"proxy": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": LocalCPURequest, "memory": "128Mi"}}}},
		},
		"cni": {
			"cniBinDir":  c.Layout().CNIBinDir(),
			"cniConfDir": c.Layout().CNIConfDir(),
			// Where containerd keeps the pods' netns in the node's mount
			// namespace (a tmpfs of the node's own; localk8s.NodeRunDirs).
			"cniNetnsDir": "/var/run/netns",
			"resources":   map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}},
			"global":      map[string]any{"nativeNftables": true},
		},
		"ztunnel": {
			"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}},
		},
	}
}
