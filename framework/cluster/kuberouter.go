package cluster

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kubeRouterIpsetFix is the first kube-router release that leaves other
// programs' ipsets alone (kube-router#1918, its commit 6c44013b "ignore
// non-kube-router ipsets ... like Istio"). Before it, every sync of its
// NetworkPolicy controller ends with `ipset save` of all the node's sets
// and the next begins by restoring and swapping each saved set back, which
// erases the pod IPs istio-cni added in between to its iptables-mode probe
// set istio-inpod-probes-v4. Those pods' kubelet probes then reach ztunnel
// unSNATed and STRICT mTLS denies them: on the 3-node kind cluster of
// make kind-node-image (kube-router v2.1.0) ambient set-up failed with 2 of
// 6 echo pods Ready (docs/kind-on-podman.md, the run of 2026-12-02).
const kubeRouterIpsetFix = "v2.6.1"

// ipsetRewritingKubeRouter returns the image of a kube-router DaemonSet
// among dss whose version is before kubeRouterIpsetFix, or "". An image
// whose tag is not a version (latest, a digest alone) is not judged: the
// suite keeps Istio's defaults rather than guess.
func ipsetRewritingKubeRouter(dss []appsv1.DaemonSet) string {
	for _, ds := range dss {
		for _, c := range ds.Spec.Template.Spec.Containers {
			repo, tag := splitImage(c.Image)
			if repo[strings.LastIndex(repo, "/")+1:] != "kube-router" {
				continue
			}
			v := tag
			if !strings.HasPrefix(v, "v") {
				v = "v" + v
			}
			if semver.IsValid(v) && semver.Compare(v, kubeRouterIpsetFix) < 0 {
				return c.Image
			}
		}
	}
	return ""
}

// splitImage splits an image reference into repository and tag, dropping
// a digest; the tag is "" when there is none.
func splitImage(ref string) (repo, tag string) {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// findIpsetRewritingKubeRouter lists the cluster's DaemonSets and applies
// ipsetRewritingKubeRouter.
func findIpsetRewritingKubeRouter(ctx context.Context, cs kubernetes.Interface) (string, error) {
	dss, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the DaemonSets for the cluster's kube-router: %w", err)
	}
	return ipsetRewritingKubeRouter(dss.Items), nil
}

// nftablesIstioCNI is what the report states when istio-cni is switched to
// native nftables because of an ipset-rewriting kube-router (image).
func nftablesIstioCNI(image string) string {
	return "native nftables (global.nativeNftables=true): the cluster's CNI " + image +
		" rewrites every host ipset each sync (kube-router#1918, fixed in " + kubeRouterIpsetFix +
		"), which drops pods from istio-cni's iptables-mode probe set; Istio's default is iptables mode"
}

// withNativeNftables adds istio-cni's native nftables switch to v (which
// may be nil) and returns it.
func withNativeNftables(v map[string]map[string]any) map[string]map[string]any {
	if v == nil {
		v = map[string]map[string]any{}
	}
	if v["cni"] == nil {
		v["cni"] = map[string]any{}
	}
	v["cni"]["global"] = map[string]any{"nativeNftables": true}
	return v
}
