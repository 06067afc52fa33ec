package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The local node's two cores: workloads and sidecars request less CPU than
// GUIDE and the chart, and say why; the proxy's requests are set where the
// injection template reads them (global.proxy.resources of istiod's chart).
// New does not start anything for the local provider.
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
	v := p.(IstioValuer).IstioValues()
	cpu := v["istiod"]["global"].(map[string]any)["proxy"].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)["cpu"]
	if cpu != "10m" {
		t.Errorf("istiod global.proxy.resources.requests.cpu = %v, want 10m", cpu)
	}
	if _, ok := Provider(NewKind(Options{})).(WorkloadSizer); ok {
		t.Error("kind sizes workloads; it must keep GUIDE's requests")
	}
}
