package localk8s

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Component is one supervised process: its name (log file, error messages),
// program and arguments.
type Component struct {
	Name string
	Path string
	Args []string
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	StopTimeout int
	// InNode marks a node component: Start runs it in the node's
	// namespaces (see nodeinit.go).
	InNode bool
	// Argv0 replaces argv[0] ("" keeps Path); Cloneflags are clone(2)
	// namespace flags. Both are the node init's.
	Argv0      string
	Cloneflags uintptr
	// SignalGroup makes Stop signal the process group (nsenter and the
	// component it forked into the node's namespaces), not the leader only.
	SignalGroup bool
}

// Component names, in start order.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Containerd            = "containerd"
	Kubelet               = "kubelet"
	KubeProxy             = "kube-proxy"
	KubeRouter            = "kube-router"
)

// Components returns the processes of cluster c in start order. Every
// listener binds the node IP or loopback, never all interfaces.
func Components(c Config) []Component {
	l := c.Layout()
	pki := func(f string) string { return filepath.Join(l.PKI(), f) }
	k8s := func(name string) string { return filepath.Join(filepath.Dir(c.K8sBinary), name) }
	node := c.NodeIP().String()
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(EtcdPort)
	comps := []Component{
		{Name: Etcd, Path: k8s(Etcd), StopTimeout: 10, Args: []string{
			"--name=" + c.NodeName,
			"--data-dir=" + l.Etcd(),
			"--listen-client-urls=" + etcdURL,
			"--advertise-client-urls=" + etcdURL,
			fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", EtcdPeerPort),
			fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", EtcdPeerPort),
			fmt.Sprintf("--initial-cluster=%s=http://127.0.0.1:%d", c.NodeName, EtcdPeerPort),
			// A test cluster's data is disposable: skip fsync so a
			// shared, slow disk does not stall the API server.
			"--unsafe-no-fsync=true",
			"--quota-backend-bytes=2147483648",
		}},
		// The API server waits for in-flight requests on SIGTERM, up to a
		// minute; nothing it holds needs that (etcd is stopped after it).
		{Name: KubeAPIServer, Path: k8s(KubeAPIServer), StopTimeout: 5, Args: []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=" + node,
			"--advertise-address=" + node,
			fmt.Sprintf("--secure-port=%d", APIServerPort),
			"--tls-cert-file=" + pki("apiserver.crt"),
			"--tls-private-key-file=" + pki("apiserver.key"),
			"--client-ca-file=" + pki("ca.crt"),
			"--service-account-key-file=" + pki("sa.pub"),
			"--service-account-signing-key-file=" + pki("sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-cluster-ip-range=" + c.ServiceCIDR.String(),
			"--authorization-mode=Node,RBAC",
			"--allow-privileged=true",
			"--kubelet-client-certificate=" + pki("apiserver-kubelet-client-client.crt"),
			"--kubelet-client-key=" + pki("apiserver-kubelet-client-client.key"),
			"--kubelet-preferred-address-types=InternalIP",
			"--enable-admission-plugins=NodeRestriction",
			"--profiling=false",
		}},
		{Name: KubeControllerManager, Path: k8s(KubeControllerManager), StopTimeout: 5, Args: []string{
			"--kubeconfig=" + l.Kubeconfig("controller-manager"),
			"--authentication-kubeconfig=" + l.Kubeconfig("controller-manager"),
			"--authorization-kubeconfig=" + l.Kubeconfig("controller-manager"),
			"--bind-address=127.0.0.1",
			"--service-account-private-key-file=" + pki("sa.key"),
			"--root-ca-file=" + pki("ca.crt"),
			"--use-service-account-credentials=true",
			"--cluster-signing-cert-file=" + pki("ca.crt"),
			"--cluster-signing-key-file=" + pki("ca.key"),
			"--service-cluster-ip-range=" + c.ServiceCIDR.String(),
			// The node's spec.podCIDR is what kube-router reads; the
			// first /24 the allocator hands out is the CNI's range.
			"--allocate-node-cidrs=true",
			"--cluster-cidr=" + c.PodCIDR.String(),
			"--node-cidr-mask-size=24",
			"--leader-elect=false",
			"--controllers=*",
			"--profiling=false",
		}},
		{Name: KubeScheduler, Path: k8s(KubeScheduler), StopTimeout: 5, Args: []string{
			"--config=" + l.ConfFile("scheduler.yaml"),
			"--authentication-kubeconfig=" + l.Kubeconfig("scheduler"),
			"--authorization-kubeconfig=" + l.Kubeconfig("scheduler"),
			"--bind-address=127.0.0.1",
		}},
		{Name: Containerd, Path: c.Containerd, StopTimeout: 10, InNode: true, Args: []string{
			"--config=" + l.ConfFile("containerd.toml"),
		}},
		{Name: Kubelet, Path: k8s(Kubelet), StopTimeout: 5, InNode: true, Args: []string{
			"--config=" + l.ConfFile("kubelet.yaml"),
			"--kubeconfig=" + l.Kubeconfig("kubelet"),
			"--root-dir=" + l.KubeletRoot(),
			"--hostname-override=" + c.NodeName,
			"--node-ip=" + node,
			"--v=1",
		}},
		{Name: KubeProxy, Path: k8s(KubeProxy), StopTimeout: 5, InNode: true, Args: []string{
			"--config=" + l.ConfFile("kube-proxy.yaml"),
		}},
	}
	if !c.DisableNetworkPolicy {
		comps = append(comps, Component{Name: KubeRouter, Path: c.KubeRouterBinary, StopTimeout: 5, InNode: true, Args: KubeRouterArgs(c)})
	}
	return comps
}

// KubeRouterArgs runs kube-router as a NetworkPolicy firewall only: the
// bridge CNI routes pods and kube-proxy serves Services.
func KubeRouterArgs(c Config) []string {
	return []string{
		"--kubeconfig=" + c.Layout().Kubeconfig("kube-router"),
		"--hostname-override=" + c.NodeName,
		"--run-firewall=true",
		"--run-router=false",
		"--run-service-proxy=false",
		"--enable-cni=false",
		"--enable-ipv4=true",
		"--enable-ipv6=false",
		"--service-cluster-ip-range=" + c.ServiceCIDR.String(),
		"--health-port=0",
		"--metrics-port=0",
		"--iptables-sync-period=30s",
		"--v=1",
	}
}
