// Package timeouts holds every wait of the suite in one struct
// (config.Timeouts is this type). It is a package of its own, importing
// nothing of the suite, so that packages config itself depends on (the
// Istio installer's tests) read the same limits without an import cycle.
package timeouts

import "time"

// Timeouts are every wait of the suite. Defaults suit kind on a laptop;
// EKS release qualification may raise them.
type Timeouts struct {
	ClusterCreate   time.Duration // kind create or local start
	IstioReady      time.Duration // istiod, CNI and ztunnel ready
	WorkloadsReady  time.Duration // Deployments of a mode available
	RolloutComplete time.Duration // GUIDE: kubectl rollout status --timeout=60s
	Probe           time.Duration // one probe request (plaintext, NetworkPolicy, ...)
	// NetPolSettle is the documented bounded wait after a policy changes
	// where no readable configuration names it (a NetworkPolicy on every
	// provider but local, where kube-router's iptables are polled).
	NetPolSettle time.Duration
	Cleanup      time.Duration // deleting the suite's namespaces
	ServiceReady time.Duration // kubeproxy.service-scale: one Service answering
	// ServicesSynced bounds the wait, after the scale claims created their
	// extra Services, until the last of them answers: the controller-manager
	// writes one EndpointSlice per Service at its API rate (20 requests/s
	// by default), so 10,000 take several minutes before kube-proxy has
	// them all.
	ServicesSynced time.Duration
	Quiet          time.Duration // a Service steady after a rollout: old pods gone (preStop 10 s + grace 40 s)
	ProxySync      time.Duration // kube-proxy/ztunnel to program endpoints that just settled
	GatewayReady   time.Duration // a Deployment istiod creates for a Gateway (ingress, waypoint) to appear and roll out, and a waypoint's Gateway to be Programmed with an address
	ProxyStart     time.Duration // a proxy process started here to serve its admin endpoint (Envoy's own tests)
	LogFlush       time.Duration // a line a container wrote to reach the log the kubelet serves (a log detector's control line)
	// PolicyRestore bounds the wait, after a spec removed its policy, until
	// a probe shows the base behaviour again (the next spec's precondition).
	PolicyRestore time.Duration
	// ConfigPushed bounds the wait, after a spec applied or removed an
	// Istio or NetworkPolicy object, until the proxies' admin dumps (or
	// the enforcer's rules) carry the change; ConvergePoll is how often
	// they are read and ConvergeTimes how many reads in a row must agree
	// (the Gateway API suite's RequiredConsecutiveSuccesses).
	ConfigPushed  time.Duration
	ConvergePoll  time.Duration
	ConvergeTimes int
	// FilterChainDrain bounds the wait, after an Envoy carries a new
	// AuthorizationPolicy, until it holds no filter chain from before it:
	// connections accepted earlier keep the old chain until Envoy's drain
	// time (Istio's proxyConfig.drainDuration, 45 s by default) passes.
	FilterChainDrain time.Duration
	// SummaryPoll is how often a kubelet's Summary API is read during a
	// load (resources.proxy-footprint): the kubelet refreshes container
	// stats every 10-15 s, so reading at 5 s misses none of its readings.
	SummaryPoll time.Duration
	// NetPolEnable bounds -netpol-enable-command (an EKS add-on update) and
	// the wait after it until kube-system/aws-node runs its network policy
	// agent enforcing on every node.
	NetPolEnable time.Duration
	// VMRun bounds one disposable VM (conntrack.table-full): boot, the
	// in-VM measurement and power-off; past it the VM's processes are
	// killed. VMQuiet bounds the in-VM wait until the conntrack table
	// holds fewer entries than HYBRID's threshold (500), read every
	// VMQuietPoll.
	VMRun       time.Duration
	VMQuiet     time.Duration
	VMQuietPoll time.Duration
	// ConntrackConnect is HYBRID's connect timeout for conntrack.table-full
	// ('接続タイムアウト5秒'): a connect not established within it counts
	// as failed. Part of the measured setup, so changing it changes what
	// is measured.
	ConntrackConnect time.Duration
}

// Default returns the defaults.
func Default() Timeouts {
	return Timeouts{
		ClusterCreate:    10 * time.Minute,
		IstioReady:       5 * time.Minute,
		WorkloadsReady:   5 * time.Minute,
		RolloutComplete:  60 * time.Second,
		Probe:            5 * time.Second,
		NetPolSettle:     10 * time.Second,
		Cleanup:          3 * time.Minute,
		ServiceReady:     60 * time.Second,
		ServicesSynced:   20 * time.Minute,
		Quiet:            3 * time.Minute,
		ProxySync:        2 * time.Second,
		GatewayReady:     3 * time.Minute,
		PolicyRestore:    90 * time.Second,
		ProxyStart:       30 * time.Second,
		LogFlush:         10 * time.Second,
		ConfigPushed:     60 * time.Second,
		ConvergePoll:     time.Second,
		ConvergeTimes:    3,
		FilterChainDrain: 2 * time.Minute,
		SummaryPoll:      5 * time.Second,
		VMRun:            3 * time.Minute,
		VMQuiet:          2 * time.Minute,
		VMQuietPoll:      100 * time.Millisecond,
		ConntrackConnect: 5 * time.Second,
		NetPolEnable:     15 * time.Minute,
	}
}
