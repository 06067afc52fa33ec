package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/spec"
)

// summary is the part of the kubelet's /stats/summary the claims need.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Containers []struct {
			Name   string `json:"name"`
			Memory struct {
				WorkingSetBytes *uint64 `json:"workingSetBytes"`
			} `json:"memory"`
			CPU struct {
				UsageNanoCores *uint64 `json:"usageNanoCores"`
			} `json:"cpu"`
		} `json:"containers"`
	} `json:"pods"`
}

// ProxyUsage measures what REVIEW asked for instead of the budget model:
// the working-set memory (MB) and CPU (vCPU) of the mesh's proxies, from each
// node's kubelet summary API: istio-proxy containers (sidecars, waypoints),
// and ztunnel pods.
func ProxyUsage(ctx context.Context, r *spec.Run) (map[string]float64, error) {
	m, err := Of(r)
	if err != nil {
		return nil, err
	}
	nodes, err := m.K.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	add := func(kind string, mem *uint64, cpu *uint64) {
		out[kind+"_count"]++
		if mem != nil {
			out[kind+"_memory_mb"] += float64(*mem) / 1e6
		}
		if cpu != nil {
			out[kind+"_vcpu"] += float64(*cpu) / 1e9
		}
	}
	for _, n := range nodes.Items {
		raw, err := m.K.Client.CoreV1().RESTClient().Get().Resource("nodes").Name(n.Name).SubResource("proxy", "stats", "summary").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("kubelet summary of node %s: %w", n.Name, err)
		}
		var s summary
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("kubelet summary of node %s: %w", n.Name, err)
		}
		for _, p := range s.Pods {
			for _, c := range p.Containers {
				switch {
				case p.PodRef.Namespace == "istio-system" && strings.HasPrefix(p.PodRef.Name, "ztunnel"):
					add("ztunnel", c.Memory.WorkingSetBytes, c.CPU.UsageNanoCores)
				case c.Name == "istio-proxy" && strings.HasPrefix(p.PodRef.Name, "waypoint"):
					add("waypoint", c.Memory.WorkingSetBytes, c.CPU.UsageNanoCores)
				case c.Name == "istio-proxy":
					add("sidecar", c.Memory.WorkingSetBytes, c.CPU.UsageNanoCores)
				}
			}
		}
	}
	r.Logf("measured proxy usage: %v", out)
	return out, nil
}
