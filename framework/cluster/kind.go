package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/meshclaims/meshclaims/framework/images"
	"k8s.io/client-go/rest"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"
)

// DefaultClusterName is the kind cluster's default name.
const DefaultClusterName = "meshclaims"

// kindWaitForReady bounds kind's wait for the control plane to be ready.
const kindWaitForReady = 5 * time.Minute

// Kind creates, reuses and deletes a kind cluster through kind's Go API.
type Kind struct {
	opts    Options
	kind    *kindcluster.Provider
	engine  string
	created bool
	sel     KubeconfigSelector
	pinned  *rest.Config
}

// NewKind returns the kind provider; Start does the work.
func NewKind(o Options) *Kind {
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.KubeconfigOut == "" {
		o.KubeconfigOut = filepath.Join(os.TempDir(), "meshclaims-kind-"+o.ClusterName+".kubeconfig")
	}
	return &Kind{opts: o}
}

// Name implements Provider.
func (k *Kind) Name() string { return KindName }

// Start checks that a container engine runs (failing at once otherwise),
// validates the config, then creates the cluster, or reuses one of the same
// name when Options.Reuse is set, and pins its REST config.
func (k *Kind) Start(ctx context.Context) error {
	cfgPath := k.opts.KindConfig
	if cfgPath == "" {
		p, err := findUp(DefaultKindConfig)
		if err != nil {
			return fmt.Errorf("-provider=kind: %w", err)
		}
		cfgPath = p
	}
	if _, err := LoadKindConfig(cfgPath); err != nil {
		return fmt.Errorf("-provider=kind: %w", err)
	}
	if err := k.connect(ctx); err != nil {
		return err
	}
	name := k.opts.ClusterName
	existing, err := k.kind.List()
	if err != nil {
		return fmt.Errorf("-provider=kind: listing clusters: %w", err)
	}
	switch {
	case slices.Contains(existing, name) && !k.opts.Reuse:
		return fmt.Errorf("-provider=kind: a kind cluster named %q already exists; pass -reuse to run on it, or delete it first", name)
	case !slices.Contains(existing, name):
		opts := []kindcluster.CreateOption{
			kindcluster.CreateWithConfigFile(cfgPath),
			kindcluster.CreateWithWaitForReady(kindWaitForReady),
			kindcluster.CreateWithKubeconfigPath(k.opts.KubeconfigOut),
			kindcluster.CreateWithDisplayUsage(false),
			kindcluster.CreateWithDisplaySalutation(false),
		}
		if k.opts.NodeImage != "" {
			opts = append(opts, kindcluster.CreateWithNodeImage(k.opts.NodeImage))
		}
		if err := k.kind.Create(name, opts...); err != nil {
			return fmt.Errorf("-provider=kind: creating cluster %q from %s: %w", name, cfgPath, err)
		}
		k.created = true
	}
	// Write a kubeconfig holding only this cluster to our own file: the
	// user's ~/.kube/config (and its current context) stays untouched.
	kc, err := k.kind.KubeConfig(name, false)
	if err != nil {
		return fmt.Errorf("-provider=kind: kubeconfig of %q: %w", name, err)
	}
	if err := os.WriteFile(k.opts.KubeconfigOut, []byte(kc), 0o600); err != nil {
		return fmt.Errorf("-provider=kind: %w", err)
	}
	k.sel = KubeconfigSelector{Path: k.opts.KubeconfigOut, Context: "kind-" + name}
	cfg, err := k.sel.RESTConfig()
	if err != nil {
		return fmt.Errorf("-provider=kind: %w", err)
	}
	k.pinned = cfg
	return nil
}

// connect finds a running container engine and builds kind's provider for it.
func (k *Kind) connect(ctx context.Context) error {
	if k.kind != nil {
		return nil
	}
	opt, engine, err := DetectContainerEngine(ctx)
	if err != nil {
		return err
	}
	k.kind = kindcluster.NewProvider(opt, kindcluster.ProviderWithLogger(kindcmd.NewLogger()))
	k.engine = engine
	return nil
}

// RESTConfig implements Provider.
func (k *Kind) RESTConfig() *rest.Config {
	if k.pinned == nil {
		return nil
	}
	return rest.CopyConfig(k.pinned)
}

// KubeConfig implements Provider: the kubeconfig file Start wrote.
func (k *Kind) KubeConfig() KubeconfigSelector { return k.sel }

// LoadImage imports an image archive into every node's containerd. The
// images package owns image archives (building, validating, loading), so
// this delegates to it rather than keeping a second copy of the logic.
func (k *Kind) LoadImage(ctx context.Context, tarball string) error {
	if err := k.connect(ctx); err != nil {
		return err
	}
	return images.LoadIntoKind(ctx, k.opts.ClusterName, tarball)
}

// ExportLogs writes kind's node logs (kubelet, containerd, pods) into dir.
func (k *Kind) ExportLogs(ctx context.Context, dir string) error {
	if err := k.connect(ctx); err != nil {
		return err
	}
	return k.kind.CollectLogs(k.opts.ClusterName, dir)
}

// Delete deletes the cluster if Start created it; a reused cluster is left
// for the next run, as the user asked for it by name.
func (k *Kind) Delete(ctx context.Context) error {
	if !k.created {
		return nil
	}
	if err := k.kind.Delete(k.opts.ClusterName, k.opts.KubeconfigOut); err != nil {
		return fmt.Errorf("kind: deleting cluster %q: %w", k.opts.ClusterName, err)
	}
	k.created = false
	return nil
}
