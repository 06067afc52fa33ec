package cluster

// Facts are what a provider knows of its cluster's nodes beyond what the
// API server shows: where the node's CNI keeps its plugins and
// configuration, whether the nodes are processes of this host, what runs
// on them that other programs must live with, and how much room they
// have. A provider states facts only; what a program installed on the
// nodes (a mesh, the workloads) makes of them is decided where that
// program is installed. The zero value is a cluster of which nothing
// beyond the defaults is known; providers that read the cluster (kind,
// existing) fill their facts in at Start.
type Facts struct {
	// HostProcesses: the nodes are processes of the host the suite runs
	// on (the local provider's node: namespaces of its own for PIDs and
	// mounts, the host's network namespace), so the host's ipsets,
	// iptables rules and nftables tables are the node's and can be read
	// from here, and the control plane, the node and the suite share the
	// host's cores.
	HostProcesses bool
	// NodesShareHost: the nodes are containers on one host (kind), and
	// each reports that host's cores as its capacity, so the cluster has
	// the cores of one node, not their sum.
	NodesShareHost bool
	// CNIBinDir and CNIConfDir are the node's CNI plugin and configuration
	// directories, where they are not the usual /opt/cni/bin and
	// /etc/cni/net.d ("" there or where unknown).
	CNIBinDir, CNIConfDir string
	// NetnsDir is where the node's container runtime keeps the pods'
	// network namespaces, as the node's own programs see the path (""
	// where unknown).
	NetnsDir string
	// IpsetRewriter names the program on the nodes (the cluster's CNI)
	// that rewrites every ipset of the host on each sync, so an entry
	// another program adds to its own set is lost at the next sync: a
	// kube-router before KubeRouterIpsetFix (kuberouter.go). "" when none
	// was found.
	IpsetRewriter string
	// Sizing says whether the nodes hold the suite's workloads at GUIDE's
	// CPU requests.
	Sizing Sizing
}

// Sizing is whether a cluster's nodes can schedule the suite's workloads
// at GUIDE's CPU request (50m per container).
type Sizing struct {
	// CPURequest is what each workload container requests instead, with
	// GUIDE's limits; "" keeps GUIDE's.
	CPURequest string
	// Why says, for the report, what about the nodes makes them too small
	// ("" with CPURequest "").
	Why string
}
