// Package apiresources walks the resource types an API server serves: the
// one discovery walk behind every sweep of "all objects" (the clean-up's
// label sweep, the inventory of a cluster the suite did not create).
package apiresources

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Resource is one resource type in its preferred version.
type Resource struct {
	schema.GroupVersionResource
	Namespaced bool
}

// Preferred lists every resource type the server serves in its preferred
// version (one version per kind, so nothing is listed twice) that allows
// every verb in verbs; subresources are left out. When discovery fails only
// in part (one aggregated API down), the resources it did find are returned
// with the error, so a caller can go on with them but nobody believes the
// walk was complete.
func Preferred(disc discovery.DiscoveryInterface, verbs ...string) ([]Resource, error) {
	lists, err := disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover resources: %w", err)
	}
	var out []Resource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, verbs) {
				continue
			}
			out = append(out, Resource{GroupVersionResource: gv.WithResource(r.Name), Namespaced: r.Namespaced})
		}
	}
	return out, err
}

func hasVerbs(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
