package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Existing attaches to a cluster someone else created, named by a kubeconfig
// and context: EKS release qualification, or any cluster the user manages.
type Existing struct {
	sel    KubeconfigSelector
	pinned *rest.Config
	// readFacts, as on kind: the sizing of a cluster whose schedulable
	// nodes have under 8 cores between them (smallClusterSizing), and an
	// ipset-rewriting kube-router as its CNI.
	readFacts
}

// NewExisting returns a provider for the cluster sel points at.
func NewExisting(sel KubeconfigSelector) *Existing { return &Existing{sel: sel} }

// Name implements Provider.
func (e *Existing) Name() string { return ExistingName }

// Start resolves the kubeconfig once and pins the result.
func (e *Existing) Start(ctx context.Context) error {
	cfg, err := e.sel.RESTConfig()
	if err != nil {
		return err
	}
	e.pinned = cfg
	return e.readSizing(ctx)
}

// readSizing reads the nodes' allocatable CPU (a read: the provider writes
// nothing). A user allowed to list no nodes keeps GUIDE's requests.
func (e *Existing) readSizing(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(e.RESTConfig())
	if err != nil {
		return err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("-provider=existing: reading the nodes' allocatable CPU: %w", err)
	}
	e.read.Sizing.CPURequest, e.read.Sizing.Why = smallClusterSizing(nodes.Items, "the cluster's %d schedulable nodes report %s allocatable CPU in all")
	// A kube-router before KubeRouterIpsetFix as the cluster's CNI, as on
	// kind (kuberouter.go). A user allowed to list no DaemonSets finds
	// none.
	e.read.IpsetRewriter, err = findIpsetRewritingKubeRouter(ctx, cs)
	if err != nil && !apierrors.IsForbidden(errors.Unwrap(err)) {
		return fmt.Errorf("-provider=existing: %w", err)
	}
	return nil
}

// RESTConfig implements Provider: the config pinned at Start.
func (e *Existing) RESTConfig() *rest.Config {
	if e.pinned == nil {
		return nil
	}
	return rest.CopyConfig(e.pinned)
}

// KubeConfig implements Provider.
func (e *Existing) KubeConfig() KubeconfigSelector { return e.sel }

// LoadImage is not possible on a cluster whose nodes the suite does not own.
func (e *Existing) LoadImage(ctx context.Context, tarball string) error {
	return fmt.Errorf("-provider=existing cannot load %s into the nodes of a cluster it does not own; push the image to a registry the cluster pulls from", tarball)
}

// ExportLogs writes the cluster's identity, version and nodes into dir. Pod
// logs and events of the suite's namespaces are dumped by the dump package;
// node logs of a managed cluster are not reachable from here.
func (e *Existing) ExportLogs(ctx context.Context, dir string) error {
	if e.pinned == nil {
		return errors.New("-provider=existing: ExportLogs before Start")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(e.RESTConfig())
	if err != nil {
		return err
	}
	var errs []error
	if v, err := cs.Discovery().ServerVersion(); err != nil {
		errs = append(errs, fmt.Errorf("server version: %w", err))
	} else {
		errs = append(errs, writeYAML(filepath.Join(dir, "server-version.yaml"), v))
	}
	if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("nodes: %w", err))
	} else {
		errs = append(errs, writeYAML(filepath.Join(dir, "nodes.yaml"), nodes))
	}
	errs = append(errs, writeYAML(filepath.Join(dir, "cluster.yaml"),
		map[string]string{"provider": ExistingName, "server": e.pinned.Host, "kubeconfig": e.sel.String()}))
	return errors.Join(errs...)
}

// Delete does nothing: the suite never deletes a cluster it did not create.
func (e *Existing) Delete(ctx context.Context) error { return nil }

// Facts implements Provider: what Start read of the nodes and the CNI.
func (e *Existing) Facts() Facts { return e.read }

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
