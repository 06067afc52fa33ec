package proxydump

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The dumps in testdata are written afresh in the shapes upstream emits:
// Envoy's admin /config_dump (envoy.admin.v3.*ConfigDump, proto JSON with
// snake_case names) of an Istio sidecar, ztunnel's /config_dump (ProxyState
// camelCase, src/state.rs and src/rbac.rs of istio/ztunnel release-1.30),
// and `iptables-save -t filter` after kube-router v2 programmed an ingress
// NetworkPolicy (pkg/controllers/netpol pod.go and policy.go).
func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const ns = "meshclaims-sidecar"

func TestEnvoyRBACPolicy(t *testing.T) {
	dump := read(t, "sidecar_config_dump.json")
	found, seen, err := EnvoyRBACPolicy(dump, ns, "echo-allow-good")
	if err != nil || !found {
		t.Fatalf("found=%v err=%v seen=%s", found, err, seen)
	}
	// Negative controls: another name, the same name in another
	// namespace (every mode namespace has a policy of that name), and a
	// name that is only a prefix of the one present.
	for _, c := range [][2]string{{ns, "echo-deny"}, {"meshclaims-ambient-l7", "echo-allow-good"}, {ns, "echo-allow"}} {
		found, seen, err := EnvoyRBACPolicy(dump, c[0], c[1])
		if err != nil || found {
			t.Errorf("%s/%s: found=%v err=%v", c[0], c[1], found, err)
		}
		if !strings.Contains(seen, "ns[meshclaims-sidecar]-policy[echo-allow-good]-rule[0]") {
			t.Errorf("seen does not list what is there: %s", seen)
		}
	}
}

// The RBAC policy name in a route or cluster (not an RBAC filter) is not
// a policy carried.
func TestEnvoyRBACPolicyOnlyInRBACFilters(t *testing.T) {
	dump := strings.ReplaceAll(read(t, "sidecar_config_dump.json"), "envoy.extensions.filters.http.rbac.v3.RBAC", "envoy.extensions.filters.http.other.v3.Other")
	if found, _, err := EnvoyRBACPolicy(dump, ns, "echo-allow-good"); err != nil || found {
		t.Fatalf("found=%v err=%v in a dump without an RBAC filter", found, err)
	}
}

func TestEnvoyRouteFromHTTPRoute(t *testing.T) {
	dump := read(t, "sidecar_config_dump.json")
	if found, seen, err := EnvoyRouteFrom(dump, HTTPRouteFrom(ns, "echo-canary")); err != nil || !found {
		t.Fatalf("found=%v err=%v seen=%s", found, err, seen)
	}
	// Negative controls: a VirtualService of that name (the HTTPRoute's
	// conversion is named differently), another HTTPRoute, another namespace.
	for name, m := range map[string]func(string) bool{
		"vs echo-canary":    VirtualServiceFrom(ns, "echo-canary"),
		"httproute echo":    HTTPRouteFrom(ns, "echo"),
		"other ns":          HTTPRouteFrom("meshclaims-ambient-l7", "echo-canary"),
		"httproute echo-ca": HTTPRouteFrom(ns, "echo-ca"),
	} {
		if found, _, err := EnvoyRouteFrom(dump, m); err != nil || found {
			t.Errorf("%s: found=%v err=%v", name, found, err)
		}
	}
}

func TestEnvoyClustersFrom(t *testing.T) {
	dump := read(t, "sidecar_config_dump.json")
	got, err := EnvoyClustersFrom(dump, ns, "echo-tls")
	if err != nil {
		t.Fatal(err)
	}
	want := "outbound|8080||echo.meshclaims-sidecar.svc.cluster.local"
	if len(got.Clusters) != 1 || got.Clusters[0] != want || len(got.WithTLS) != 1 {
		t.Fatalf("got %+v", got)
	}
	// DISABLE: istiod sends the cluster without a transport_socket.
	i := strings.Index(dump, `"transport_socket": {`)
	j := strings.Index(dump, `"metadata": {"filter_metadata": {"istio": {"config": "/apis/networking.istio.io/v1/namespaces/meshclaims-sidecar/destination-rule/echo-tls"`)
	plain := dump[:i] + dump[j:]
	got, err = EnvoyClustersFrom(plain, ns, "echo-tls")
	if err != nil || len(got.Clusters) != 1 || len(got.WithTLS) != 0 {
		t.Fatalf("DISABLE dump: %+v, %v", got, err)
	}
	// Negative control: no cluster carries another rule's metadata.
	if got, err := EnvoyClustersFrom(dump, ns, "echo-other"); err != nil || len(got.Clusters) != 0 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// A sidecar of an istiod with ambient enabled (a run of sidecar and
// ambient-l4 together) carries the rule's TLS in transport_socket_matches
// beside an "hbone" match: the clusters of a real run's client sidecar
// after DestinationRule echo-tls turned to ISTIO_MUTUAL. DISABLE gives
// istiod's hboneOrPlaintextSocket (hbone, tlsMode-disabled raw_buffer):
// the negative control; and TLS inside the hbone match (SIMPLE/MUTUAL) counts.
func TestEnvoyClustersFromHBONEMatches(t *testing.T) {
	dump := read(t, "sidecar_hbone_clusters_dump.json")
	got, err := EnvoyClustersFrom(dump, ns, "echo-tls")
	if err != nil {
		t.Fatal(err)
	}
	want := "outbound|8080||echo.meshclaims-sidecar.svc.cluster.local"
	if len(got.Clusters) != 1 || got.Clusters[0] != want || len(got.WithTLS) != 1 {
		t.Fatalf("ISTIO_MUTUAL with hbone matches: %+v", got)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(dump), &cfg); err != nil {
		t.Fatal(err)
	}
	cluster := func() map[string]any {
		for _, e := range cfg["configs"].([]any)[0].(map[string]any)["dynamic_active_clusters"].([]any) {
			c := e.(map[string]any)["cluster"].(map[string]any)
			if c["name"] == want {
				return c
			}
		}
		t.Fatal("no echo cluster in the fixture")
		return nil
	}()
	matches := cluster["transport_socket_matches"].([]any)
	hbone := matches[0].(map[string]any)
	tlsSock := matches[1].(map[string]any)["transport_socket"]
	rawBuffer := hbone["transport_socket"].(map[string]any)["typed_config"].(map[string]any)["transport_socket"]
	redump := func() string {
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// DISABLE: hboneOrPlaintextSocket.
	cluster["transport_socket_matches"] = []any{hbone, map[string]any{"name": "tlsMode-disabled", "match": map[string]any{}, "transport_socket": rawBuffer}}
	if got, err := EnvoyClustersFrom(redump(), ns, "echo-tls"); err != nil || len(got.Clusters) != 1 || len(got.WithTLS) != 0 {
		t.Fatalf("DISABLE with hbone matches: %+v, %v", got, err)
	}
	// SIMPLE: the user's TLS inside HBONE's internal_upstream, and alone.
	inner := hbone["transport_socket"].(map[string]any)["typed_config"].(map[string]any)
	inner["transport_socket"] = tlsSock
	cluster["transport_socket_matches"] = []any{hbone}
	if got, err := EnvoyClustersFrom(redump(), ns, "echo-tls"); err != nil || len(got.WithTLS) != 1 {
		t.Fatalf("TLS inside the hbone match: %+v, %v", got, err)
	}
}

func TestEnvoyDumpRefusesOtherJSON(t *testing.T) {
	for _, d := range []string{"", "{}", read(t, "ztunnel_config_dump.json")} {
		if _, _, err := EnvoyRBACPolicy(d, ns, "x"); err == nil {
			t.Errorf("accepted %.40q as an Envoy config_dump", d)
		}
	}
}

func TestZtunnelHasPolicy(t *testing.T) {
	dump := read(t, "ztunnel_config_dump.json")
	l4 := "meshclaims-ambient-l4"
	if found, seen, err := ZtunnelHasPolicy(dump, l4, "echo-allow-good"); err != nil || !found {
		t.Fatalf("found=%v err=%v seen=%s", found, err, seen)
	}
	if found, _, err := ZtunnelHasPolicy(dump, "istio-system", StaticStrictPolicy); err != nil || !found {
		t.Fatalf("static strict: found=%v err=%v", found, err)
	}
	// Negative controls: the same name in another namespace; a name only
	// in a workload's authorizationPolicies list is not a policy carried.
	found, seen, err := ZtunnelHasPolicy(dump, "meshclaims-ambient-l7", "echo-allow-good")
	if err != nil || found {
		t.Fatalf("found=%v err=%v", found, err)
	}
	if !strings.Contains(seen, l4+"/echo-allow-good") {
		t.Fatalf("seen = %s", seen)
	}
	noPolicy := strings.Replace(dump, `"name": "echo-allow-good"`, `"name": "echo-allow-other"`, 1)
	if found, _, _ := ZtunnelHasPolicy(noPolicy, l4, "echo-allow-good"); found {
		t.Fatal("found a policy only a workload references")
	}
	if _, _, err := ZtunnelHasPolicy(read(t, "sidecar_config_dump.json"), l4, "x"); err == nil {
		t.Fatal("an Envoy dump was read as ztunnel's")
	}
}

func TestKubeRouterPolicyRules(t *testing.T) {
	save := read(t, "kube-router.iptables-save")
	both := []string{"10.244.0.12", "10.244.0.13"}
	if found, seen, err := KubeRouterPolicyRules(save, "echo-app-port-only", both); err != nil || !found {
		t.Fatalf("found=%v err=%v seen=%s", found, err, seen)
	}
	// Negative controls: another policy; a pod not yet covered; the jump
	// present but its chain not (yet) declared.
	if found, seen, _ := KubeRouterPolicyRules(save, "deny-all", both); found || !strings.Contains(seen, "deny-all") {
		t.Fatalf("deny-all: found=%v seen=%s", found, seen)
	}
	if found, seen, _ := KubeRouterPolicyRules(save, "echo-app-port-only", append(both, "10.244.0.14")); found || !strings.Contains(seen, "10.244.0.14") {
		t.Fatalf("third pod: found=%v seen=%s", found, seen)
	}
	undeclared := strings.Replace(save, ":KUBE-NWPLCY-QV4GRCZ3LSMZ2XJE - [0:0]\n", "", 1)
	if found, _, _ := KubeRouterPolicyRules(undeclared, "echo-app-port-only", both); found {
		t.Fatal("a jump to an undeclared chain counted")
	}
	if _, _, err := KubeRouterPolicyRules("*nat\nCOMMIT\n", "x", both); err == nil {
		t.Fatal("nat table accepted")
	}
	if _, _, err := KubeRouterPolicyRules(save, "x", nil); err == nil {
		t.Fatal("no pod IPs accepted")
	}
}

// Namespace-wide STRICT reaches ztunnel as each workload's reference to
// the root namespace's static strict policy; its removal as the reference
// gone.
func TestZtunnelWorkloadsReference(t *testing.T) {
	dump := read(t, "ztunnel_config_dump.json")
	l4, pod, key := "meshclaims-ambient-l4", "echo-6b7c9-x2m4q", "istio-system/"+StaticStrictPolicy
	if ok, seen, err := ZtunnelWorkloadsReference(dump, l4, []string{pod}, key, true); err != nil || !ok {
		t.Fatalf("ok=%v err=%v seen=%s", ok, err, seen)
	}
	// Negative controls: waiting for its removal while it is referenced;
	// a pod ztunnel does not know; a key not referenced.
	if ok, seen, _ := ZtunnelWorkloadsReference(dump, l4, []string{pod}, key, false); ok || !strings.Contains(seen, pod) {
		t.Fatalf("removal: ok=%v seen=%s", ok, seen)
	}
	if ok, seen, _ := ZtunnelWorkloadsReference(dump, l4, []string{pod, "echo-6b7c9-zzzzz"}, key, true); ok || !strings.Contains(seen, "echo-6b7c9-zzzzz (not a ztunnel workload)") {
		t.Fatalf("unknown pod: ok=%v seen=%s", ok, seen)
	}
	if ok, _, _ := ZtunnelWorkloadsReference(dump, l4, []string{pod}, l4+"/"+ConvertedPeerAuthenticationPrefix+"echo-port-permissive", true); ok {
		t.Fatal("an unreferenced key counted")
	}
	gone := strings.Replace(dump, `"istio-system/istio_converted_static_strict", `, "", 1)
	if ok, _, err := ZtunnelWorkloadsReference(gone, l4, []string{pod}, key, false); err != nil || !ok {
		t.Fatalf("after removal: ok=%v err=%v", ok, err)
	}
}

// A VirtualService's own routes carry its path as is
// (pilot/pkg/networking/core/route/route.go: BuildConfigInfoMetadata of the
// VirtualService): the dump's route, restamped as built from
// VirtualService echo-retries, is found; the HTTPRoute's name is not.
func TestEnvoyRouteFromVirtualService(t *testing.T) {
	dump := strings.ReplaceAll(read(t, "sidecar_config_dump.json"), "virtual-service/echo-canary~0~istio-autogenerated-k8s-gateway", "virtual-service/echo-retries")
	if found, seen, err := EnvoyRouteFrom(dump, VirtualServiceFrom(ns, "echo-retries")); err != nil || !found {
		t.Fatalf("found=%v err=%v seen=%s", found, err, seen)
	}
	for name, m := range map[string]func(string) bool{
		"httproute echo-retries": HTTPRouteFrom(ns, "echo-retries"),
		"vs echo-retries-2":      VirtualServiceFrom(ns, "echo-retries-2"),
		"vs in another ns":       VirtualServiceFrom("meshclaims-ambient-l7", "echo-retries"),
	} {
		if found, _, err := EnvoyRouteFrom(dump, m); err != nil || found {
			t.Errorf("%s: found=%v err=%v", name, found, err)
		}
	}
}

// The name a real sidecar's routes carry for a mesh HTTPRoute (parentRef
// Service echo-canary port 8080), as the local cluster's fortio-client
// sidecar printed it: istiod's merged VirtualService, not the HTTPRoute's.
func TestHTTPRouteFromMeshMergedName(t *testing.T) {
	const seen = "/apis/networking.istio.io/v1/namespaces/meshclaims-sidecar/virtual-service/meshclaims-sidecar~8080~echo-canary.meshclaims-sidecar.svc.cluster.local"
	name := MeshRouteName("meshclaims-sidecar", "echo-canary", 8080)
	if !HTTPRouteFrom("meshclaims-sidecar", "echo-canary-header", name)(seen) {
		t.Errorf("merged name %q does not match %s", name, seen)
	}
	// Negative controls: without the Service parent's name, another port,
	// another Service.
	for what, m := range map[string]func(string) bool{
		"no mesh names": HTTPRouteFrom("meshclaims-sidecar", "echo-canary-header"),
		"port 8079":     HTTPRouteFrom("meshclaims-sidecar", "echo-canary-header", MeshRouteName("meshclaims-sidecar", "echo-canary", 8079)),
		"service echo":  HTTPRouteFrom("meshclaims-sidecar", "echo-canary-header", MeshRouteName("meshclaims-sidecar", "echo", 8080)),
	} {
		if m(seen) {
			t.Errorf("%s matched %s", what, seen)
		}
	}
}

// accessLogDump is an Istio sidecar's /config_dump with the access log the
// Telemetry's built-in envoy provider adds to the outbound HTTP connection
// manager (Envoy's envoy.admin.v3 dump shapes, written afresh), beside the
// bootstrap's admin access log Istio's bootstrap template always has.
const accessLogDump = `{"configs": [
 {"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump",
  "bootstrap": {"admin": {"access_log": [{"name": "envoy.access_loggers.file",
    "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog", "path": "/dev/stdout"}}]}}},
 {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
  "dynamic_listeners": [{"name": "0.0.0.0_8080", "active_state": {"version_info": "2026-12-01T14:00:00Z/20", "listener": {
   "@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "0.0.0.0_8080",
   "address": {"socket_address": {"address": "0.0.0.0", "port_value": 8080}},
   "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
    "stat_prefix": "outbound_0.0.0.0_8080", "rds": {"route_config_name": "8080"},
    "access_log": [{"name": "envoy.access_loggers.file", "typed_config": {
     "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog", "path": "/dev/stdout",
     "log_format": {"text_format_source": {"inline_string": "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" %RESPONSE_CODE% %RESPONSE_FLAGS% ...\n"}}}}]}}]}]}}}]}
]}`

// The access log is found on the listener that has it; the sidecar dump
// of testdata (no Telemetry) and the bootstrap's admin log alone are the
// negative controls.
func TestEnvoyFileAccessLog(t *testing.T) {
	found, seen, err := EnvoyFileAccessLog(accessLogDump, "/dev/stdout")
	if err != nil || !found || !strings.Contains(seen, "0.0.0.0_8080") {
		t.Fatalf("found %v, %s, %v", found, seen, err)
	}
	if found, _, _ := EnvoyFileAccessLog(accessLogDump, "/dev/null"); found {
		t.Error("an access log to another path counted")
	}
	bootstrapOnly := strings.Replace(accessLogDump, `"access_log": [{"name": "envoy.access_loggers.file", "typed_config": {
     "@type"`, `"no_access_log": [{"name": "x", "typed_config": {
     "@kind"`, 1)
	if bootstrapOnly == accessLogDump {
		t.Fatal("the negative control did not change the dump")
	}
	if found, seen, err := EnvoyFileAccessLog(bootstrapOnly, "/dev/stdout"); err != nil || found {
		t.Errorf("the bootstrap's admin access log counted as a listener's: %v %s %v", found, seen, err)
	}
	if found, seen, err := EnvoyFileAccessLog(read(t, "sidecar_config_dump.json"), "/dev/stdout"); err != nil || found {
		t.Errorf("a sidecar without the Telemetry: %v %s %v", found, seen, err)
	}
}

// A policy only in a listener's warming_state (Envoy's ListenersConfigDump
// DynamicListener: the same DynamicListenerState shape as active_state,
// not yet taking connections) is not carried; the same listener active is.
func TestEnvoyRBACPolicyOnlyInServingListeners(t *testing.T) {
	dump := strings.ReplaceAll(read(t, "sidecar_config_dump.json"), `"active_state"`, `"warming_state"`)
	if found, seen, err := EnvoyRBACPolicy(dump, ns, "echo-allow-good"); err != nil || found {
		t.Errorf("policy only in warming listeners: found=%v err=%v seen=%s", found, err, seen)
	}
	dump = strings.ReplaceAll(read(t, "sidecar_config_dump.json"), `"active_state"`, `"draining_state"`)
	if found, _, err := EnvoyRBACPolicy(dump, ns, "echo-allow-good"); err != nil || found {
		t.Errorf("policy only in draining listeners: found=%v err=%v", found, err)
	}
}
