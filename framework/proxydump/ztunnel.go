package proxydump

import (
	"encoding/json"
	"fmt"
)

// ConvertedPeerAuthenticationPrefix: istiod hands ztunnel a
// PeerAuthentication <name> as an authorization named with this prefix
// (pilot/pkg/model/authentication.go), in the policy's namespace.
const ConvertedPeerAuthenticationPrefix = "converted_peer_authentication_"

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
