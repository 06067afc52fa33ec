package proxydump

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// EnvoyStat finds stat name in Envoy's admin /stats text output, one
// "name: value" line per counter or gauge (histograms and text readouts have
// other values and are skipped unless named). found is false when the proxy
// has no such stat: not in its stats matcher, or no such cluster.
func EnvoyStat(text, name string) (value uint64, found bool, err error) {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ": ")
		if !ok || k != name {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("stat %s: value %q is not a counter", name, v)
		}
		return n, true, nil
	}
	return 0, false, nil
}

// FilterChainsDraining is Envoy's listener manager gauge of filter chains
// still draining after a filter-chain-only listener update: a changed
// chain (Istio's inbound chain with an AuthorizationPolicy's RBAC filter
// added) replaces the old one for NEW connections only, and connections
// accepted before stay on the old chain, old filters and all, until they
// close or the drain time (--drain-time-s) passes. Envoy's
// network_filter_chain docs: "The connections owned by these destroying
// filter chains will be drained as described in listener drain." Istio's
// bootstrap keeps listener_manager stats (its default stats inclusion
// prefixes).
const FilterChainsDraining = "listener_manager.total_filter_chains_draining"

// FilterChainsDrainingPath is the admin path that reads only that gauge.
var FilterChainsDrainingPath = "/stats?filter=" + url.QueryEscape("^"+regexp.QuoteMeta(FilterChainsDraining)+"$")

// EnvoyFilterChainsDraining reads FilterChainsDraining from Envoy's /stats
// text; a proxy without the gauge is an error, never zero.
func EnvoyFilterChainsDraining(stats string) (int, error) {
	n, found, err := EnvoyStat(stats, FilterChainsDraining)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no %s in the proxy's stats (its stats matcher drops listener_manager?); read: %.200q", FilterChainsDraining, stats)
	}
	return int(n), nil
}
