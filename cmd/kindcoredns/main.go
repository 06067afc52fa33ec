// Command kindcoredns is CoreDNS v1.14.2 (pinned in go.mod), the version
// kubeadm v1.36.3 deploys, with exactly the plugins kubeadm's Corefile
// names (cmd/kubeadm/app/phases/addons/dns/manifests.go): the kind node
// image (framework/kindnode) packs it as registry.k8s.io/coredns/coredns:v1.14.2.
// Upstream's full binary would pull every cloud SDK its other plugins use.
// forward sends what is not cluster.local to the node's resolver, as in
// any kubeadm cluster; the suite's traffic stays on the nodes' network.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins kubeadm's Corefile uses; each registers itself in init.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives is the execution order of the plugins above, the same
// relative order as upstream v1.14.2's plugin.cfg ("prometheus" is the
// metrics plugin's directive).
var directives = []string{"reload", "ready", "health", "prometheus", "errors", "loadbalance", "cache", "kubernetes", "loop", "forward"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
