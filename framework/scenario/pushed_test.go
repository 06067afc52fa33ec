package scenario

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

func fastTimeouts() config.Timeouts {
	t := config.DefaultTimeouts()
	t.ConvergePoll, t.ConvergeTimes, t.ConfigPushed, t.NetPolSettle = 5*time.Millisecond, 2, 200*time.Millisecond, time.Millisecond
	return t
}

func runIn(md mode.Mode, provider string, m *spec.Cluster) *spec.Run {
	env := &spec.Env{Config: &config.Config{Provider: provider, Timeouts: fastTimeouts()}, Cluster: m}
	return spec.NewRun(&claims.Claim{ID: "test.pushed"}, md, env, nil)
}

// Which component each object is awaited on, per mode: a readable
// condition where a proxy's dump names the object, the bounded wait
// (with its reason) where none does. The policies are the suite's own.
func TestPushedConditionChoosesTheEnforcer(t *testing.T) {
	cases := []struct {
		md       mode.Mode
		provider string
		obj      func(fixtures.Target) client.Object
		want     string // in what; "" = bounded
	}{
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGood(t) }, "echo's sidecars to carry AuthorizationPolicy meshclaims-sidecar/echo-allow-good"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGood(t) }, "every ztunnel to carry AuthorizationPolicy meshclaims-ambient-l4/echo-allow-good"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGood(t) }, "every ztunnel"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGoodWaypoint(t) }, "the waypoint's Envoy to carry AuthorizationPolicy meshclaims-ambient-l7/echo-allow-good-waypoint in its RBAC filters"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGoodFor(t, mode.AmbientL4) }, "every ztunnel to carry AuthorizationPolicy meshclaims-ambient-l4/echo-allow-good"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.PeerAuthPortPermissive(t) }, "meshclaims-ambient-l4/converted_peer_authentication_echo-port-permissive"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.PeerAuthStrict(t) }, "istio-system/istio_converted_static_strict"},
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.PeerAuthPortPermissive(t) }, ""},
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoTLS(t, true) }, "the client's sidecar to carry DestinationRule meshclaims-sidecar/echo-tls on its clusters (TLS origination true)"},
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryHTTPRoute(t, fixtures.DefaultSplit) }, "the client's sidecar to carry routes from HTTPRoute meshclaims-sidecar/echo-canary"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryHTTPRoute(t, fixtures.DefaultSplit) }, "the waypoint's Envoy"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryHTTPRoute(t, fixtures.DefaultSplit) }, ""},
		// issue 14's L7 policies: a rule or route is the client's
		// sidecar's or the waypoint's, and nothing's with ztunnel alone.
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoBreaker(t) }, "the client's sidecar to carry DestinationRule meshclaims-sidecar/echo-breaker on its clusters"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoBreaker(t) }, "the waypoint's Envoy to carry DestinationRule meshclaims-ambient-l7/echo-breaker on its clusters"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoBreaker(t) }, ""},
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoOutlierDetection(t) }, "the client's sidecar to carry DestinationRule meshclaims-sidecar/echo-outlier on its clusters"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoOutlierDetection(t) }, "the waypoint's Envoy to carry DestinationRule meshclaims-ambient-l7/echo-outlier on its clusters"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoOutlierDetection(t) }, ""},
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryMirrorRoute(t) }, "the client's sidecar to carry routes from HTTPRoute meshclaims-sidecar/echo-canary-mirror"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryMirrorRoute(t) }, "the waypoint's Envoy to carry routes from HTTPRoute meshclaims-ambient-l7/echo-canary-mirror"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryMirrorRoute(t) }, ""},
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoRetries(t) }, "the client's sidecar to carry routes from VirtualService meshclaims-sidecar/echo-retries"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoRetries(t) }, "the waypoint's Envoy to carry routes from VirtualService meshclaims-ambient-l7/echo-retries"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.EchoRetries(t) }, ""},
		{mode.Sidecar, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryHeaderRoute(t) }, "the client's sidecar to carry routes from HTTPRoute meshclaims-sidecar/"},
		{mode.AmbientL7, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryPathRoute(t) }, "the waypoint's Envoy to carry routes from HTTPRoute meshclaims-ambient-l7/"},
		{mode.AmbientL4, "kind", func(t fixtures.Target) client.Object { return fixtures.CanaryPathRoute(t) }, ""},
		{mode.Sidecar, "local", func(t fixtures.Target) client.Object { return fixtures.ClientAccessLog(t) }, "the client's sidecar to carry a file access log to /dev/stdout from Telemetry meshclaims-sidecar/client-access-log"},
		{mode.None, "local", func(t fixtures.Target) client.Object { return fixtures.NetpolDenyAll(t) }, "kube-router to carry iptables rules for NetworkPolicy meshclaims-none/"},
		{mode.None, "kind", func(t fixtures.Target) client.Object { return fixtures.NetpolDenyAll(t) }, ""},
		{mode.None, "existing", func(t fixtures.Target) client.Object { return fixtures.NetpolDenyAll(t) }, ""},
	}
	for _, c := range cases {
		r := runIn(c.md, c.provider, &spec.Cluster{})
		obj := c.obj(fixtures.Target{Namespace: c.md.Namespace(), Run: "t"})
		what, cond, bounded := pushedCondition(&spec.Cluster{}, r, obj, true)
		switch {
		case c.want == "" && (cond != nil || !strings.Contains(bounded, "documented bounded wait")):
			t.Errorf("%s %s on %s: want the bounded wait, got %q (bounded %q)", c.md, kindOf(obj), c.provider, what, bounded)
		case c.want != "" && (cond == nil || !strings.Contains(what, c.want)):
			t.Errorf("%s %s on %s: what = %q (cond %v, bounded %q), want %q", c.md, kindOf(obj), c.provider, what, cond != nil, bounded, c.want)
		}
	}
}

// Which AuthorizationPolicy applications also wait for the Envoy that
// enforces them to drain its filter chains from before: the sidecar and
// waypoint Envoys (an in-place filter chain update), not ztunnel, not a
// removal, not other kinds.
func TestDrainedConditionOnlyForEnvoyEnforcedPolicies(t *testing.T) {
	cases := []struct {
		md      mode.Mode
		obj     func(fixtures.Target) client.Object
		present bool
		want    string // in what; "" = no drain wait
	}{
		{mode.Sidecar, func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGood(t) }, true, "echo's sidecars to hold no filter chain from before AuthorizationPolicy meshclaims-sidecar/echo-allow-good (listener_manager.total_filter_chains_draining 0)"},
		{mode.Sidecar, func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGood(t) }, false, ""},
		{mode.AmbientL7, func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGoodWaypoint(t) }, true, "the waypoint's Envoy to hold no filter chain from before AuthorizationPolicy meshclaims-ambient-l7/echo-allow-good-waypoint"},
		{mode.AmbientL7, func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGood(t) }, true, ""},
		{mode.AmbientL4, func(t fixtures.Target) client.Object { return fixtures.AuthzAllowGood(t) }, true, ""},
		{mode.Sidecar, func(t fixtures.Target) client.Object { return fixtures.PeerAuthPortPermissive(t) }, true, ""},
		{mode.Sidecar, func(t fixtures.Target) client.Object { return fixtures.EchoRetries(t) }, true, ""},
	}
	for _, c := range cases {
		obj := c.obj(fixtures.Target{Namespace: c.md.Namespace(), Run: "t"})
		what, cond := drainedCondition(&spec.Cluster{}, obj, c.present)
		switch {
		case c.want == "" && cond != nil:
			t.Errorf("%s %s/%s present=%v: unexpected drain wait %q", c.md, kindOf(obj), obj.GetName(), c.present, what)
		case c.want != "" && (cond == nil || !strings.Contains(what, c.want)):
			t.Errorf("%s %s/%s present=%v: what = %q (cond %v), want %q", c.md, kindOf(obj), obj.GetName(), c.present, what, cond != nil, c.want)
		}
	}
}

// On a real API server, with the local provider's iptables replaced by
// kube-router output captured in its shape: the wait ends once the rules
// for every selected pod exist and records how long it took; the negative
// control — a policy kube-router has no rules for — times out naming what
// it waited for and what it saw.
func TestAwaitAppliedNetworkPolicyOnKubeRouter(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := kube.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := mode.None.Namespace()
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, ip := range []string{"10.244.0.12", "10.244.0.13"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-" + string(rune('a'+i)), Namespace: ns, Labels: map[string]string{fixtures.LabelApp: fixtures.EchoName}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo", Image: "meshclaims/workload:dev"}}}}
		created, err := k.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if _, err := k.Client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	save, err := os.ReadFile(filepath.Join("..", "proxydump", "testdata", "kube-router.iptables-save"))
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	old := iptablesSave
	iptablesSave = func(context.Context) (string, error) { reads++; return string(save), nil }
	t.Cleanup(func() { iptablesSave = old })

	policy := func(name string) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{fixtures.LabelApp: fixtures.EchoName}}, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	}
	r := runIn(mode.None, "local", &spec.Cluster{Kube: k})
	if err := AwaitApplied(ctx, r, policy("echo-app-port-only")); err != nil {
		t.Fatal(err)
	}
	w := r.Waits()
	if len(w) != 1 || w[0].Bounded || w[0].Polls != 2 || reads != 2 || !strings.Contains(w[0].Seen, "10.244.0.12, 10.244.0.13") {
		t.Fatalf("waits = %+v (reads %d)", w, reads)
	}
	// Removal is awaited on the same rules: they are still there.
	if err := AwaitRemoved(ctx, r, policy("echo-app-port-only")); err == nil || !strings.Contains(err.Error(), "still on 10.244.0.12, 10.244.0.13") {
		t.Fatalf("removal while the rules exist: %v", err)
	}
	err = AwaitApplied(ctx, r, policy("deny-all"))
	if err == nil || !strings.Contains(err.Error(), "kube-router to carry iptables rules for NetworkPolicy meshclaims-none/deny-all") ||
		!strings.Contains(err.Error(), "no kube-router jump to a KUBE-NWPLCY chain for policy deny-all") {
		t.Fatalf("negative control: %v", err)
	}
}

// A DestinationRule's TLS is awaited only when the rule sets it: the
// circuit breaker's pool sets none (auto mTLS decides the clusters'
// sockets), EchoTLS sets DISABLE or ISTIO_MUTUAL.
func TestDestinationRuleTLSMode(t *testing.T) {
	tg := fixtures.Target{Namespace: mode.Sidecar.Namespace(), Run: "t"}
	for _, c := range []struct {
		obj  client.Object
		mode string
		set  bool
	}{
		{fixtures.EchoBreaker(tg), "", false},
		{fixtures.EchoTLS(tg, false), "DISABLE", true},
		{fixtures.EchoTLS(tg, true), "ISTIO_MUTUAL", true},
	} {
		if m, set := drTLSMode(c.obj); m != c.mode || set != c.set {
			t.Errorf("%s: tls mode %q set %v, want %q %v", c.obj.GetName(), m, set, c.mode, c.set)
		}
	}
}

// The rule's clusters, read from a sidecar dump in upstream's shape (one
// cluster from DestinationRule echo-tls, with a TLS socket): present with
// or without a TLS expectation, not mutual=false; a rule no cluster carries
// is absent and never present.
func TestDRClustersReadsTheRulesMetadata(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "proxydump", "testdata", "sidecar_config_dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	dump, ns := string(b), mode.Sidecar.Namespace()
	yes, no := true, false
	for _, c := range []struct {
		name    string
		present bool
		mutual  *bool
		want    bool
	}{
		{"echo-tls", true, nil, true},
		{"echo-tls", true, &yes, true},
		{"echo-tls", true, &no, false},
		{"echo-tls", false, nil, false},
		{fixtures.EchoBreakerName, true, nil, false},
		{fixtures.EchoBreakerName, false, nil, true},
	} {
		got, seen, err := drClusters(ns, c.name, c.present, c.mutual)(dump)
		if err != nil || got != c.want {
			t.Errorf("%s present=%v mutual=%v: %v (%s, %v), want %v", c.name, c.present, c.mutual, got, seen, err, c.want)
		}
	}
}
