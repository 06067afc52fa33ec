package istiod_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/hbone"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/istiod"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/proxydump"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/setup/setuptest"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// The negative controls' namespaces: the same waypoint Gateway without
// upstream Envoy's EnvoyFilters, and with the peer-metadata one only.
const (
	unadaptedNamespace        = "meshclaims-waypoint-unadapted"
	peerMetadataOnlyNamespace = "meshclaims-waypoint-peer-metadata-only"
)

// TestWaypointOnLocalCluster runs ambient-l7's waypoint as the suite
// deploys it on upstream Envoy, without ztunnel (no registry this project
// builds from ships its image): istiod from make istio-images, installed
// with the ambient profile's istiod chart (base and istiod only) and the
// upstream-Envoy settings, creates the waypoint's Deployment for the
// Gateway of class istio-waypoint, and its pod runs the project's proxyv2
// (pilot-agent `proxy waypoint`, upstream Envoy 1.38.3, the image's
// template without metadata_discovery). It shows:
//   - the waypoint comes up Ready and its Envoy holds istiod's listeners
//     (connect_terminate, main_internal) with no LDS or CDS update
//     rejected, none of Istio's peer-metadata filters, connect_authority
//     on envoy.hashable_string, and no inner_connect_originate (read from
//     its own admin /stats and /config_dump);
//   - negative control: the same Gateway in a namespace without the
//     EnvoyFilters: its Envoy rejects istiod's listeners (update_rejected
//     counted, connect_terminate never active, the reason in its log);
//   - a client speaking HBONE to the waypoint's 15008 (mutual TLS with a
//     certificate istiod's CA issued for sa/good over 15012, HTTP/2
//     CONNECT to echo's Service address) gets echo's answer through
//     the waypoint's route (a named echo pod, Envoy's server header);
//   - an AuthorizationPolicy bound to Service echo (ALLOW sa/good): sa/bad
//     gets 403 from the waypoint, sa/good still 200 (and sa/bad got 200
//     before the policy, so the 403 is the policy's);
//   - a VirtualService retrying 5xx: a request echo fails with 500 is
//     retried by the waypoint (its upstream_rq_retry goes up by the
//     policy's attempts), and the same request before the policy is not
//     retried (the counter stays).
//
// How the waypoint reaches echo without ztunnel: istiod gives the waypoint
// HBONE endpoints only for workloads whose tunnel protocol is HBONE (pod
// annotation ambient.istio.io/redirection=enabled, written by istio-cni
// when it captures a pod, or the tunnel label); echo's pods carry neither
// here, so their endpoints are plain pod addresses and the waypoint sends
// them plaintext HTTP (pilot/pkg/xds/endpoints supportTunnel;
// pilot/pkg/serviceregistry/ambient setTunnelProtocol). The test checks
// that on the waypoint's cluster (echo's endpoints are the pods' own
// addresses, not the connect_originate internal listener) and on echo's
// side (the request comes from the waypoint's pod address). In ambient-l7
// proper, ztunnel would carry that hop as HBONE.
//
// Runs with MESHCLAIMS_LOCAL=1 as root, MESHCLAIMS_ISTIO_IMAGES and
// MESHCLAIMS_ISTIO_CHARTS; make e2e-local sets all three.
func TestWaypointOnLocalCluster(t *testing.T) {
	setuptest.RequireLocal(t, "a waypoint on upstream Envoy")
	l := setuptest.Up(t, append([]string{"-mode=none", "-cluster-name=meshclaims-waypoint", "-run-id=waypoint"}, setuptest.IstioFlags(t)...)...)
	ctx := context.Background()
	s, cfg := l.Suite, l.Config
	t0 := time.Now()
	if err := s.InstallIstioCharts(ctx, istio.ProfileAmbient, istio.ChartBase, istio.ChartIstiod); err != nil {
		t.Fatalf("installing istiod: %v", err)
	}
	t.Logf("istiod (ambient profile, no ztunnel) installed and ready in %s", time.Since(t0).Round(time.Second))
	k, applier := s.Cluster.Kube, s.Cluster.Applier
	opts := s.Cluster.Options
	env := s.Environment()
	// The set-up read the archive's proxyv2 as upstream Envoy and chose the
	// adaptations from it: the EnvoyFilters (fixtures), istiod's setting,
	// and the report's account of them.
	if !opts.UpstreamEnvoyWaypoint || env.Proxy == nil || env.Proxy.Kind != string(istio.ProxyUpstreamEnvoy) {
		t.Fatalf("the set-up did not take the archive's proxyv2 for upstream Envoy: fixtures %v, proxy %+v", opts.UpstreamEnvoyWaypoint, env.Proxy)
	}
	if !slices.Contains(env.Proxy.IstiodSettings, "AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false") || len(env.Proxy.Waypoint) == 0 {
		t.Errorf("the environment does not state the waypoint's adaptations: %+v", env.Proxy)
	}
	if err := waitWebhooksPatched(ctx, applier.Client(), cfg.Timeouts.IstioReady); err != nil {
		t.Fatal(err)
	}

	ns := mode.AmbientL7.Namespace()
	tg := fixtures.Target{Namespace: ns, Run: cfg.RunID}
	ctl := fixtures.Target{Namespace: unadaptedNamespace, Run: cfg.RunID}
	ctlNS := fixtures.Namespace(mode.AmbientL7, cfg.RunID)
	ctlNS.Name = unadaptedNamespace
	pm := fixtures.Target{Namespace: peerMetadataOnlyNamespace, Run: cfg.RunID}
	pmNS := fixtures.Namespace(mode.AmbientL7, cfg.RunID)
	pmNS.Name = peerMetadataOnlyNamespace
	// echo first, so its endpoints exist when the waypoint starts; then the
	// EnvoyFilters, then the Gateways (ForMode's order).
	backend := []client.Object{
		fixtures.Namespace(mode.AmbientL7, cfg.RunID), ctlNS, pmNS,
		fixtures.ServiceAccount(tg, fixtures.ServiceAccountGood), fixtures.ServiceAccount(tg, fixtures.ServiceAccountBad),
		fixtures.EchoService(tg), fixtures.Echo(tg, opts.Images, 2),
	}
	if err := applier.Apply(ctx, backend...); err != nil {
		t.Fatal(err)
	}
	if err := k.WaitAvailable(ctx, ns, cfg.Timeouts.WorkloadsReady, fixtures.EchoName); err != nil {
		t.Fatal(err)
	}
	// The waypoint's objects as the suite deploys ambient-l7 (ForMode with
	// the set-up's options): the EnvoyFilters, then the Gateway.
	set, err := fixtures.ForMode(mode.AmbientL7, opts)
	if err != nil {
		t.Fatal(err)
	}
	var waypoint []client.Object
	var order []string
	for _, o := range set {
		switch o.(type) {
		case *networkingv1alpha3.EnvoyFilter, *gatewayv1.Gateway:
			waypoint = append(waypoint, o)
			order = append(order, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
		}
	}
	if len(waypoint) != 3 || !strings.HasPrefix(order[2], "Gateway/") {
		t.Fatalf("ambient-l7's waypoint objects: %v, want two EnvoyFilters before the Gateway", order)
	}
	waypoint = waypoint[:2] // its Gateway is applied with the controls' below
	peerMetadataOnly := fixtures.UpstreamEnvoyWaypointFilters(pm, fixtures.WaypointName)[0]
	if peerMetadataOnly.Name != fixtures.WaypointPeerMetadataFilterName {
		t.Fatalf("first upstream-Envoy EnvoyFilter is %s, want %s", peerMetadataOnly.Name, fixtures.WaypointPeerMetadataFilterName)
	}
	waypoint = append(waypoint, peerMetadataOnly, fixtures.Waypoint(tg), fixtures.Waypoint(ctl), fixtures.Waypoint(pm))
	t1 := time.Now()
	if err := applier.Apply(ctx, waypoint...); err != nil {
		t.Fatal(err)
	}

	wpSelector := scenario.LabelGatewayName + "=" + fixtures.WaypointName
	t.Run("ready", func(t *testing.T) {
		if err := istio.WaitWaypoint(ctx, s.Cluster.Kube, s.Cluster.Applier.Client(), ns, fixtures.WaypointName, cfg.Timeouts.GatewayReady); err != nil {
			t.Fatal(err)
		}
		t.Logf("waypoint %s/%s: Deployment available and Gateway Programmed %s after the Gateway was applied", ns, fixtures.WaypointName, time.Since(t1).Round(time.Second))
	})
	if t.Failed() {
		dumpWaypoint(t, k, ns, wpSelector)
		t.FailNow()
	}
	pods, err := k.ReadyPods(ctx, ns, wpSelector)
	if err != nil || len(pods) != 1 {
		t.Fatalf("ready waypoint pods in %s: %d (%v)", ns, len(pods), err)
	}
	wp := pods[0]

	t.Run("istiod-created-it", func(t *testing.T) {
		// The Deployment is istiod's (its gateway controller's field
		// manager and the Gateway as owner), the pod runs the archive's
		// proxyv2 as `proxy waypoint`.
		var proxy *corev1.Container
		for i := range wp.Spec.Containers {
			if wp.Spec.Containers[i].Name == istiod.ProxyContainer {
				proxy = &wp.Spec.Containers[i]
			}
		}
		if proxy == nil || !slices.Contains(proxy.Args, "waypoint") {
			t.Fatalf("waypoint pod %s has no %s container running `proxy waypoint`: %+v", wp.Name, istiod.ProxyContainer, wp.Spec.Containers)
		}
		want := archiveConfigDigest(t, "proxyv2")
		for _, st := range wp.Status.ContainerStatuses {
			if st.Name == istiod.ProxyContainer && !strings.HasSuffix(st.ImageID, want) {
				t.Errorf("waypoint runs image %s (ID %s), not the archive's proxyv2 %s", st.Image, st.ImageID, want)
			}
		}
		d, err := k.Client.AppsV1().Deployments(ns).Get(ctx, fixtures.WaypointName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var owner string
		for _, o := range d.OwnerReferences {
			owner = o.Kind + "/" + o.Name
		}
		var managers []string
		for _, m := range d.ManagedFields {
			managers = append(managers, m.Manager)
		}
		if owner != "Gateway/"+fixtures.WaypointName || !slices.Contains(managers, "istio.io/gateway-controller") {
			t.Errorf("Deployment %s/%s: owner %q, field managers %v; want the Gateway and istiod's gateway controller", ns, d.Name, owner, managers)
		}
		t.Logf("waypoint pod %s (%s) runs %s %v, image %s", wp.Name, wp.Status.PodIP, istiod.ProxyContainer, proxy.Args, proxy.Image)
	})

	t.Run("listeners-accepted", func(t *testing.T) {
		stats, err := k.AdminGet(ctx, ns, wp.Name, "/stats?filter="+url.QueryEscape(`^(listener_manager\.lds|cluster_manager\.cds)\.update_`))
		if err != nil {
			t.Fatal(err)
		}
		keepDump(t, "waypoint_xds_stats.txt", stats)
		u, err := proxydump.XDSUpdates(stats)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("waypoint xDS updates: %v", u)
		if u[proxydump.LDSUpdateRejected] != 0 || u[proxydump.CDSUpdateRejected] != 0 || u[proxydump.LDSUpdateSuccess] == 0 || u[proxydump.CDSUpdateSuccess] == 0 {
			t.Errorf("the waypoint's Envoy rejected istiod's configuration (or took none): %v", u)
		}
		dump, err := k.AdminGet(ctx, ns, wp.Name, "/config_dump")
		if err != nil {
			t.Fatal(err)
		}
		keepDump(t, "waypoint_config_dump.json", dump)
		ls, err := proxydump.EnvoyListeners(dump)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("active listeners %v; not active %v; HTTP filters %v; factory keys %v", ls.Active, ls.NotActive, ls.HTTPFilters, ls.FactoryKeys)
		if len(ls.Failed) != 0 {
			t.Errorf("the waypoint's Envoy refused listeners: %v", ls.Failed)
		}
		for _, want := range []string{fixtures.ConnectTerminateListener, "main_internal"} {
			if !slices.Contains(ls.Active, want) {
				t.Errorf("listener %s not active on the waypoint", want)
			}
		}
		for _, gone := range []string{fixtures.WaypointDownstreamPeerMetadata, fixtures.WaypointUpstreamPeerMetadata} {
			if slices.Contains(ls.HTTPFilters, gone) {
				t.Errorf("HTTP filter %s is on the waypoint; the EnvoyFilter removes it", gone)
			}
		}
		if !slices.Contains(ls.HTTPFilters, fixtures.ConnectAuthorityFilter) || !slices.Contains(ls.FactoryKeys, fixtures.EnvoyHashableString) || slices.Contains(ls.FactoryKeys, "istio.hashable_string") {
			t.Errorf("connect_authority not on %s: filters %v, factory keys %v", fixtures.EnvoyHashableString, ls.HTTPFilters, ls.FactoryKeys)
		}
		if slices.Contains(append(ls.Active, ls.NotActive...), "inner_connect_originate") {
			t.Errorf("inner_connect_originate is on the waypoint despite AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false")
		}
		// The bootstrap pilot-agent wrote from the image's template.
		if strings.Contains(dump, "istio.workload.BootstrapExtension") {
			t.Errorf("the waypoint's bootstrap has Istio's metadata_discovery extension")
		}
	})

	t.Run("unadapted-rejected", func(t *testing.T) {
		// Negative control: no EnvoyFilter. Envoy refuses both HTTP
		// listeners for the peer-metadata filters it does not have.
		refused(t, k, unadaptedNamespace, wpSelector, cfg.Timeouts.GatewayReady, "waypoint_unadapted", map[string]string{
			fixtures.ConnectTerminateListener: fixtures.WaypointDownstreamPeerMetadata,
			"main_internal":                   fixtures.WaypointUpstreamPeerMetadata,
		}, nil)
	})
	t.Run("peer-metadata-only-rejected", func(t *testing.T) {
		// Negative control for the second EnvoyFilter: with the
		// peer-metadata filters removed but connect_authority left on
		// Istio's factory key, main_internal is taken and connect_terminate
		// refused: upstream Envoy has no istio.hashable_string factory, and
		// says so of the first value using it ("'io.istio.connect_authority'
		// does not have an object factory").
		refused(t, k, peerMetadataOnlyNamespace, wpSelector, cfg.Timeouts.GatewayReady, "waypoint_peer_metadata_only", map[string]string{
			fixtures.ConnectTerminateListener: "'io.istio.connect_authority' does not have an object factory",
		}, []string{"main_internal"})
	})

	// HBONE clients as sa/good and sa/bad, certificates from istiod's CA.
	rootPEM, err := waitRootCert(ctx, k.Client, ns, cfg.Timeouts.IstioReady)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := istiod.RootPool(rootPEM)
	if err != nil {
		t.Fatal(err)
	}
	istiodPods, err := k.ReadyPods(ctx, istio.DefaultNamespace, "app=istiod")
	if err != nil || len(istiodPods) == 0 {
		t.Fatalf("no ready istiod pod: %v", err)
	}
	ca := istiod.CA{Addr: istiodPods[0].Status.PodIP + ":15012", ServerName: "istiod." + istio.DefaultNamespace + ".svc", ClusterID: "Kubernetes", Roots: roots}
	wpID := istiod.SPIFFEID("cluster.local", ns, wp.Spec.ServiceAccountName)
	client := func(sa string) hbone.Client {
		t.Helper()
		id := istiod.SPIFFEID("cluster.local", ns, sa)
		csr, key, err := istiod.CSRWithKey(id)
		if err != nil {
			t.Fatal(err)
		}
		token, err := istiod.ServiceAccountToken(ctx, k.Client, ns, sa, istiod.TokenAudience)
		if err != nil {
			t.Fatal(err)
		}
		chain, err := ca.Sign(ctx, token, csr, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := istiod.CheckIssued(chain, id, roots); err != nil {
			t.Fatal(err)
		}
		return hbone.Client{Chain: chain, Key: key, Roots: roots, PeerID: wpID}
	}
	good, bad := client(fixtures.ServiceAccountGood), client(fixtures.ServiceAccountBad)
	svc, err := k.Client.CoreV1().Services(ns).Get(ctx, fixtures.EchoName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	authority := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(fixtures.EchoHTTPPort))
	wpAddr := net.JoinHostPort(wp.Status.PodIP, strconv.Itoa(hbone.Port))
	host := fmt.Sprintf("%s.%s.svc.cluster.local:%d", fixtures.EchoName, ns, fixtures.EchoHTTPPort)
	echoCluster := fmt.Sprintf("inbound-vip|%d|http|%s.%s.svc.cluster.local", fixtures.EchoHTTPPort, fixtures.EchoName, ns)
	echoPods, err := k.ReadyPods(ctx, ns, fixtures.LabelApp+"="+fixtures.EchoName)
	if err != nil || len(echoPods) == 0 {
		t.Fatalf("no ready echo pod: %v", err)
	}
	// Precondition: the waypoint has echo's endpoints (its EDS), each a
	// plain pod address.
	if err := waitEndpoints(ctx, k, ns, wp.Name, echoCluster, echoPods, cfg.Timeouts.ProxySync); err != nil {
		t.Fatal(err)
	}
	get := func(c hbone.Client, path string) (*http.Response, string, error) {
		tun, err := c.Connect(ctx, wpAddr, authority)
		if err != nil {
			return nil, "", err
		}
		defer tun.Close()
		if tun.Status != http.StatusOK {
			return nil, "", fmt.Errorf("CONNECT %s via %s answered %d", authority, wpAddr, tun.Status)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+path, nil)
		if err != nil {
			return nil, "", err
		}
		resp, body, err := tun.HTTP(req)
		return resp, string(body), err
	}

	t.Run("hbone-route", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cl   hbone.Client
		}{{"good", good}, {"bad", bad}} {
			resp, body, err := get(c.cl, fixtures.DebugPath)
			if err != nil {
				t.Fatalf("sa/%s: %v", c.name, err)
			}
			var answered string
			for _, p := range echoPods {
				if strings.Contains(body, p.Name) {
					answered = p.Name
				}
			}
			if resp.StatusCode != 200 || answered == "" || resp.Header.Get("server") != "istio-envoy" {
				t.Errorf("sa/%s through the waypoint: %d, server %q, body %.300q; want 200 from an echo pod through Envoy", c.name, resp.StatusCode, resp.Header.Get("server"), body)
				continue
			}
			// echo saw the request come from the waypoint's pod address:
			// plaintext from the waypoint, no ztunnel in between.
			if !strings.Contains(body, "request from "+wp.Status.PodIP+":") {
				t.Errorf("sa/%s: echo's debug page does not show the waypoint %s as the peer: %.400q", c.name, wp.Status.PodIP, body)
			}
			t.Logf("sa/%s: HBONE to %s, CONNECT %s, GET %s -> %d from %s (server %s, x-envoy-upstream-service-time %s)", c.name, wpAddr, authority, fixtures.DebugPath,
				resp.StatusCode, answered, resp.Header.Get("server"), resp.Header.Get("x-envoy-upstream-service-time"))
		}
	})

	retryCounter := steps.RetryProxy{Cluster: echoCluster}.Counter()
	retries := func(t *testing.T) uint64 {
		t.Helper()
		text, err := k.AdminGet(ctx, ns, wp.Name, "/stats?filter="+url.QueryEscape(regexp.QuoteMeta(fixtures.RetryCounterSuffix)))
		if err != nil {
			t.Fatal(err)
		}
		n, found, err := proxydump.EnvoyStat(text, retryCounter)
		if err != nil || !found {
			t.Fatalf("the waypoint has no %s (%v); its stats: %.500q", retryCounter, err, text)
		}
		return n
	}
	failing := "/?" + fixtures.EchoFlakyQueryParam + "=" + strconv.Itoa(fixtures.FlakyStatus)

	t.Run("retry", func(t *testing.T) {
		// Negative control: without the policy a 500 is not retried (Istio's
		// default retry policy lists no status code).
		before := retries(t)
		resp, _, err := get(good, failing)
		if err != nil {
			t.Fatal(err)
		}
		if after := retries(t); resp.StatusCode != fixtures.FlakyStatus || after != before {
			t.Errorf("without a retry policy: %d, retries %d -> %d; want %d and no retry", resp.StatusCode, before, after, fixtures.FlakyStatus)
		}
		if err := applier.Apply(ctx, fixtures.EchoRetries(tg)); err != nil {
			t.Fatal(err)
		}
		if err := waitDump(ctx, k, ns, wp.Name, cfg.Timeouts.ProxySync, "route from VirtualService "+fixtures.EchoRetriesName, func(dump string) (bool, string, error) {
			return proxydump.EnvoyRouteFrom(dump, proxydump.VirtualServiceFrom(ns, fixtures.EchoRetriesName))
		}); err != nil {
			t.Fatal(err)
		}
		before = retries(t)
		resp, _, err = get(good, failing)
		if err != nil {
			t.Fatal(err)
		}
		after := retries(t)
		if resp.StatusCode != fixtures.FlakyStatus || after-before != fixtures.EchoRetryAttempts {
			t.Errorf("with VirtualService %s (attempts %d on %s): %d, retries %d -> %d; want %d after %d retries",
				fixtures.EchoRetriesName, fixtures.EchoRetryAttempts, fixtures.EchoRetryOn, resp.StatusCode, before, after, fixtures.FlakyStatus, fixtures.EchoRetryAttempts)
		}
		t.Logf("retries: %s went %d -> %d for one request echo always fails", retryCounter, before, after)
	})

	t.Run("authorization", func(t *testing.T) {
		if err := applier.Apply(ctx, fixtures.AuthzAllowGoodWaypoint(tg)); err != nil {
			t.Fatal(err)
		}
		if err := waitDump(ctx, k, ns, wp.Name, cfg.Timeouts.ProxySync, "RBAC policy "+fixtures.AuthzAllowGoodWaypointName, func(dump string) (bool, string, error) {
			return proxydump.EnvoyRBACPolicy(dump, ns, fixtures.AuthzAllowGoodWaypointName)
		}); err != nil {
			t.Fatal(err)
		}
		resp, body, err := get(bad, fixtures.DebugPath)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("sa/bad with ALLOW sa/good bound to Service echo: %d %.200q, want 403 from the waypoint", resp.StatusCode, body)
		} else {
			t.Logf("sa/bad: %d %q", resp.StatusCode, strings.TrimSpace(body))
		}
		// Positive control: the allowed principal still gets through.
		resp, _, err = get(good, fixtures.DebugPath)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("sa/good with ALLOW sa/good: %d, want 200", resp.StatusCode)
		}
	})

	t.Run("clean-up", func(t *testing.T) { cleanedUp(t, l, k, ns) })
}

// refused waits for the waypoint pod of ns to run and its Envoy to have
// answered one listener push (taken or refused: a precondition, not the
// outcome), then requires: LDS updates rejected, each listener of
// wantFailed refused with Envoy's reason naming its value and not active,
// each of wantActive active, and the rejection in the proxy's log. keep
// names the dumps kept for proxydump's testdata ("" keeps none).
func refused(t *testing.T, k *kube.Cluster, ns, selector string, timeout time.Duration, keep string, wantFailed map[string]string, wantActive []string) {
	t.Helper()
	ctx := context.Background()
	statsPath := "/stats?filter=" + url.QueryEscape(`^(listener_manager\.lds|cluster_manager\.cds)\.update_`)
	var pod, stats, why string
	var u map[string]uint64
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pod = p.Name
			}
		}
		if pod == "" {
			why = fmt.Sprintf("%d pods, none running", len(list.Items))
			return false, nil
		}
		if stats, err = k.AdminGet(ctx, ns, pod, statsPath); err != nil {
			why = err.Error()
			return false, nil
		}
		if u, err = proxydump.XDSUpdates(stats); err != nil {
			why = err.Error()
			return false, nil
		}
		why = fmt.Sprint(u)
		return u[proxydump.LDSUpdateSuccess]+u[proxydump.LDSUpdateRejected] > 0, nil
	})
	if err != nil {
		t.Fatalf("the waypoint of %s answered no listener push: %s: %v", ns, why, err)
	}
	t.Logf("%s waypoint %s xDS updates: %v", ns, pod, u)
	if u[proxydump.LDSUpdateRejected] == 0 {
		t.Errorf("%s: no listener update rejected: %v; the adaptation would then prove nothing", ns, u)
	}
	dump, err := k.AdminGet(ctx, ns, pod, "/config_dump")
	if err != nil {
		t.Fatal(err)
	}
	if keep != "" {
		keepDump(t, keep+"_config_dump.json", dump)
		keepDump(t, keep+"_xds_stats.txt", stats)
	}
	ls, err := proxydump.EnvoyListeners(dump)
	if err != nil {
		t.Fatal(err)
	}
	for name, reason := range wantFailed {
		if why, ok := ls.Failed[name]; !ok || !strings.Contains(why, reason) {
			t.Errorf("%s: listener %s refused for %q, want a reason naming %s (refused: %v)", ns, name, why, reason, ls.Failed)
		} else {
			t.Logf("%s: Envoy refused %s: %.300s", ns, name, why)
		}
		if slices.Contains(ls.Active, name) {
			t.Errorf("%s: listener %s is active", ns, name)
		}
	}
	for _, name := range wantActive {
		if !slices.Contains(ls.Active, name) {
			t.Errorf("%s: listener %s not active (active %v, refused %v)", ns, name, ls.Active, ls.Failed)
		}
	}
	logs, err := k.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: istiod.ProxyContainer}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "Listener rejected") {
		t.Errorf("%s: the waypoint's log names no rejected listener update", ns)
	}
}

// cleanedUp runs the run's clean-up (the suite's, as at the end of a run)
// and requires the upstream-Envoy EnvoyFilters of ns among what it deleted,
// nothing of the run's left, and istiod's waypoint Deployment gone with
// its Gateway.
func cleanedUp(t *testing.T, l *setuptest.Local, k *kube.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	rep, err := l.Suite.Cleaner().Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var filters []string
	for _, r := range rep.Deleted {
		if r.Resource.Resource == "envoyfilters" && r.Namespace == ns {
			filters = append(filters, r.Name)
		}
	}
	slices.Sort(filters)
	if want := []string{fixtures.WaypointConnectAuthorityFilterName, fixtures.WaypointPeerMetadataFilterName}; !slices.Equal(filters, want) {
		t.Errorf("the clean-up deleted EnvoyFilters %v in %s, want %v", filters, ns, want)
	}
	if len(rep.Remaining) != 0 {
		t.Errorf("left after the clean-up: %v", rep.Remaining)
	}
	// The Deployment goes with its namespace (and its owner, the Gateway)
	// through the controller-manager: bounded by the clean-up timeout.
	if err := wait.PollUntilContextTimeout(ctx, time.Second, l.Config.Timeouts.Cleanup, true, func(ctx context.Context) (bool, error) {
		_, err := k.Client.AppsV1().Deployments(ns).Get(ctx, fixtures.WaypointName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("istiod's waypoint Deployment %s/%s is still there after the clean-up: %v", ns, fixtures.WaypointName, err)
	}
	t.Logf("clean-up: %d deleted (EnvoyFilters %v), %d remaining", len(rep.Deleted), filters, len(rep.Remaining))
}

// waitEndpoints waits until the waypoint's Envoy lists every echo pod as
// an endpoint of cluster, and checks each is the plain pod address.
func waitEndpoints(ctx context.Context, k *kube.Cluster, ns, pod, cluster string, echo []corev1.Pod, timeout time.Duration) error {
	var seen string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		text, err := k.AdminGet(ctx, ns, pod, "/clusters")
		if err != nil {
			return false, err
		}
		var hosts []string
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, cluster+"::"); ok {
				if addr, _, ok := strings.Cut(rest, "::"); ok && !slices.Contains(hosts, addr) && strings.Contains(addr, ":") {
					hosts = append(hosts, addr)
				}
			}
		}
		seen = strings.Join(hosts, " ")
		for _, p := range echo {
			if !slices.Contains(hosts, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(fixtures.EchoHTTPPort))) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waypoint %s: cluster %s does not list every echo pod at its own address (seen: %s): %w", pod, cluster, seen, err)
	}
	return nil
}

// waitDump polls the waypoint's config_dump until found says the applied
// object's configuration is there (a precondition; the traffic outcome is
// measured after).
func waitDump(ctx context.Context, k *kube.Cluster, ns, pod string, timeout time.Duration, what string, found func(string) (bool, string, error)) error {
	var seen string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		dump, err := k.AdminGet(ctx, ns, pod, "/config_dump")
		if err != nil {
			return false, err
		}
		ok, s, err := found(dump)
		seen = s
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("waypoint %s: no %s (%s): %w", pod, what, seen, err)
	}
	return nil
}

// keepDump writes a proxy's dump into MESHCLAIMS_WAYPOINT_DUMPS when set:
// the real shapes proxydump's tests read (its testdata).
func keepDump(t *testing.T, name, dump string) {
	t.Helper()
	if dir := os.Getenv("MESHCLAIMS_WAYPOINT_DUMPS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(dump), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// dumpWaypoint logs what istiod made of the Gateway, for a waypoint that
// never came up.
func dumpWaypoint(t *testing.T, k *kube.Cluster, ns, selector string) {
	t.Helper()
	ctx := context.Background()
	list, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Log(err)
		return
	}
	for _, p := range list.Items {
		t.Logf("pod %s: phase %s, conditions %+v", p.Name, p.Status.Phase, p.Status.Conditions)
		logs, _ := k.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: istiod.ProxyContainer}).DoRaw(ctx)
		if len(logs) > 4000 {
			logs = logs[len(logs)-4000:]
		}
		t.Logf("%s log tail:\n%s", p.Name, logs)
	}
}
