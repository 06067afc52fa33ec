package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The local node's two cores: workloads request less CPU than GUIDE, and
// say why. (The sidecar's request in istiod's values, and kind and
// existing keeping GUIDE's, are checked in istiocni_test.go.) New does not
// start anything for the local provider.
func TestLocalProviderFitsTwoCores(t *testing.T) {
	p, err := New(LocalName, Options{ClusterName: "meshclaims-values-test"})
	if err != nil {
		t.Fatal(err)
	}
	sz, ok := p.(WorkloadSizer)
	if !ok {
		t.Fatalf("local provider %T does not size workloads", p)
	}
	q, why := sz.WorkloadCPURequest()
	if got := resource.MustParse(q); got.Cmp(resource.MustParse("50m")) >= 0 || why == "" {
		t.Errorf("WorkloadCPURequest = %q (%q); want below GUIDE's 50m, with a reason", q, why)
	}
}
