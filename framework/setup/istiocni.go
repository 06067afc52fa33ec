package setup

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/probeset"
	"github.com/meshclaims/meshclaims/framework/ztunnellog"
)

// recordIstioCNI states, in the environment, how istio-cni runs where the
// nodes' facts set it apart from Istio's defaults (native nftables mode
// over an ipset-rewriting CNI: the local node's, and kind's or an existing
// cluster's kube-router before v2.6.1), with, where the suite can read it
// (nodes that are this host's processes), the probe set the host really
// has: istio-cni falls back to iptables when it finds its old ipset or an
// nft without JSON, and the report says what ran, not only what was asked
// for. Where Istio's defaults hold nothing is stated.
func (s *Suite) recordIstioCNI(ctx context.Context) {
	facts := s.Provider().Facts()
	text := istioCNISettings(facts)
	if text == "" {
		return
	}
	if read := hostProbeSet(facts); read != nil {
		if set, err := read(ctx); err != nil {
			text += "; probe set on the host not readable: " + err.Error()
		} else {
			text += "; probe set seen on the host: " + set.Where()
		}
	}
	s.mu.Lock()
	s.envInfo.IstioCNI = text
	s.mu.Unlock()
	s.logf("istio-cni: %s", text)
}

// diagnoseNotReady adds to a workload's readiness failure in namespace ns
// what the host's probe set says, where the suite can read it (nodes that
// are this host's processes): a redirected pod missing from it has its
// kubelet probes denied by ztunnel and never becomes Ready, which the
// Deployment's rollout status alone does not tell.
func (s *Suite) diagnoseNotReady(ctx context.Context, k *kube.Cluster, ns string, err error) error {
	read := hostProbeSet(s.Provider().Facts())
	if read == nil {
		// Where the host's probe set cannot be read (kind's nodes,
		// a cluster of someone else's), ztunnel's own log on each
		// unready pod's node can still show its probes being denied.
		if d := ztunnelProbeDenials(ctx, k.Client, ns); d != "" {
			return fmt.Errorf("%w\n%s", err, d)
		}
		return err
	}
	if d := probeset.Diagnose(ctx, k.Client, ns, read); d != nil {
		return fmt.Errorf("%w\n%v", err, d)
	}
	return err
}

// ztunnelProbeDenials reads, for each redirected pod of ns that runs but is
// not Ready, the last lines of the ztunnel on its node for inbound
// connections to it closed by a policy (ztunnellog.DeniedInbound), and says
// what they mean; "" when there are none or nothing could be read.
func ztunnelProbeDenials(ctx context.Context, cs kubernetes.Interface, ns string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	logs := map[string][]ztunnellog.Access{} // per node
	var lines []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || kube.PodReady(&p) || p.Annotations[probeset.RedirectionAnnotation] != probeset.RedirectionEnabled {
			continue
		}
		node := p.Spec.NodeName
		if _, read := logs[node]; !read {
			logs[node] = ztunnelLogOn(ctx, cs, node)
		}
		if d := ztunnellog.DeniedInbound(logs[node], p.Status.PodIP); len(d) > 0 {
			last := d[len(d)-1]
			lines = append(lines, fmt.Sprintf("  %s (%s, node %s): ztunnel denied %d inbound connection(s) from %s, the last at %s: %s",
				p.Name, p.Status.PodIP, node, len(d), last.SrcIP(), last.End.Format(time.RFC3339), last.Error))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "ztunnel's own log refused these unready pods' inbound connections: their kubelet probes, arriving from the node's address instead of SNATed to 169.254.7.127, " +
		"which is what a pod missing from istio-cni's probe set (istio-inpod-probes-v4 on its node) gets under the mesh's STRICT policy; this provider cannot read that set, so check it on the node (ipset list istio-inpod-probes-v4):\n" + strings.Join(lines, "\n")
}

// ztunnelLogTail is how much of a ztunnel's log ztunnelLogOn reads.
const ztunnelLogTail = 2000

// ztunnelLogOn is the access lines of the last ztunnelLogTail lines of the
// ztunnel pod on node (nil when there is none or it cannot be read).
func ztunnelLogOn(ctx context.Context, cs kubernetes.Interface, node string) []ztunnellog.Access {
	zs, err := cs.CoreV1().Pods(istio.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel", FieldSelector: "spec.nodeName=" + node})
	if err != nil || len(zs.Items) == 0 {
		return nil
	}
	tail := int64(ztunnelLogTail)
	raw, err := cs.CoreV1().Pods(istio.DefaultNamespace).GetLogs(zs.Items[0].Name, &corev1.PodLogOptions{TailLines: &tail}).Do(ctx).Raw()
	if err != nil {
		return nil
	}
	entries, err := ztunnellog.Parse(string(raw))
	if err != nil {
		return nil
	}
	return entries
}
