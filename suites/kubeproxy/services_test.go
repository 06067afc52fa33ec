package kubeproxy

import (
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fillerSlices counts each extra Service once however many slices it has,
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
	n, newest := fillerSlices(slices, FillerPrefix)
	if n != 2 || newest != "filler-00000" {
		t.Fatalf("fillerSlices = %d, %q; want 2, filler-00000 (its slice at 40 s)", n, newest)
	}
	if n, newest := fillerSlices(nil, FillerPrefix); n != 0 || newest != "" {
		t.Fatalf("no slices: %d %q", n, newest)
	}
}
