package steps

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sort"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/proxydump"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Zero duplicates means something only if the proxy retried: with the retry
// policy not applied (VirtualService not pushed, waypoint not bound) nothing
// can run twice, and the claim would be reproduced for the wrong reason. The
// retry spec therefore reads Envoy's retry counter for order before and after
// the run, on the proxy that applies the policy.

// RetryProxy is where mode m applies order's retry policy: the Envoy that
// routes order-client's requests, and the name of order's cluster there.
type RetryProxy struct {
	Selector string // pods of that proxy in the mode's namespace
	Cluster  string // Envoy cluster of order:8080
	What     string // for messages
}

// RetryProxyOf names the retrying proxy of mode m for namespace ns. Cluster
// names are Istio's (pilot/pkg/model BuildSubsetKey: direction|port|subset|host):
// a sidecar's outbound cluster outbound|8080||order.<ns>.svc.cluster.local;
// a waypoint's HTTP VIP cluster inbound-vip|8080|http|order.<ns>.svc.cluster.local
// (pilot/pkg/networking/core/cluster_waypoint.go, subset "http").
func RetryProxyOf(m mode.Mode, ns string) (RetryProxy, error) {
	host := fmt.Sprintf("%s.%s.svc.cluster.local", fixtures.OrderName, ns)
	switch m {
	case mode.Sidecar:
		return RetryProxy{Selector: fixtures.LabelApp + "=" + fixtures.OrderClientName,
			Cluster: fmt.Sprintf("outbound|%d||%s", fixtures.OrderPort, host), What: "order-client's sidecar"}, nil
	case mode.AmbientL7:
		return RetryProxy{Selector: scenario.LabelGatewayName + "=" + fixtures.WaypointName,
			Cluster: fmt.Sprintf("inbound-vip|%d|http|%s", fixtures.OrderPort, host), What: "the waypoint"}, nil
	default:
		return RetryProxy{}, fmt.Errorf("mode %s has no Envoy that applies a VirtualService's retries; accepted: %s, %s", m, mode.Sidecar, mode.AmbientL7)
	}
}

// StatPrefixDelimiter ends the stat name pilot gives every cluster it
// builds (cluster_builder.go: c.AltStatName = util.DelimitedStatsPrefix(name),
// constants.StatPrefixDelimiter), so Istio's stats tags can cut the cluster
// name out: Envoy's /stats then says
// "cluster.outbound|8080||order.<ns>.svc.cluster.local;.upstream_rq_retry"
// (seen on the local cluster's sidecars, and "cluster.xds-grpc;." from the
// bootstrap's alt_stat_name).
const StatPrefixDelimiter = ";"

// Counter is the stat's full name in Envoy's /stats.
func (p RetryProxy) Counter() string {
	return "cluster." + p.Cluster + StatPrefixDelimiter + "." + fixtures.RetryCounterSuffix
}

// RetryCounts reads p's retry counter on each of its pods in ns (pod name ->
// count). A pod without the counter is an error that says why it can lack it.
func RetryCounts(ctx context.Context, r *spec.Run, p RetryProxy) (map[string]uint64, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, err
	}
	pods, err := m.Kube.ReadyPods(ctx, r.Namespace(), p.Selector)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("no ready pod of %s (%s) in %s to read retries from", p.What, p.Selector, r.Namespace())
	}
	path := "/stats?filter=" + url.QueryEscape(regexp.QuoteMeta(fixtures.RetryCounterSuffix))
	out := map[string]uint64{}
	for _, pod := range pods {
		text, err := m.Kube.AdminGet(ctx, r.Namespace(), pod.Name, path)
		if err != nil {
			return nil, err
		}
		n, found, err := proxydump.EnvoyStat(text, p.Counter())
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", p.What, pod.Name, err)
		}
		if !found {
			return nil, fmt.Errorf("%s %s has no %s: order is not routed through it (policy not applied, waypoint not bound) or its stats matcher drops the counter (annotation %s missing)",
				p.What, pod.Name, p.Counter(), fixtures.AnnotationProxyConfig)
		}
		out[pod.Name] = n
	}
	return out, nil
}

// RetryDelta is how many retries the proxies made between two readings.
// A pod only in after started during the run and counts from zero; a pod
// only in before ended during the run and its last retries are not seen
// (named in lost). A counter that went down means a restarted proxy: error.
func RetryDelta(before, after map[string]uint64) (delta uint64, lost []string, err error) {
	for pod, a := range after {
		b := before[pod]
		if a < b {
			return 0, nil, fmt.Errorf("retry counter of %s went from %d to %d: the proxy restarted, the count is unknown", pod, b, a)
		}
		delta += a - b
	}
	for pod := range before {
		if _, ok := after[pod]; !ok {
			lost = append(lost, pod)
		}
	}
	sort.Strings(lost)
	return delta, lost, nil
}

// NoRetries is the precondition the duplicate count needs: some retry
// happened. It returns the unmet reason ("" when retries happened).
func NoRetries(p RetryProxy, delta uint64) string {
	if delta > 0 {
		return ""
	}
	return fmt.Sprintf("retries: %s counted 0 %s during the run; with no retry nothing can run twice, so zero duplicates shows nothing", p.What, p.Counter())
}
