// Package kubeletstats reads containers' CPU and memory from the kubelet's
// Summary API (GET /api/v1/nodes/<node>/proxy/stats/summary, the
// k8s.io/kubelet/pkg/apis/stats/v1alpha1 Summary) and turns samples taken
// during a load into one usage: CPU from the cumulative CPU counter over
// the window, memory as the working set.
//
// The cumulative counter (usageCoreNanoSeconds) is used rather than
// usageNanoCores because usageNanoCores is the kubelet's rate over its own
// last housekeeping interval, which need not lie inside the load; the
// difference of the counter between two readings, over the difference of
// their timestamps, is the CPU used in exactly that span.
package kubeletstats

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Read fetches node's summary through the API server's node proxy. The
// caller needs RBAC on nodes/proxy (get).
func Read(ctx context.Context, c kubernetes.Interface, node string) (*statsv1alpha1.Summary, error) {
	if node == "" {
		return nil, fmt.Errorf("kubelet summary: no node name given")
	}
	var code int
	raw, err := c.CoreV1().RESTClient().Get().Resource("nodes").Name(node).SubResource("proxy", "stats", "summary").Do(ctx).StatusCode(&code).Raw()
	if err != nil {
		return nil, fmt.Errorf("kubelet summary of node %s: HTTP %d: %s", node, code, serverMessage(raw, err))
	}
	s, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("kubelet summary of node %s: %w", node, err)
	}
	return s, nil
}

// serverMessage is what the server said about a failed request: client-go
// reports a node proxy's failure as a generic "could not find the requested
// resource" whatever the cause, while the body names it (the node is
// unknown, the kubelet did not answer).
func serverMessage(raw []byte, err error) string {
	var st metav1.Status
	if json.Unmarshal(raw, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return st.Message
	}
	if body := strings.TrimSpace(string(raw)); body != "" {
		if len(body) > 300 {
			body = body[:300] + "..."
		}
		return body
	}
	return err.Error()
}

// Decode parses a summary. Fields the type does not know are refused: a
// kubelet that writes another shape is a different API, not data to guess at.
func Decode(raw []byte) (*statsv1alpha1.Summary, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s statsv1alpha1.Summary
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a stats/v1alpha1 Summary: %w", err)
	}
	return &s, nil
}

// ContainerRef names one container of one pod.
type ContainerRef struct {
	Namespace, Pod, Container string
}

func (r ContainerRef) String() string { return r.Namespace + "/" + r.Pod + "/" + r.Container }

// Sample is one reading of a container's counters, each with the time the
// kubelet took it (not the time it was read).
type Sample struct {
	CPUTime              time.Time
	UsageCoreNanoSeconds uint64
	MemoryTime           time.Time
	WorkingSetBytes      uint64
}

// Find takes ref's sample from a summary. A pod or container the summary
// does not hold, or one without the cumulative CPU counter or the working
// set, is an error naming what is there instead.
func Find(s *statsv1alpha1.Summary, ref ContainerRef) (Sample, error) {
	for _, p := range s.Pods {
		if p.PodRef.Namespace != ref.Namespace || p.PodRef.Name != ref.Pod {
			continue
		}
		var names []string
		for _, c := range p.Containers {
			if c.Name != ref.Container {
				names = append(names, c.Name)
				continue
			}
			if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil {
				return Sample{}, fmt.Errorf("container %s in node %s's summary has no cpu.usageCoreNanoSeconds", ref, s.Node.NodeName)
			}
			if c.Memory == nil || c.Memory.WorkingSetBytes == nil {
				return Sample{}, fmt.Errorf("container %s in node %s's summary has no memory.workingSetBytes", ref, s.Node.NodeName)
			}
			return Sample{
				CPUTime:              c.CPU.Time.Time,
				UsageCoreNanoSeconds: *c.CPU.UsageCoreNanoSeconds,
				MemoryTime:           c.Memory.Time.Time,
				WorkingSetBytes:      *c.Memory.WorkingSetBytes,
			}, nil
		}
		sort.Strings(names)
		return Sample{}, fmt.Errorf("pod %s/%s in node %s's summary has no container %q; it has: %s",
			ref.Namespace, ref.Pod, s.Node.NodeName, ref.Container, strings.Join(names, ", "))
	}
	return Sample{}, fmt.Errorf("pod %s/%s is not in node %s's summary (%d pods)", ref.Namespace, ref.Pod, s.Node.NodeName, len(s.Pods))
}

// MiB is 2^20 bytes: REVIEW writes the figures as Mi.
const MiB = 1 << 20

// Usage is a container's use over a window of samples.
type Usage struct {
	// Samples is how many distinct readings (by CPU timestamp) fell in the window.
	Samples int
	// From and To are the first and last reading's CPU timestamps.
	From, To time.Time
	// VCPU is the CPU counter's growth over To-From, in cores.
	VCPU float64
	// WorkingSetMiB is the mean working set over the readings; MaxWorkingSetMiB the largest.
	WorkingSetMiB, MaxWorkingSetMiB float64
}

// Window turns samples, in the order they were read, into one usage. Only
// readings the kubelet took after start and not after end count (the
// kubelet serves cached stats, so a reading made during a load can date
// from before it; one taken after the load would average idle time in),
// and a reading repeated unchanged counts once. It needs two distinct readings;
// a counter or a timestamp that goes backwards (the container restarted, or
// the samples are out of order) is an error, not a negative usage.
func Window(samples []Sample, start, end time.Time) (Usage, error) {
	var kept []Sample
	for i, s := range samples {
		if !s.CPUTime.After(start) || s.CPUTime.After(end) {
			continue
		}
		if n := len(kept); n > 0 {
			prev := kept[n-1]
			if s.CPUTime.Equal(prev.CPUTime) {
				continue
			}
			if s.CPUTime.Before(prev.CPUTime) {
				return Usage{}, fmt.Errorf("sample %d was taken at %s, before the previous one (%s): samples out of order", i, s.CPUTime.Format(time.RFC3339Nano), prev.CPUTime.Format(time.RFC3339Nano))
			}
			if s.UsageCoreNanoSeconds < prev.UsageCoreNanoSeconds {
				return Usage{}, fmt.Errorf("sample %d: the CPU counter went backwards (%d ns at %s, after %d ns at %s): the container restarted during the window",
					i, s.UsageCoreNanoSeconds, s.CPUTime.Format(time.RFC3339), prev.UsageCoreNanoSeconds, prev.CPUTime.Format(time.RFC3339))
			}
		}
		kept = append(kept, s)
	}
	if len(kept) < 2 {
		return Usage{}, fmt.Errorf("%d distinct readings taken between %s and %s (of %d read): CPU needs two", len(kept), start.Format(time.RFC3339), end.Format(time.RFC3339), len(samples))
	}
	first, last := kept[0], kept[len(kept)-1]
	u := Usage{Samples: len(kept), From: first.CPUTime, To: last.CPUTime}
	u.VCPU = float64(last.UsageCoreNanoSeconds-first.UsageCoreNanoSeconds) / float64(last.CPUTime.Sub(first.CPUTime).Nanoseconds())
	var sum float64
	for _, s := range kept {
		mib := float64(s.WorkingSetBytes) / MiB
		sum += mib
		if mib > u.MaxWorkingSetMiB {
			u.MaxWorkingSetMiB = mib
		}
	}
	u.WorkingSetMiB = sum / float64(len(kept))
	return u, nil
}
