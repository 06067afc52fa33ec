package access

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// Without a mapper (a CRD the same phase creates), the resource is the
// kind's plural as Kubernetes and Istio spell it, namespaced where the
// object has a namespace; repeated needs are asked once.
func TestForObjectsWithoutMapper(t *testing.T) {
	objs := []Object{
		obj("security.istio.io/v1", "AuthorizationPolicy", "meshclaims-sidecar", "allow"),
		obj("security.istio.io/v1", "AuthorizationPolicy", "meshclaims-sidecar", "deny"),
		obj("networking.istio.io/v1", "Gateway", "meshclaims-sidecar", "gw"),
		obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", "istio-sidecar-injector"),
		obj("networking.istio.io/v1", "ServiceEntry", "meshclaims-sidecar", "ext"),
	}
	needs := Dedup(ForObjects("workloads", objs, nil, "create"))
	var got []string
	for _, n := range needs {
		got = append(got, n.String())
	}
	want := []string{
		"create security.istio.io/authorizationpolicies in namespace meshclaims-sidecar",
		"create networking.istio.io/gateways in namespace meshclaims-sidecar",
		"create admissionregistration.k8s.io/mutatingwebhookconfigurations",
		"create networking.istio.io/serviceentries in namespace meshclaims-sidecar",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("needs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The refusal groups what is missing by phase and says nothing was
// written; with nothing missing there is no refusal.
func TestDeniedErrorGroupsByPhase(t *testing.T) {
	if err := DeniedError(nil); err != nil {
		t.Fatalf("nothing denied: %v", err)
	}
	err := DeniedError([]Need{
		{Phase: "Istio install and removal", Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
		{Phase: "measurements", Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "meshclaims-none"},
		{Phase: "Istio install and removal", Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
	})
	for _, w := range []string{"may not do 3 things", "nothing was written",
		"Istio install and removal: create admissionregistration.k8s.io/mutatingwebhookconfigurations; delete admissionregistration.k8s.io/mutatingwebhookconfigurations",
		"measurements: create pods/exec in namespace meshclaims-none"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %v does not say %q", err, w)
		}
	}
}
