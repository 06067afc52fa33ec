package istio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrForeignNamespace is wrapped by Install's error when Istio's namespace
// already exists, is not this package's and holds no Istio release.
var ErrForeignNamespace = errors.New("Istio's namespace belongs to the cluster")

// ensureNamespace makes Istio's namespace before the first chart, marked
// with LabelManagedBy so Uninstall removes it. Helm's CreateNamespace would
// make it unmarked, and it would outlive the run holding what istiod writes
// at run time (its CA secret, leader-election leases, events), which no
// Helm uninstall removes.
//
// A namespace of that name the cluster already has is used only when it
// is ours (an earlier run that kept its cluster) or holds an Istio release
// of the profile (someone's Istio, which Install upgrades, as it always
// has). Any other namespace of that name is someone else's: installing
// into it would leave istiod's objects there, so Install stops before any
// write and says so.
func (i *Installer) ensureNamespace(ctx context.Context, charts []Chart) error {
	cs, err := kubernetes.NewForConfig(i.cfg)
	if err != nil {
		return err
	}
	name := i.opts.Namespace
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if i.opts.Revision != "" {
		// A revision goes into the running Istio's namespace, as Istio's
		// canary upgrade does, and leaves the namespace as it found it.
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("istio: %w: -istio-revision=%s installs beside a running Istio in namespace %s, which does not exist. Nothing was written",
				ErrForeignNamespace, i.opts.Revision, name)
		case err != nil:
			return fmt.Errorf("istio: reading namespace %s: %w", name, err)
		}
		i.logf("istio: revision %s goes into the running Istio's namespace %s, which stays as it is", i.opts.Revision, name)
		return nil
	}
	switch {
	case apierrors.IsNotFound(err):
		if err := i.guard.Check(ctx); err != nil {
			return fmt.Errorf("istio: before creating namespace %s: %w", name, err)
		}
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{LabelManagedBy: ManagedBy}}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("istio: creating namespace %s: %w", name, err)
		}
		i.logf("istio: created namespace %s (removed after the run)", name)
		return nil
	case err != nil:
		return fmt.Errorf("istio: reading namespace %s: %w", name, err)
	case ns.Labels[LabelManagedBy] == ManagedBy:
		return nil
	}
	cfg, err := i.helmConfig()
	if err != nil {
		return err
	}
	var found []string
	for _, c := range charts {
		_, err := cfg.Releases.Last(c.Release())
		switch {
		case errors.Is(err, driver.ErrReleaseNotFound):
		case err != nil:
			return fmt.Errorf("istio: release %s in namespace %s: %w", c.Release(), name, err)
		default:
			found = append(found, c.Release())
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("istio: %w: namespace %s already exists without the %s=%s label and holds no Istio release (%s); "+
			"installing Istio there would leave istiod's own objects in it after the run. Nothing was written. "+
			"Remove or rename that namespace, or install Istio yourself and run with -istio-install=skip",
			ErrForeignNamespace, name, LabelManagedBy, ManagedBy, strings.Join(releaseNames(charts), ", "))
	}
	i.logf("istio: namespace %s is the cluster's, with Istio releases %v", name, found)
	return nil
}

func releaseNames(charts []Chart) []string {
	var out []string
	for _, c := range charts {
		out = append(out, c.Release())
	}
	return out
}

// uninstallNamespace deletes Istio's namespace when it carries this
// package's mark, after the releases in it are gone, and waits for it to go
// (a next run must not install into a namespace still terminating). With
// Options.TerminatingNamespaceIsGone a namespace being deleted counts as
// gone (envtest runs no namespace controller).
func (i *Installer) uninstallNamespace(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(i.cfg)
	if err != nil {
		return err
	}
	name := i.opts.Namespace
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("istio: reading namespace %s: %w", name, err)
	}
	if ns.Labels[LabelManagedBy] != ManagedBy {
		return nil
	}
	if err := i.guard.Check(ctx); err != nil {
		return fmt.Errorf("istio: before deleting namespace %s: %w: %w", name, errGuard, err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("istio: deleting namespace %s: %w", name, err)
	}
	deadline := time.Now().Add(i.opts.Timeout)
	for {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			i.logf("istio: namespace %s deleted", name)
			return nil
		}
		if err == nil && ns.DeletionTimestamp != nil && i.opts.TerminatingNamespaceIsGone {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("istio: namespace %s still there %v after its deletion (err %v)", name, i.opts.Timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
