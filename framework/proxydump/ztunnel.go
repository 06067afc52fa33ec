package proxydump

import (
	"encoding/json"
	"fmt"
	"strings"
)

// How istiod hands PeerAuthentication to ztunnel
// (pilot/pkg/serviceregistry/ambient/authorization.go, policies.go): a
// workload PeerAuthentication with port-level mTLS becomes an authorization
// named ConvertedPeerAuthenticationPrefix+<name> in its namespace; a
// namespace-wide STRICT becomes a reference, in each workload's
// authorizationPolicies, to StaticStrictPolicy in the root namespace.
const (
	ConvertedPeerAuthenticationPrefix = "converted_peer_authentication_"
	StaticStrictPolicy                = "istio_converted_static_strict"
)

// ZtunnelPolicy is one entry of ztunnel's config_dump "policies" list
// (rbac::Authorization, serialised camelCase).
type ZtunnelPolicy struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Scope     string `json:"scope"`
	Action    string `json:"action"`
	DryRun    bool   `json:"dryRun"`
}

// ZtunnelPolicies reads the "policies" list of a ztunnel config_dump. A
// dump without the key is not ztunnel's (ProxyState always serialises it,
// empty or not).
func ZtunnelPolicies(dump string) ([]ZtunnelPolicy, error) {
	var d struct {
		Policies *[]ZtunnelPolicy `json:"policies"`
	}
	if err := json.Unmarshal([]byte(dump), &d); err != nil {
		return nil, fmt.Errorf("not a ztunnel config_dump (JSON): %w", err)
	}
	if d.Policies == nil {
		return nil, fmt.Errorf("not a ztunnel config_dump: no \"policies\" key")
	}
	return *d.Policies, nil
}

// ZtunnelHasPolicy reports whether a ztunnel config_dump carries the
// authorization ns/name; seen lists the policies present.
func ZtunnelHasPolicy(dump, ns, name string) (found bool, seen string, err error) {
	pols, err := ZtunnelPolicies(dump)
	if err != nil {
		return false, "", err
	}
	names := map[string]bool{}
	for _, p := range pols {
		names[p.Namespace+"/"+p.Name] = true
		if p.Namespace == ns && p.Name == name {
			found = true
		}
	}
	return found, "ztunnel policies: " + list(names), nil
}

// ZtunnelWorkloadPolicies returns, for each workload of namespace ns in a
// ztunnel config_dump, pod name -> the "<ns>/<name>" authorizations it
// references (Workload.authorizationPolicies).
func ZtunnelWorkloadPolicies(dump, ns string) (map[string][]string, error) {
	var d struct {
		Workloads *[]struct {
			Name                  string   `json:"name"`
			Namespace             string   `json:"namespace"`
			AuthorizationPolicies []string `json:"authorizationPolicies"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal([]byte(dump), &d); err != nil {
		return nil, fmt.Errorf("not a ztunnel config_dump (JSON): %w", err)
	}
	if d.Workloads == nil {
		return nil, fmt.Errorf("not a ztunnel config_dump: no \"workloads\" key")
	}
	out := map[string][]string{}
	for _, w := range *d.Workloads {
		if w.Namespace == ns {
			out[w.Name] = w.AuthorizationPolicies
		}
	}
	return out, nil
}

// ZtunnelWorkloadsReference reports whether every pod in pods (of
// namespace ns) appears in a ztunnel config_dump referencing the
// authorization key ("<ns>/<name>"); want=false asks that none does (a
// removed policy). seen names the pods that disagree.
func ZtunnelWorkloadsReference(dump, ns string, pods []string, key string, want bool) (bool, string, error) {
	wls, err := ZtunnelWorkloadPolicies(dump, ns)
	if err != nil {
		return false, "", err
	}
	if len(pods) == 0 {
		return false, "", fmt.Errorf("no pods of %s to look for in ztunnel's workloads", ns)
	}
	var off []string
	for _, p := range pods {
		refs, ok := wls[p]
		if !ok {
			off = append(off, p+" (not a ztunnel workload)")
			continue
		}
		has := false
		for _, r := range refs {
			has = has || r == key
		}
		if has != want {
			off = append(off, p)
		}
	}
	verb := map[bool]string{true: "reference", false: "no longer reference"}[want]
	if len(off) > 0 {
		return false, fmt.Sprintf("workloads that do not yet %s %s: %s", verb, key, strings.Join(off, ", ")), nil
	}
	return true, fmt.Sprintf("all %d workloads %s %s", len(pods), verb, key), nil
}
