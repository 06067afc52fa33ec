package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Spread says how the pods matching selector in ns are placed over nodes,
// e.g. "6 pods on 2 nodes: kind-worker 3, kind-worker2 3". On a multi-node
// cluster it is the evidence that a claim about cross-node traffic (HBONE
// between two ztunnels, kube-proxy on another node) had the chance to
// cross; on one node every request stays local, and the report says so.
func (c *Cluster) Spread(ctx context.Context, ns, selector string) (string, error) {
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "", err
	}
	per := map[string]int{}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		node := p.Spec.NodeName
		if node == "" {
			node = "(unscheduled)"
		}
		per[node]++
		n++
	}
	nodes := make([]string, 0, len(per))
	for node := range per {
		nodes = append(nodes, node)
	}
	sort.Strings(nodes)
	parts := make([]string, len(nodes))
	for i, node := range nodes {
		parts[i] = fmt.Sprintf("%s %d", node, per[node])
	}
	return fmt.Sprintf("%s on %s: %s", plural(n, "pod"), plural(len(nodes), "node"), strings.Join(parts, ", ")), nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
