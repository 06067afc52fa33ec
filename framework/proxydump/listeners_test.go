package proxydump

import (
	"slices"
	"strings"
	"testing"
)

// The waypoint_* files in testdata are what a real waypoint wrote on the
// local cluster (framework/istiod TestWaypointOnLocalCluster with
// MESHCLAIMS_WAYPOINT_DUMPS): istiod 1.30 from make istio-images, upstream
// Envoy 1.38.3 under pilot-agent `proxy waypoint`. The config dumps keep
// their ListenersConfigDump only (the other sections carry certificates
// and are not read here). "unadapted" is the same Gateway without the
// EnvoyFilters upstream Envoy needs, "peer_metadata_only" with the first
// of them only.
func TestEnvoyListenersOfARealWaypoint(t *testing.T) {
	l, err := EnvoyListeners(read(t, "waypoint_listeners_dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"connect_originate", "connect_terminate", "main_internal"}; !slices.Equal(l.Active, want) || len(l.NotActive) != 0 || len(l.Failed) != 0 {
		t.Errorf("adapted waypoint: active %v not active %v failed %v; want %v only", l.Active, l.NotActive, l.Failed, want)
	}
	if !slices.Contains(l.HTTPFilters, "connect_authority") || !slices.Contains(l.HTTPFilters, "envoy.filters.http.router") ||
		slices.Contains(l.HTTPFilters, "waypoint_downstream_peer_metadata") {
		t.Errorf("adapted waypoint's HTTP filters: %v", l.HTTPFilters)
	}
	if !slices.Equal(l.FactoryKeys, []string{"envoy.hashable_string"}) {
		t.Errorf("adapted waypoint's factory keys: %v", l.FactoryKeys)
	}

	// The unadapted one: both HTTP listeners refused, with Envoy's reason.
	u, err := EnvoyListeners(read(t, "waypoint_unadapted_listeners_dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.Active, []string{"connect_originate"}) || len(u.Failed) != 2 {
		t.Errorf("unadapted waypoint: active %v, failed %v", u.Active, u.Failed)
	}
	for name, filter := range map[string]string{"connect_terminate": "waypoint_downstream_peer_metadata", "main_internal": "waypoint_upstream_peer_metadata"} {
		if why := u.Failed[name]; !strings.Contains(why, filter) || !strings.Contains(why, "io.istio.http.peer_metadata.Config") {
			t.Errorf("unadapted %s refused for %q, want %s named", name, why, filter)
		}
	}
	// With the peer-metadata filters removed only: main_internal taken,
	// connect_terminate refused for connect_authority's Istio factory.
	p, err := EnvoyListeners(read(t, "waypoint_peer_metadata_only_listeners_dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Active, "main_internal") || slices.Contains(p.Active, "connect_terminate") ||
		!strings.Contains(p.Failed["connect_terminate"], "'io.istio.connect_authority' does not have an object factory") {
		t.Errorf("peer-metadata-only waypoint: active %v, failed %v", p.Active, p.Failed)
	}
	if _, err := EnvoyListeners(`{"configs": []}`); err == nil {
		t.Error("a dump without configs was read")
	}
}

func TestXDSUpdates(t *testing.T) {
	u, err := XDSUpdates(read(t, "waypoint_xds_stats.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if u[LDSUpdateRejected] != 0 || u[LDSUpdateSuccess] != 2 || u[CDSUpdateRejected] != 0 || u[CDSUpdateSuccess] != 2 {
		t.Errorf("adapted waypoint: %v", u)
	}
	u, err = XDSUpdates(read(t, "waypoint_unadapted_xds_stats.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if u[LDSUpdateRejected] != 1 || u[LDSUpdateSuccess] != 0 {
		t.Errorf("unadapted waypoint: %v", u)
	}
	// A missing counter is an error, never a zero.
	if _, err := XDSUpdates("listener_manager.lds.update_success: 2\n"); err == nil || !strings.Contains(err.Error(), LDSUpdateAttempt) {
		t.Errorf("stats without the counters: %v", err)
	}
}
