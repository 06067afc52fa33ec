package vpccni

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PolicyEndpointList is the kind the VPC CNI's network policy controller
// resolves each NetworkPolicy into (amazon-network-policy-controller-k8s
// api/v1alpha1): the agent on each node enforces what these list, so a
// pod's IP in one of them is the controller's part done.
var PolicyEndpointList = schema.GroupVersionKind{Group: "networking.k8s.aws", Version: "v1alpha1", Kind: "PolicyEndpointList"}

// PolicyPods is the pod IPs the controller resolved NetworkPolicy ns/name
// to: spec.podSelectorEndpoints[].podIP of every PolicyEndpoint in ns whose
// spec.policyRef names it (the controller splits a large policy over
// several, named <policy>-<suffix>), sorted. A cluster without the CRD is
// an error (the API server has no such kind).
func PolicyPods(ctx context.Context, c client.Reader, ns, name string) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PolicyEndpointList)
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing PolicyEndpoints in %s: %w", ns, err)
	}
	var ips []string
	for _, pe := range list.Items {
		refNS, _, _ := unstructured.NestedString(pe.Object, "spec", "policyRef", "namespace")
		refName, _, _ := unstructured.NestedString(pe.Object, "spec", "policyRef", "name")
		if refNS != ns || refName != name {
			continue
		}
		eps, _, err := unstructured.NestedSlice(pe.Object, "spec", "podSelectorEndpoints")
		if err != nil {
			return nil, fmt.Errorf("PolicyEndpoint %s/%s: %w", ns, pe.GetName(), err)
		}
		for _, e := range eps {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("PolicyEndpoint %s/%s: a podSelectorEndpoints entry is %T, not an object", ns, pe.GetName(), e)
			}
			if ip, ok := m["podIP"].(string); ok && ip != "" {
				ips = append(ips, ip)
			}
		}
	}
	sort.Strings(ips)
	return ips, nil
}
