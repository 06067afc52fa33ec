// Command coredns is CoreDNS v1.15.0 (pinned in go.mod) with only the
// plugins the local provider's cluster DNS uses. Building upstream's full
// binary pulls every cloud SDK its plugins use; a single-node test cluster
// answers cluster.local only, so the plugin list is cut to what its
// Corefile (framework/localk8s) names. No "forward": the cluster must not
// send queries to resolvers outside the host.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins the Corefile uses; each registers itself in init.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the execution order of the plugins above, the same
// relative order as upstream's plugin.cfg.
var directives = []string{"log", "errors", "health", "ready", "kubernetes", "cache", "loadbalance"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
