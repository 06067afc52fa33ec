package steps

import (
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
)

// FillerSlices counts each extra Service once however many slices it has,
// only with a ready endpoint (no endpoints, or all not ready, is not yet
// programmable), ignores other Services, and names the Service whose
// counted slice is newest.
func TestFillerSlicesCountsReadyServicesAndNamesTheNewest(t *testing.T) {
	at := func(sec int) metav1.Time { return metav1.NewTime(time.Unix(1796160000+int64(sec), 0)) }
	yes, no := true, false
	slice := func(svc string, sec int, ready ...*bool) discoveryv1.EndpointSlice {
		sl := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{discoveryv1.LabelServiceName: svc}, CreationTimestamp: at(sec)}}
		for _, r := range ready {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: r}})
		}
		return sl
	}
	slices := []discoveryv1.EndpointSlice{
		slice("filler-00000", 10, &yes),
		slice("filler-00000", 40, &yes), // a second slice of the same Service
		slice("filler-00001", 30, nil),  // ready unset counts as ready
		slice("filler-00002", 50),       // no endpoints yet
		slice("filler-00003", 60, &no),  // not ready
		slice("echo", 90, &yes),         // not an extra Service
	}
	n, newest := FillerSlices(slices, FillerPrefix)
	if n != 2 || newest != "filler-00000" {
		t.Fatalf("FillerSlices = %d, %q; want 2, filler-00000 (its slice at 40 s)", n, newest)
	}
	if n, newest := FillerSlices(nil, FillerPrefix); n != 0 || newest != "" {
		t.Fatalf("no slices: %d %q", n, newest)
	}
}

// The extra Services select echo-v1 on echo's port, in the run's namespace,
// and are exported to that namespace alone, so no other mesh's sidecars
// carry them; the run's own Services (echo's) are not limited.
func TestFillerServiceIsExportedToItsNamespaceOnly(t *testing.T) {
	tg := fixtures.Target{Namespace: "meshclaims-none", Run: "r1"}
	s := fillerService(tg, 42)
	if s.Name != "filler-00042" || s.Namespace != tg.Namespace || s.Spec.Selector[fixtures.LabelVersion] != fixtures.CanaryV1 {
		t.Errorf("filler Service %s/%s selecting %v", s.Namespace, s.Name, s.Spec.Selector)
	}
	if got := s.Annotations[FillerExportTo]; got != "." {
		t.Errorf("%s = %q, want \".\"", FillerExportTo, got)
	}
	if echo := fixtures.WorkloadService(tg, fixtures.EchoName, fixtures.EchoHTTPPort); echo.Annotations[FillerExportTo] != "" {
		t.Errorf("echo's Service is limited too: %v", echo.Annotations)
	}
}
