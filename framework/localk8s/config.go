// Package localk8s runs a real single-node Kubernetes cluster as host
// processes, with no container engine and no registry: etcd and the control
// plane from the repository's multi-call binary (bin/k8s), containerd, runc
// and the CNI bridge plugin from the OS packages, CoreDNS and a pause image
// built from Go modules and imported straight into containerd, and
// kube-router enforcing NetworkPolicy with iptables + ipset.
//
// Every process is a child of the Go process that called Start and is killed
// with it (Pdeathsig); Delete stops them in the reverse order of start and
// wipes what they leave on the host (mounts, network namespaces, iptables
// chains and ipsets, the bridge, cgroup directories, the state directory).
//
// Addresses: pods get 198.18.0.0/24 (from the pod range 198.18.0.0/16),
// Services 198.19.0.0/16, both outside the private ranges so that nothing is
// confused with a real network; the node itself is 198.18.0.1, the CNI
// bridge's gateway address, created before the API server starts. Both /16
// ranges are routed to that bridge, so a packet for either range never leaves
// the host, even before kube-proxy has written its rules.
//
// It needs root on Linux. cgroup v1 hosts are supported through the
// kubelet's failCgroupV1=false and the cgroupfs driver.
package localk8s

import (
	"fmt"
	"k8s.io/apimachinery/pkg/api/resource"
	"net/netip"
	"path/filepath"
	"regexp"
	"time"

	"github.com/meshclaims/meshclaims/framework/repo"
)

// Config describes one local cluster. The zero value plus a Name is valid
// after Defaults.
type Config struct {
	// Name names the cluster; it becomes the state directory's base name and
	// the kubeconfig's cluster and context name. Lower-case letters, digits
	// and '-', at most 40 characters.
	Name string
	// StateDir holds everything the cluster writes: PKI, configs, etcd data,
	// containerd's root, the kubelet's root, logs. Default
	// /var/lib/meshclaims-local/<Name>. Delete removes it (unless KeepState).
	StateDir string
	// RepoRoot is the meshclaims repository: bin/ holds the binaries, and
	// cmd/ the modules the images and kube-router are built from. Default:
	// found from this source file's location.
	RepoRoot string
	// K8sBinary is the multi-call Kubernetes binary. Default
	// <RepoRoot>/bin/k8s/k8s (built by `make k8s-bin`).
	K8sBinary string
	// KubeRouterBinary is kube-router. Default <RepoRoot>/bin/kube-router/kube-router,
	// built from cmd/kube-router on first use when missing.
	KubeRouterBinary string
	// Containerd, Runc, Ctr and CNIBinDir are the OS packages' programs.
	// Defaults: /usr/bin/containerd, /usr/sbin/runc, /usr/bin/ctr, /usr/lib/cni.
	Containerd string
	Runc       string
	Ctr        string
	CNIBinDir  string

	// NodeName is the Node object's name. Default "meshclaims-local".
	NodeName string
	// PodCIDR is the cluster's pod range; the node's pod subnet is its first
	// /24. Default 198.18.0.0/16.
	PodCIDR netip.Prefix
	// ServiceCIDR is the Service range. Default 198.19.0.0/16.
	ServiceCIDR netip.Prefix
	// Bridge is the CNI bridge's interface name. Default "mclk-br0".
	Bridge string

	// NetworkPolicy runs kube-router's firewall. Default true (see
	// DisableNetworkPolicy); without it NetworkPolicy objects are accepted
	// but not enforced.
	DisableNetworkPolicy bool
	// KeepState makes Delete stop processes and clean the host but keep the
	// state directory (PKI, etcd, imported images) for the next Start.
	KeepState bool
	// Registries are private registries the node's containerd pulls from,
	// configured as a cluster owner configures nodes (on EKS the node
	// role's ECR access plays this part): the CA that signed each one's
	// certificate and the credentials the node presents.
	Registries []NodeRegistry
	// ContainerLogMaxSize is the kubelet's containerLogMaxSize, the size at
	// which it rotates a container's log file ("" keeps the kubelet's
	// 10Mi); set, the kubelet also checks every 3 s (its shortest) instead
	// of every 10 s. A test of log rotation sets it small.
	ContainerLogMaxSize string
	// ReadyTimeout bounds Start's wait for the node to be Ready and DNS to
	// answer. Default 5 minutes.
	ReadyTimeout time.Duration
}

// NodeRegistry is one private registry in the node's containerd config.
type NodeRegistry struct {
	// Host is host:port, as image references name it.
	Host string
	// CAFile is a PEM CA the node trusts for Host (empty: the system's).
	CAFile string
	// Username and Password are the node's credentials for Host.
	Username, Password string
}

// Fixed ports: one local cluster per host.
const (
	APIServerPort = 6443
	EtcdPort      = 2379
	EtcdPeerPort  = 2380
	KubeletPort   = 10250
)

// DefaultStateRoot is where state directories go unless Config.StateDir says.
const DefaultStateRoot = "/var/lib/meshclaims-local"

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)
var registryHostRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$`)
var ifNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,15}$`)

// Defaults returns c with every empty field filled in and validated.
func (c Config) Defaults() (Config, error) {
	if c.Name == "" {
		c.Name = "meshclaims"
	}
	if !nameRE.MatchString(c.Name) {
		return c, fmt.Errorf("localk8s: cluster name %q is not valid; accepted: lower-case letters, digits and '-', 1-40 characters, starting and ending with a letter or digit", c.Name)
	}
	if c.RepoRoot == "" {
		root, err := repo.Root()
		if err != nil {
			return c, err
		}
		c.RepoRoot = root
	}
	if c.StateDir == "" {
		c.StateDir = filepath.Join(DefaultStateRoot, c.Name)
	}
	if !filepath.IsAbs(c.StateDir) {
		abs, err := filepath.Abs(c.StateDir)
		if err != nil {
			return c, err
		}
		c.StateDir = abs
	}
	// The wipe removes the state directory recursively: refuse anything
	// that could be a system directory.
	if len(splitPath(c.StateDir)) < 2 {
		return c, fmt.Errorf("localk8s: state directory %q is too close to /; accepted: a directory at least two levels deep, e.g. %s", c.StateDir, filepath.Join(DefaultStateRoot, c.Name))
	}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&c.K8sBinary, filepath.Join(c.RepoRoot, "bin", "k8s", "k8s"))
	def(&c.KubeRouterBinary, filepath.Join(c.RepoRoot, "bin", "kube-router", "kube-router"))
	def(&c.Containerd, "/usr/bin/containerd")
	def(&c.Runc, "/usr/sbin/runc")
	def(&c.Ctr, "/usr/bin/ctr")
	def(&c.CNIBinDir, "/usr/lib/cni")
	def(&c.NodeName, "meshclaims-local")
	def(&c.Bridge, "mclk-br0")
	if !ifNameRE.MatchString(c.Bridge) {
		return c, fmt.Errorf("localk8s: bridge name %q is not a valid interface name; accepted: 1-15 of [a-zA-Z0-9_.-]", c.Bridge)
	}
	if !c.PodCIDR.IsValid() {
		c.PodCIDR = netip.MustParsePrefix("198.18.0.0/16")
	}
	if !c.ServiceCIDR.IsValid() {
		c.ServiceCIDR = netip.MustParsePrefix("198.19.0.0/16")
	}
	for _, p := range []struct {
		name string
		p    netip.Prefix
		max  int
	}{{"pod", c.PodCIDR, 24}, {"service", c.ServiceCIDR, 24}} {
		if !p.p.Addr().Is4() || p.p.Bits() > p.max || p.p.Masked() != p.p {
			return c, fmt.Errorf("localk8s: %s CIDR %s is not accepted; accepted: an IPv4 network address with a prefix of /%d or shorter, e.g. 198.18.0.0/16", p.name, p.p, p.max)
		}
	}
	if c.PodCIDR.Overlaps(c.ServiceCIDR) {
		return c, fmt.Errorf("localk8s: pod CIDR %s overlaps service CIDR %s; they must be disjoint", c.PodCIDR, c.ServiceCIDR)
	}
	for _, r := range c.Registries {
		if !registryHostRE.MatchString(r.Host) {
			return c, fmt.Errorf("localk8s: registry %q is not a host[:port]; accepted: e.g. 127.0.0.1:5000, registry.example.com", r.Host)
		}
		if r.CAFile != "" && !filepath.IsAbs(r.CAFile) {
			return c, fmt.Errorf("localk8s: registry %s: CA file %q must be an absolute path (containerd reads it from its own working directory)", r.Host, r.CAFile)
		}
	}
	if c.ContainerLogMaxSize != "" {
		if q, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil || q.Value() < 1024 {
			return c, fmt.Errorf("localk8s: container log size %q is not accepted; accepted: a size of at least 1Ki such as 1Mi or 10Mi", c.ContainerLogMaxSize)
		}
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 5 * time.Minute
	}
	return c, nil
}

func splitPath(p string) []string {
	var out []string
	for _, s := range regexp.MustCompile(`/+`).Split(p, -1) {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// NodeSubnet is the node's pod subnet: the first /24 of PodCIDR.
func (c Config) NodeSubnet() netip.Prefix {
	return netip.PrefixFrom(c.PodCIDR.Addr(), 24)
}

// NodeIP is the node's address: the first host of NodeSubnet, which is also
// the CNI bridge's gateway address.
func (c Config) NodeIP() netip.Addr { return c.NodeSubnet().Addr().Next() }

// APIServiceIP is the kubernetes Service's ClusterIP (first host of the
// Service range, as the API server allocates it).
func (c Config) APIServiceIP() netip.Addr { return c.ServiceCIDR.Addr().Next() }

// DNSServiceIP is the kube-dns Service's ClusterIP (the tenth address, as
// kubeadm does).
func (c Config) DNSServiceIP() netip.Addr {
	a := c.ServiceCIDR.Addr()
	for range 10 {
		a = a.Next()
	}
	return a
}

// APIServerURL is the URL every kubeconfig points at.
func (c Config) APIServerURL() string {
	return fmt.Sprintf("https://%s:%d", c.NodeIP(), APIServerPort)
}

// Layout is where things live under the state directory.
type Layout struct{ Root string }

// Layout returns the state directory's layout.
func (c Config) Layout() Layout { return Layout{Root: c.StateDir} }

func (l Layout) PKI() string             { return filepath.Join(l.Root, "pki") }
func (l Layout) Conf() string            { return filepath.Join(l.Root, "conf") }
func (l Layout) Logs() string            { return filepath.Join(l.Root, "logs") }
func (l Layout) Etcd() string            { return filepath.Join(l.Root, "etcd") }
func (l Layout) ContainerdRoot() string  { return filepath.Join(l.Root, "containerd", "root") }
func (l Layout) ContainerdState() string { return filepath.Join(l.Root, "containerd", "state") }
func (l Layout) ContainerdSocket() string {
	return filepath.Join(l.Root, "containerd", "containerd.sock")
}
func (l Layout) KubeletRoot() string        { return filepath.Join(l.Root, "kubelet") }
func (l Layout) PodLogs() string            { return filepath.Join(l.Root, "pod-logs") }
func (l Layout) CNIConfDir() string         { return filepath.Join(l.Root, "cni", "net.d") }
func (l Layout) CNIDataDir() string         { return filepath.Join(l.Root, "cni", "ipam") }
func (l Layout) CNIBinDir() string          { return filepath.Join(l.Root, "cni", "bin") }
func (l Layout) Images() string             { return filepath.Join(l.Root, "images") }
func (l Layout) AdminKubeconfig() string    { return filepath.Join(l.PKI(), "admin.kubeconfig") }
func (l Layout) Kubeconfig(c string) string { return filepath.Join(l.PKI(), c+".kubeconfig") }
func (l Layout) ConfFile(name string) string {
	return filepath.Join(l.Conf(), name)
}
