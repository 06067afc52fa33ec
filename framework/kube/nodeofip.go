package kube

import (
	"context"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOfIP returns a look-up from a pod IP to the node it lives on: first
// the pods that exist now (their status IPs; host-network pods share their
// node's address and are left out), then each node's pod CIDRs, which also
// place pods deleted since (a rollout's old replicas). "" when neither
// does, e.g. a deleted pod on a cluster whose CNI gives nodes no pod CIDR.
func (c *Cluster) NodeOfIP(ctx context.Context) (func(ip string) string, error) {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	byIP := map[string]string{}
	for _, p := range pods.Items {
		if p.Spec.HostNetwork || p.Spec.NodeName == "" {
			continue
		}
		for _, ip := range p.Status.PodIPs {
			byIP[ip.IP] = p.Spec.NodeName
		}
	}
	type cidr struct {
		prefix netip.Prefix
		node   string
	}
	var cidrs []cidr
	for _, n := range nodes.Items {
		list := n.Spec.PodCIDRs
		if len(list) == 0 && n.Spec.PodCIDR != "" {
			list = []string{n.Spec.PodCIDR}
		}
		for _, s := range list {
			if p, err := netip.ParsePrefix(s); err == nil {
				cidrs = append(cidrs, cidr{p, n.Name})
			}
		}
	}
	return func(ip string) string {
		if n, ok := byIP[ip]; ok {
			return n
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return ""
		}
		for _, c := range cidrs {
			if c.prefix.Contains(a) {
				return c.node
			}
		}
		return ""
	}, nil
}
