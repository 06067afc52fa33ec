package proxydump

import (
	"fmt"
	"sort"
)

// Envoy's xDS update counters (listener_manager.lds.*, cluster_manager.cds.*,
// kept by Istio's bootstrap stats matcher): update_rejected counts pushes
// Envoy refused (a NACK); update_success those it took.
const (
	LDSUpdateAttempt  = "listener_manager.lds.update_attempt"
	LDSUpdateSuccess  = "listener_manager.lds.update_success"
	LDSUpdateRejected = "listener_manager.lds.update_rejected"
	CDSUpdateSuccess  = "cluster_manager.cds.update_success"
	CDSUpdateRejected = "cluster_manager.cds.update_rejected"
)

// XDSUpdates reads the five counters from Envoy's /stats text. A proxy
// without one of them is an error, never zero: "nothing rejected" must be
// a counter read as 0.
func XDSUpdates(stats string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, name := range []string{LDSUpdateAttempt, LDSUpdateSuccess, LDSUpdateRejected, CDSUpdateSuccess, CDSUpdateRejected} {
		v, found, err := EnvoyStat(stats, name)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("no %s in the proxy's stats; read: %.300q", name, stats)
		}
		out[name] = v
	}
	return out, nil
}

// Listeners is what an Envoy config_dump says about its dynamic listeners.
type Listeners struct {
	// Active are the listeners taking connections (active_state).
	Active []string
	// NotActive are dynamic listeners only warming or draining.
	NotActive []string
	// Failed are the dynamic listeners Envoy refused (error_state), with
	// Envoy's reason.
	Failed map[string]string
	// HTTPFilters are the names of every HTTP filter on the active
	// listeners' chains (and their internal listeners').
	HTTPFilters []string
	// FactoryKeys are the filter-state factory keys the active listeners
	// name (set_filter_state's factory_key).
	FactoryKeys []string
}

// EnvoyListeners reads the dynamic listeners of an Envoy config_dump.
func EnvoyListeners(dump string) (Listeners, error) {
	cfgs, err := configs(dump)
	if err != nil {
		return Listeners{}, err
	}
	var l Listeners
	filters, keys := map[string]bool{}, map[string]bool{}
	for _, d := range section(cfgs, listenersDump) {
		for _, x := range asSlice(d["dynamic_listeners"]) {
			m, _ := x.(map[string]any)
			name, _ := m["name"].(string)
			if e, ok := m["error_state"].(map[string]any); ok {
				// Envoy 1.38 also lists a refused listener it never had
				// without a name of its own: the name is the refused
				// configuration's.
				if fc, ok := e["failed_configuration"].(map[string]any); ok && name == "" {
					name, _ = fc["name"].(string)
				}
				if l.Failed == nil {
					l.Failed = map[string]string{}
				}
				l.Failed[name], _ = e["details"].(string)
			}
			a, ok := m["active_state"].(map[string]any)
			if !ok {
				if _, failed := m["error_state"]; !failed {
					l.NotActive = append(l.NotActive, name)
				}
				continue
			}
			l.Active = append(l.Active, name)
			walk(a["listener"], func(o map[string]any) {
				for _, f := range asSlice(o["http_filters"]) {
					if fm, ok := f.(map[string]any); ok {
						if n, ok := fm["name"].(string); ok {
							filters[n] = true
						}
					}
				}
				if k, ok := o["factory_key"].(string); ok {
					keys[k] = true
				}
			})
		}
	}
	sort.Strings(l.Active)
	sort.Strings(l.NotActive)
	l.HTTPFilters, l.FactoryKeys = sorted(filters), sorted(keys)
	return l, nil
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
