package istio

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A revision's istiod, beside a running Istio, writes into that Istio's
// namespace at run time what no Helm uninstall removes: the Leases of its
// per-revision leader elections (istio-gateway-deployment-<rev>,
// istio-gateway-status-leader-<rev>: pilot/pkg/leaderelection) and, for a
// shared election the running Istio does not hold, the ConfigMap or Lease
// of that lock with itself as holder. The suite deletes exactly those: new
// since the install, and named for the revision or held by one of its
// pods. Locks the running Istio holds are left, whoever created them.

// leaderAnnotation is where client-go's ConfigMap lock keeps its record.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// LockHolder is the holder identity of a ConfigMap leader-election lock
// (istiod keeps its shared elections so), "" when the ConfigMap is none.
func LockHolder(annotations map[string]string) string {
	var rec struct {
		HolderIdentity string `json:"holderIdentity"`
	}
	if json.Unmarshal([]byte(annotations[leaderAnnotation]), &rec) != nil {
		return ""
	}
	return rec.HolderIdentity
}

// recordRevisionBefore reads the ConfigMaps and Leases in Istio's namespace
// before the revision is installed.
func (i *Installer) recordRevisionBefore(ctx context.Context) error {
	if i.revisionBefore != nil {
		return nil
	}
	names, err := i.lockNames(ctx)
	if err != nil {
		return err
	}
	i.revisionBefore = names
	return nil
}

// lockNames are the ConfigMaps ("configmap/<name>") and Leases
// ("lease/<name>") in Istio's namespace.
func (i *Installer) lockNames(ctx context.Context) (map[string]bool, error) {
	cs, err := kubernetes.NewForConfig(i.cfg)
	if err != nil {
		return nil, err
	}
	ns := i.opts.Namespace
	out := map[string]bool{}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("istio: listing ConfigMaps in %s: %w", ns, err)
	}
	for _, c := range cms.Items {
		out["configmap/"+c.Name] = true
	}
	ls, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("istio: listing Leases in %s: %w", ns, err)
	}
	for _, l := range ls.Items {
		out["lease/"+l.Name] = true
	}
	return out, nil
}

// revisionPod says whether a leader-election holder identity is a pod of
// the revision's istiod (istiod-<rev>-<hash>-<id>).
func (i *Installer) revisionPod(holder string) bool {
	return strings.HasPrefix(holder, "istiod-"+i.opts.Revision+"-")
}

// uninstallRevisionLeftovers deletes the locks the revision's istiod
// created in Istio's namespace (see above), once its release is gone.
func (i *Installer) uninstallRevisionLeftovers(ctx context.Context) error {
	if i.revisionBefore == nil {
		return nil
	}
	cs, err := kubernetes.NewForConfig(i.cfg)
	if err != nil {
		return err
	}
	ns := i.opts.Namespace
	// Helm's wait ends when the Deployment is gone; its pods terminate
	// after, and a pod still running could take a lock again once it is
	// deleted, and would itself be left in the running Istio's namespace.
	sel := "app=istiod," + LabelRevision + "=" + i.opts.Revision
	deadline := time.Now().Add(i.opts.Timeout)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return fmt.Errorf("istio: listing revision %s's istiod pods: %w", i.opts.Revision, err)
		}
		if len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("istio: revision %s's istiod pod %s still there %v after its release was uninstalled", i.opts.Revision, pods.Items[0].Name, i.opts.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	var deleted []string
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("istio: listing ConfigMaps in %s: %w", ns, err)
	}
	for _, c := range cms.Items {
		if i.revisionBefore["configmap/"+c.Name] {
			continue
		}
		if !i.revisionPod(LockHolder(c.Annotations)) {
			continue
		}
		if err := i.guard.Check(ctx); err != nil {
			return fmt.Errorf("istio: before deleting ConfigMap %s/%s: %w: %w", ns, c.Name, errGuard, err)
		}
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("istio: deleting ConfigMap %s/%s: %w", ns, c.Name, err)
		}
		deleted = append(deleted, "ConfigMap "+c.Name)
	}
	ls, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("istio: listing Leases in %s: %w", ns, err)
	}
	for _, l := range ls.Items {
		if i.revisionBefore["lease/"+l.Name] {
			continue
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if !strings.HasSuffix(l.Name, "-"+i.opts.Revision) && !i.revisionPod(holder) {
			continue
		}
		if err := i.guard.Check(ctx); err != nil {
			return fmt.Errorf("istio: before deleting Lease %s/%s: %w: %w", ns, l.Name, errGuard, err)
		}
		if err := cs.CoordinationV1().Leases(ns).Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("istio: deleting Lease %s/%s: %w", ns, l.Name, err)
		}
		deleted = append(deleted, "Lease "+l.Name)
	}
	if len(deleted) > 0 {
		i.logf("istio: deleted what revision %s's istiod wrote in %s: %s", i.opts.Revision, ns, strings.Join(deleted, ", "))
	}
	return nil
}
