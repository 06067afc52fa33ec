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

// KubeRouterIpsetFix is the first kube-router release that leaves other
// programs' ipsets alone (kube-router#1918, its commit 6c44013b). Before
// it, every sync of its NetworkPolicy controller ends with `ipset save` of
// all the node's sets and the next begins by restoring and swapping each
// saved set back, which erases whatever another program added to a set of
// its own in between (Facts.IpsetRewriter).
const KubeRouterIpsetFix = "v2.6.1"

// ipsetRewritingKubeRouter returns the image of a kube-router DaemonSet
// among dss whose version is before KubeRouterIpsetFix, or "". An image
// whose tag is not a version (latest, a digest alone) is not judged: it is
// not named rather than guessed at.
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
			if semver.IsValid(v) && semver.Compare(v, KubeRouterIpsetFix) < 0 {
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
