package scenario

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/proxydump"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// This file replaces the fixed sleep after a policy change: each wait
// polls the configuration of the component that enforces the object — the
// server's sidecar Envoy for an AuthorizationPolicy in sidecar mode, the
// client's sidecar for a route (HTTPRoute, VirtualService) or
// DestinationRule, ztunnel for ambient L4 policy, the waypoint's Envoy for
// an ambient-l7 route or DestinationRule, kube-router's
// iptables rules for a NetworkPolicy on the local provider — until it has
// carried the change ConvergeTimes reads in a row (Timeouts.ConfigPushed).
// What is read is configuration, never traffic: the outcome a spec is
// about to measure plays no part in when its measurement starts.
//
// Where no component's configuration names the object (a PeerAuthentication
// in a sidecar's listeners, an HTTPRoute, VirtualService or DestinationRule
// in ambient-l4 where no L7 proxy exists, a NetworkPolicy on a CNI the suite cannot read), the wait is the
// documented bounded one (Timeouts.NetPolSettle), recorded as bounded.

// pushPolicy is the run's converging-wait policy.
func PushPolicy(r *spec.Run) converge.Policy {
	t := r.Env.Config.Timeouts
	return converge.Policy{Poll: t.ConvergePoll, Times: t.ConvergeTimes, Limit: t.ConfigPushed}
}

// AwaitApplied waits until the data plane of r's mode carries every one of
// objs (just applied), and records each wait.
func AwaitApplied(ctx context.Context, r *spec.Run, objs ...client.Object) error {
	return await(ctx, r, true, objs)
}

// ApplyAndAwait applies objs for the rest of the spec (Apply) and waits
// until the data plane carries them (AwaitApplied): what a spec does before
// measuring a policy's effect.
func ApplyAndAwait(ctx context.Context, r *spec.Run, objs ...client.Object) error {
	if err := Apply(ctx, r, objs...); err != nil {
		return err
	}
	return AwaitApplied(ctx, r, objs...)
}

// AwaitRemoved waits until the data plane of r's mode no longer carries
// objs (just deleted), and records each wait.
func AwaitRemoved(ctx context.Context, r *spec.Run, objs ...client.Object) error {
	return await(ctx, r, false, objs)
}

func await(ctx context.Context, r *spec.Run, present bool, objs []client.Object) error {
	m, err := ClusterOf(r)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		what, cond, bounded := pushedCondition(m, r, obj, present)
		var w converge.Wait
		if cond == nil {
			w, err = converge.Bounded(ctx, r.Env.Config.Timeouts.NetPolSettle, what, bounded)
		} else {
			w, err = converge.Until(ctx, PushPolicy(r), what, cond)
		}
		r.AddWait(w)
		if err != nil {
			return err
		}
		if what, cond := drainedCondition(m, obj, present); cond != nil {
			p := PushPolicy(r)
			p.Limit = r.Env.Config.Timeouts.FilterChainDrain
			w, err := converge.Until(ctx, p, what, cond)
			r.AddWait(w)
			if err != nil {
				return fmt.Errorf("%w (Envoy keeps a changed filter chain for connections accepted before the change until its drain time, Istio's proxyConfig.drainDuration, 45 s by default; a longer drainDuration needs -filter-chain-drain-timeout above it)", err)
			}
		}
	}
	return nil
}

// rbacEnvoys selects the Envoys that enforce AuthorizationPolicy obj in
// their RBAC filters: echo's sidecars in sidecar mode; in ambient-l7 the
// waypoint for a policy bound by targetRefs to a Service (pilot builds it
// into the waypoint's RBAC filters under the same policy names as a
// sidecar's). "" where no Envoy does (ztunnel enforces a selector policy).
func rbacEnvoys(obj client.Object) string {
	switch md := modeOfNamespace(obj.GetNamespace()); {
	case md == mode.Sidecar:
		return fixtures.LabelApp + "=" + fixtures.EchoName
	case md == mode.AmbientL7 && targetsService(obj):
		return LabelGatewayName + "=" + fixtures.WaypointName
	}
	return ""
}

// drainedCondition is, for an AuthorizationPolicy an Envoy enforces (echo's
// sidecars, the waypoint), the wait after its RBAC filter is carried until
// that Envoy holds no draining filter chains. Adding the filter is a
// filter-chain-only update: connections accepted before it stay on the old
// chain, without the filter, until they close or the drain time passes
// (framework/proxydump TestFilterChainUpdateServesOldConnectionsUntilDrained,
// on a real Envoy). A client's sidecar pools its upstream connections, so a
// client answered just before the policy (the previous spec's restore
// probe) would be answered again on the same connection, and a denial
// would be measured as allowed. The wait reads Envoy's listener manager
// gauge, not traffic. nil when the object is not such a policy or is being
// removed (the restore probe after a removal polls for the base outcome).
func drainedCondition(m *spec.Cluster, obj client.Object, present bool) (string, converge.Condition) {
	ns, name, kind := obj.GetNamespace(), obj.GetName(), kindOf(obj)
	if kind != "AuthorizationPolicy" || !present {
		return "", nil
	}
	selector := rbacEnvoys(obj)
	if selector == "" {
		return "", nil
	}
	who := "echo's sidecars"
	if modeOfNamespace(ns) == mode.AmbientL7 {
		who = "the waypoint's Envoy"
	}
	return fmt.Sprintf("%s to hold no filter chain from before AuthorizationPolicy %s/%s (%s 0): every connection is then accepted under the policy", who, ns, name, proxydump.FilterChainsDraining),
		envoyEachAt(m.Kube, ns, selector, proxydump.FilterChainsDrainingPath, true, func(stats string) (bool, string, error) {
			n, err := proxydump.EnvoyFilterChainsDraining(stats)
			if err != nil {
				return false, "", err
			}
			return n == 0, fmt.Sprintf("%d filter chain(s) draining", n), nil
		})
}

// kindOf is obj's kind: from TypeMeta (the fixtures set it) or, for a typed
// NetworkPolicy without it, its Go type.
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if _, ok := obj.(*networkingv1.NetworkPolicy); ok {
		return "NetworkPolicy"
	}
	return fmt.Sprintf("%T", obj)
}

// pushedCondition picks, for obj in r's mode, what to wait for and the
// condition; a nil condition means none can be read, and bounded says why.
func pushedCondition(m *spec.Cluster, r *spec.Run, obj client.Object, present bool) (string, converge.Condition, string) {
	ns, name, kind := obj.GetNamespace(), obj.GetName(), kindOf(obj)
	verb := map[bool]string{true: "carry", false: "drop"}[present]
	md := modeOfNamespace(ns)
	echo := fixtures.LabelApp + "=" + fixtures.EchoName
	clientSel := fixtures.LabelApp + "=" + fixtures.ClientName
	switch {
	case kind == "AuthorizationPolicy" && md == mode.Sidecar:
		return fmt.Sprintf("echo's sidecars to %s AuthorizationPolicy %s/%s in their RBAC filters", verb, ns, name),
			envoyEach(m.Kube, ns, rbacEnvoys(obj), present, func(d string) (bool, string, error) { return proxydump.EnvoyRBACPolicy(d, ns, name) }), ""
	case kind == "AuthorizationPolicy" && md == mode.AmbientL7 && targetsService(obj):
		return fmt.Sprintf("the waypoint's Envoy to %s AuthorizationPolicy %s/%s in its RBAC filters", verb, ns, name),
			envoyEach(m.Kube, ns, rbacEnvoys(obj), present, func(d string) (bool, string, error) { return proxydump.EnvoyRBACPolicy(d, ns, name) }), ""
	case kind == "AuthorizationPolicy" && md.Ambient():
		// A selector policy is ztunnel's to enforce, waypoint or not.
		return fmt.Sprintf("every ztunnel to %s AuthorizationPolicy %s/%s in its policies", verb, ns, name),
			ztunnelEach(m.Kube, present, func(d string) (bool, string, error) { return proxydump.ZtunnelHasPolicy(d, ns, name) }), ""
	case kind == "PeerAuthentication" && md.Ambient():
		key := ns + "/" + proxydump.ConvertedPeerAuthenticationPrefix + name
		if name == fixtures.PeerAuthStrictName {
			key = istioNamespace + "/" + proxydump.StaticStrictPolicy
		}
		return fmt.Sprintf("every ztunnel's echo workloads to %s a reference to %s (PeerAuthentication %s/%s)", verb, key, ns, name),
			ztunnelWorkloads(m.Kube, ns, echo, key, present), ""
	case kind == "PeerAuthentication":
		return fmt.Sprintf("PeerAuthentication %s/%s to reach the proxies", ns, name), nil,
			"no proxy configuration names a PeerAuthentication in mode " + string(md) + " (Envoy's inbound chains carry no object metadata): documented bounded wait"
	case kind == "DestinationRule" && md == mode.Sidecar:
		tls, set := drTLSMode(obj)
		if !set {
			// A rule without tls (a connection pool, say) leaves the
			// clusters' TLS to auto mTLS: only the rule's metadata says
			// it arrived.
			return fmt.Sprintf("the client's sidecar to %s DestinationRule %s/%s on its clusters", verb, ns, name),
				envoyEach(m.Kube, ns, clientSel, true, drClusters(ns, name, present, nil)), ""
		}
		mutual := tls != "DISABLE"
		return fmt.Sprintf("the client's sidecar to %s DestinationRule %s/%s on its clusters (TLS origination %v)", verb, ns, name, mutual),
			envoyEach(m.Kube, ns, clientSel, true, drClusters(ns, name, present, &mutual)), ""
	case kind == "DestinationRule" && md == mode.AmbientL7:
		// The waypoint's inbound-vip clusters carry the rule's metadata
		// (pilot/pkg/networking/core/cluster_waypoint.go); their TLS is
		// HBONE's whatever the rule says, so only the metadata is read.
		return fmt.Sprintf("the waypoint's Envoy to %s DestinationRule %s/%s on its clusters", verb, ns, name),
			envoyEach(m.Kube, ns, LabelGatewayName+"="+fixtures.WaypointName, true, drClusters(ns, name, present, nil)), ""
	case kind == "VirtualService" && md == mode.Sidecar:
		return fmt.Sprintf("the client's sidecar to %s routes from VirtualService %s/%s", verb, ns, name),
			envoyEach(m.Kube, ns, clientSel, present, func(d string) (bool, string, error) {
				return proxydump.EnvoyRouteFrom(d, proxydump.VirtualServiceFrom(ns, name))
			}), ""
	case kind == "VirtualService" && md == mode.AmbientL7:
		return fmt.Sprintf("the waypoint's Envoy to %s routes from VirtualService %s/%s", verb, ns, name),
			envoyEach(m.Kube, ns, LabelGatewayName+"="+fixtures.WaypointName, present, func(d string) (bool, string, error) {
				return proxydump.EnvoyRouteFrom(d, proxydump.VirtualServiceFrom(ns, name))
			}), ""
	case kind == "HTTPRoute" && md == mode.Sidecar:
		return fmt.Sprintf("the client's sidecar to %s routes from HTTPRoute %s/%s", verb, ns, name),
			envoyEach(m.Kube, ns, clientSel, present, func(d string) (bool, string, error) {
				return proxydump.EnvoyRouteFrom(d, proxydump.HTTPRouteFrom(ns, name, meshRouteNames(obj, ns)...))
			}), ""
	case kind == "HTTPRoute" && md == mode.AmbientL7:
		return fmt.Sprintf("the waypoint's Envoy to %s routes from HTTPRoute %s/%s", verb, ns, name),
			envoyEach(m.Kube, ns, LabelGatewayName+"="+fixtures.WaypointName, present, func(d string) (bool, string, error) {
				return proxydump.EnvoyRouteFrom(d, proxydump.HTTPRouteFrom(ns, name, meshRouteNames(obj, ns)...))
			}), ""
	case kind == "Telemetry" && md == mode.Sidecar:
		// The only Telemetry the suite applies turns on the client's access
		// log (fixtures.ClientAccessLog).
		return fmt.Sprintf("the client's sidecar to %s a file access log to /dev/stdout from Telemetry %s/%s", verb, ns, name),
			envoyEach(m.Kube, ns, clientSel, present, func(d string) (bool, string, error) {
				return proxydump.EnvoyFileAccessLog(d, "/dev/stdout")
			}), ""
	case kind == "NetworkPolicy" && r.Env.Config.Provider == "local":
		np, _ := obj.(*networkingv1.NetworkPolicy)
		return fmt.Sprintf("kube-router to %s iptables rules for NetworkPolicy %s/%s on the pods it selects", verb, ns, name),
			kubeRouterRules(m.Kube, np, present), ""
	case kind == "NetworkPolicy":
		return fmt.Sprintf("the CNI to program NetworkPolicy %s/%s", ns, name), nil,
			"provider " + r.Env.Config.Provider + ": the enforcer's rules are not readable from the test host (only the local provider's kube-router iptables are): documented bounded wait"
	}
	return fmt.Sprintf("%s %s/%s to reach mode %s's proxies", kind, ns, name, md), nil,
		"no proxy in mode " + string(md) + " carries a " + kind + " the suite can read: documented bounded wait"
}

// meshRouteNames are the merged VirtualService names of an HTTPRoute's
// Service parents (proxydump.MeshRouteName).
func meshRouteNames(obj client.Object, ns string) []string {
	hr, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok {
		return nil
	}
	var out []string
	for _, p := range hr.Spec.ParentRefs {
		if p.Kind == nil || *p.Kind != "Service" || p.Port == nil {
			continue
		}
		pns := ns
		if p.Namespace != nil {
			pns = string(*p.Namespace)
		}
		out = append(out, proxydump.MeshRouteName(pns, string(p.Name), int32(*p.Port)))
	}
	return out
}

// istioNamespace is Istio's root namespace, where the static strict policy lives.
const istioNamespace = "istio-system"

func modeOfNamespace(ns string) mode.Mode {
	for _, md := range mode.All() {
		if md.Namespace() == ns {
			return md
		}
	}
	return mode.None
}

// drTLSMode reads tls.mode off a DestinationRule fixture, typed or
// Unstructured (EchoTLS is Unstructured so that DISABLE is sent); set is
// false when the rule has no tls settings at all.
func drTLSMode(obj client.Object) (tlsMode string, set bool) {
	switch dr := obj.(type) {
	case *unstructured.Unstructured:
		tls, found, _ := unstructured.NestedMap(dr.Object, "spec", "trafficPolicy", "tls")
		if !found {
			return "", false
		}
		m, _ := tls["mode"].(string)
		if m == "" {
			m = "DISABLE" // the enum's zero value, dropped by protobuf JSON
		}
		return m, true
	case *istionetworkingv1.DestinationRule:
		tls := dr.Spec.GetTrafficPolicy().GetTls()
		if tls == nil {
			return "", false
		}
		return tls.GetMode().String(), true
	}
	return "", false
}

// drClusters checks an Envoy config_dump for clusters carrying
// DestinationRule ns/name's metadata: some (present) or none (!present),
// and when mutual is given, whether each of them originates TLS.
func drClusters(ns, name string, present bool, mutual *bool) func(string) (bool, string, error) {
	return func(d string) (bool, string, error) {
		c, err := proxydump.EnvoyClustersFrom(d, ns, name)
		if err != nil {
			return false, "", err
		}
		seen := fmt.Sprintf("clusters from the rule: %v, with TLS: %v", c.Clusters, c.WithTLS)
		switch {
		case !present:
			return len(c.Clusters) == 0, seen, nil
		case mutual == nil:
			return len(c.Clusters) > 0, seen, nil
		case *mutual:
			return len(c.Clusters) > 0 && len(c.WithTLS) == len(c.Clusters), seen, nil
		}
		return len(c.Clusters) > 0 && len(c.WithTLS) == 0, seen, nil
	}
}

// envoyEach holds when every ready pod matching selector has an Envoy
// config_dump for which check returns want.
func envoyEach(k *kube.Cluster, ns, selector string, want bool, check func(string) (bool, string, error)) converge.Condition {
	return envoyEachAt(k, ns, selector, "/config_dump", want, check)
}

// envoyEachAt holds when every ready pod matching selector answers admin
// path with a text for which check returns want.
func envoyEachAt(k *kube.Cluster, ns, selector, path string, want bool, check func(string) (bool, string, error)) converge.Condition {
	return func(ctx context.Context) (bool, string, error) {
		pods, err := k.ReadyPods(ctx, ns, selector)
		if err != nil {
			return false, "", err
		}
		if len(pods) == 0 {
			return false, "no ready pod matches " + selector, nil
		}
		var seen []string
		for _, p := range pods {
			dump, err := k.AdminGet(ctx, ns, p.Name, path)
			if err != nil {
				return false, "", err
			}
			got, s, err := check(dump)
			if err != nil {
				return false, "", fmt.Errorf("%s/%s: %w", ns, p.Name, err)
			}
			if got != want {
				return false, p.Name + ": " + s, nil
			}
			seen = append(seen, p.Name)
		}
		return true, "agreed: " + strings.Join(seen, ", "), nil
	}
}

// ztunnelEach holds when every ready ztunnel's config_dump gives want.
func ztunnelEach(k *kube.Cluster, want bool, check func(string) (bool, string, error)) converge.Condition {
	return envoyEach(k, istioNamespace, "app=ztunnel", want, check)
}

// ztunnelWorkloads holds when every ztunnel lists every ready pod of
// selector in ns as referencing key (want) or not (!want).
func ztunnelWorkloads(k *kube.Cluster, ns, selector, key string, want bool) converge.Condition {
	return func(ctx context.Context) (bool, string, error) {
		pods, err := k.ReadyPods(ctx, ns, selector)
		if err != nil {
			return false, "", err
		}
		names := make([]string, len(pods))
		for i, p := range pods {
			names[i] = p.Name
		}
		return ztunnelEach(k, true, func(d string) (bool, string, error) {
			return proxydump.ZtunnelWorkloadsReference(d, ns, names, key, want)
		})(ctx)
	}
}

// iptablesSave reads the filter table of the host the local provider's
// kube-router runs on — this one. A variable so tests can replace it.
var iptablesSave = func(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "iptables-save", "-t", "filter").Output()
	if err != nil {
		return "", fmt.Errorf("iptables-save -t filter: %w", err)
	}
	return string(out), nil
}

// kubeRouterRules holds when kube-router has (want) or has not programmed
// np on every running pod its podSelector selects.
func kubeRouterRules(k *kube.Cluster, np *networkingv1.NetworkPolicy, want bool) converge.Condition {
	return func(ctx context.Context) (bool, string, error) {
		if np == nil {
			return false, "", fmt.Errorf("not a typed NetworkPolicy")
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			return false, "", err
		}
		pods, err := k.ReadyPods(ctx, np.Namespace, sel.String())
		if err != nil {
			return false, "", err
		}
		var ips []string
		for _, p := range pods {
			ips = append(ips, p.Status.PodIP)
		}
		save, err := iptablesSave(ctx)
		if err != nil {
			return false, "", err
		}
		if want {
			return proxydump.KubeRouterPolicyRules(save, np.Name, ips)
		}
		var left []string
		for _, ip := range ips {
			found, _, err := proxydump.KubeRouterPolicyRules(save, np.Name, []string{ip})
			if err != nil {
				return false, "", err
			}
			if found {
				left = append(left, ip)
			}
		}
		if len(left) > 0 {
			return false, "kube-router rules for policy " + np.Name + " still on " + strings.Join(left, ", "), nil
		}
		return true, "no kube-router rules for policy " + np.Name + " on the selected pods", nil
	}
}

// targetsService reports whether an AuthorizationPolicy is bound by
// targetRefs to a Service (the waypoint's to enforce) rather than selecting
// workloads.
func targetsService(obj client.Object) bool {
	p, ok := obj.(*securityv1.AuthorizationPolicy)
	if !ok {
		return false
	}
	for _, ref := range p.Spec.GetTargetRefs() {
		if ref.GetKind() == "Service" {
			return true
		}
	}
	return p.Spec.GetTargetRef().GetKind() == "Service"
}

// LabelGatewayName is the label Istio puts on a Gateway's pods (waypoints too).
const LabelGatewayName = "gateway.networking.k8s.io/gateway-name"
