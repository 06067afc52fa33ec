package kubeletstats

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func summaryFile(t *testing.T, name string) *statsv1alpha1.Summary {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	sidecar = ContainerRef{Namespace: "meshclaims-sidecar", Pod: "client-7d5c9b8f64-q2wzt", Container: "istio-proxy"}
	ztunnel = ContainerRef{Namespace: "istio-system", Pod: "ztunnel-x7k2p", Container: "istio-proxy"}
)

// Two readings of one node in the kubelet's shape, 10 s apart: the client's
// sidecar grew its counter by 2.0 core-seconds (0.2 vCPU) and ztunnel by
// 0.6 (0.06 vCPU); working sets 60 and 62 MiB, 12 and 13 MiB.
func TestWindowFromSummaries(t *testing.T) {
	a, b := summaryFile(t, "summary-1.json"), summaryFile(t, "summary-2.json")
	start := time.Date(2026, 12, 1, 13, 10, 0, 0, time.UTC)
	for _, c := range []struct {
		ref       ContainerRef
		vcpu, mib float64
	}{{sidecar, 0.2, 61}, {ztunnel, 0.06, 12.5}} {
		var samples []Sample
		for _, s := range []*statsv1alpha1.Summary{a, b} {
			x, err := Find(s, c.ref)
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, x)
		}
		u, err := Window(samples, start, start.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(u.VCPU-c.vcpu) > 1e-9 || math.Abs(u.WorkingSetMiB-c.mib) > 1e-9 || u.Samples != 2 || u.To.Sub(u.From) != 10*time.Second {
			t.Errorf("%s: %+v, want %g vCPU, %g MiB over 2 readings 10 s apart", c.ref, u, c.vcpu, c.mib)
		}
	}
}

// Negative controls: a pod the summary does not hold, a pod without the
// container, a container without the counters, a document in another shape.
func TestFindRefuses(t *testing.T) {
	s := summaryFile(t, "summary-1.json")
	for _, c := range []struct {
		ref  ContainerRef
		want string
	}{
		{ContainerRef{"meshclaims-sidecar", "client-gone", "istio-proxy"}, "pod meshclaims-sidecar/client-gone is not in node meshclaims-local's summary (3 pods)"},
		{ContainerRef{"meshclaims-ambient-l4", "client-7d5c9b8f64-q2wzt", "istio-proxy"}, "is not in node"},
		{ContainerRef{"meshclaims-sidecar", "echo-6b7c9d8f5-abcde", "ztunnel"}, `has no container "ztunnel"; it has: echo, istio-proxy`},
	} {
		if _, err := Find(s, c.ref); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.ref, err, c.want)
		}
	}
	s.Pods[0].Containers[1].CPU.UsageCoreNanoSeconds = nil
	if _, err := Find(s, sidecar); err == nil || !strings.Contains(err.Error(), "no cpu.usageCoreNanoSeconds") {
		t.Errorf("without the counter: %v", err)
	}
	s.Pods[0].Containers[1].CPU = nil
	if _, err := Find(s, sidecar); err == nil || !strings.Contains(err.Error(), "no cpu.usageCoreNanoSeconds") {
		t.Errorf("without cpu: %v", err)
	}
	s.Pods[2].Containers[0].Memory.WorkingSetBytes = nil
	if _, err := Find(s, ztunnel); err == nil || !strings.Contains(err.Error(), "no memory.workingSetBytes") {
		t.Errorf("without the working set: %v", err)
	}
	// A metrics-server PodMetrics is not a summary.
	if _, err := Decode([]byte(`{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","containers":[]}`)); err == nil || !strings.Contains(err.Error(), "not a stats/v1alpha1 Summary") {
		t.Errorf("PodMetrics decoded as a summary: %v", err)
	}
}

func at(sec int, cum, ws uint64) Sample {
	t := time.Date(2026, 12, 1, 13, 10, sec, 0, time.UTC)
	return Sample{CPUTime: t, UsageCoreNanoSeconds: cum, MemoryTime: t, WorkingSetBytes: ws}
}

func TestWindow(t *testing.T) {
	start := time.Date(2026, 12, 1, 13, 10, 0, 0, time.UTC)
	end := start.Add(30 * time.Second)
	// A reading from before the load (cached by the kubelet), one served
	// twice and one from after the load (idle) do not count: 3 distinct
	// readings over 20 s, 4 core-s.
	u, err := Window([]Sample{at(-5, 0, 1*MiB), at(5, 1e9, 10*MiB), at(5, 1e9, 10*MiB), at(15, 3e9, 20*MiB), at(25, 5e9, 30*MiB), at(35, 5e9, 90*MiB)}, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if u.Samples != 3 || math.Abs(u.VCPU-0.2) > 1e-12 || u.WorkingSetMiB != 20 || u.MaxWorkingSetMiB != 30 {
		t.Errorf("%+v", u)
	}
	// An idle container is 0 vCPU, a measurement, not an error.
	if u, err := Window([]Sample{at(5, 7e9, MiB), at(15, 7e9, MiB)}, start, end); err != nil || u.VCPU != 0 {
		t.Errorf("idle: %+v %v", u, err)
	}
}

// Negative controls: the counter going backwards (a restart), readings out
// of order, too few readings inside the window.
func TestWindowRefuses(t *testing.T) {
	start := time.Date(2026, 12, 1, 13, 10, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		samples []Sample
		want    string
	}{
		"restart":      {[]Sample{at(5, 9e9, MiB), at(15, 1e8, MiB)}, "the CPU counter went backwards (100000000 ns at 2026-12-01T13:10:15Z, after 9000000000 ns at 2026-12-01T13:10:05Z)"},
		"out of order": {[]Sample{at(15, 1e9, MiB), at(5, 2e9, MiB)}, "before the previous one"},
		"one distinct": {[]Sample{at(5, 1e9, MiB), at(5, 1e9, MiB)}, "1 distinct readings taken between 2026-12-01T13:10:00Z and 2026-12-01T13:10:30Z (of 2 read): CPU needs two"},
		"all before":   {[]Sample{at(-20, 1e9, MiB), at(-10, 2e9, MiB)}, "0 distinct readings"},
		"all after":    {[]Sample{at(40, 1e9, MiB), at(50, 2e9, MiB)}, "0 distinct readings"},
		"none":         {nil, "0 distinct readings"},
	} {
		if _, err := Window(c.samples, start, start.Add(30*time.Second)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
