package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/images"
	"k8s.io/client-go/rest"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"
	kindversion "sigs.k8s.io/kind/pkg/cmd/kind/version"
	kindexec "sigs.k8s.io/kind/pkg/exec"
)

// DefaultClusterName is the kind cluster's default name.
const DefaultClusterName = "meshclaims"

// DefaultNodeImage is the node image every kind node runs unless
// -kind-node-image says otherwise: the image kind v0.33.0 (the kind of
// go.mod) publishes for Kubernetes 1.36, pinned by digest exactly as its
// release notes list it
// (https://github.com/kubernetes-sigs/kind/releases/tag/v0.33.0, "Images
// pre-built for this release"). kind's own default at v0.33.0 is 1.37.0;
// GUIDE measured on Kubernetes 1.36, so the claims are checked on 1.36.
// The digest, not the tag, guarantees an image built for this kind release.
// testdata/kind/cluster.yaml names the same image on every node.
const DefaultNodeImage = "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"

// kindWaitForReady bounds kind's wait for the control plane to be ready.
const kindWaitForReady = 5 * time.Minute

// Kind creates, reuses and deletes a kind cluster through kind's Go API.
type Kind struct {
	opts    Options
	host    EngineHost // where engines are looked for; tests inject one
	kind    *kindcluster.Provider
	engine  ContainerEngine
	created bool
	images  string // the nodes' image(s), read back from the engine after Start
	sel     KubeconfigSelector
	pinned  *rest.Config
	// hostBefore is what the engine's network and Podman's cgroups were
	// before Create, so Delete removes only what the creation added.
	hostBefore engineLeftovers
	// readFacts: what Start read of the nodes and the CNI (Facts).
	readFacts
}

// NewKind returns the kind provider; Start does the work.
func NewKind(o Options) *Kind {
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.KubeconfigOut == "" {
		o.KubeconfigOut = filepath.Join(os.TempDir(), "meshclaims-kind-"+o.ClusterName+".kubeconfig")
	}
	return &Kind{opts: o, host: SystemEngineHost()}
}

// RequestedNodeImage is the image a cluster this provider creates runs on:
// Options.NodeImage (-kind-node-image) or DefaultNodeImage.
func (k *Kind) RequestedNodeImage() string {
	if k.opts.NodeImage != "" {
		return k.opts.NodeImage
	}
	return DefaultNodeImage
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
	kindCfg, err := KindClusterConfig(cfgPath, k.opts.KubeProxyMode)
	if err != nil {
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
		// CreateWithNodeImage sets every node's image, so the run is on
		// the pinned Kubernetes whatever the config file names.
		opts := []kindcluster.CreateOption{
			kindcluster.CreateWithV1Alpha4Config(kindCfg),
			kindcluster.CreateWithNodeImage(k.RequestedNodeImage()),
			kindcluster.CreateWithWaitForReady(kindWaitForReady),
			kindcluster.CreateWithKubeconfigPath(k.opts.KubeconfigOut),
			kindcluster.CreateWithDisplayUsage(false),
			kindcluster.CreateWithDisplaySalutation(false),
		}
		k.hostBefore = readEngineLeftovers(ctx, k.engine.CLI)
		// created before Create returns: a creation that fails half-way
		// (or is interrupted) leaves containers that Delete must remove.
		k.created = true
		if err := k.kind.Create(name, opts...); err != nil {
			return fmt.Errorf("-provider=kind: creating cluster %q from %s: %w", name, cfgPath, err)
		}
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
	if err := k.readSizing(ctx); err != nil {
		return err
	}
	// Read the image back from the nodes rather than trusting the request:
	// a reused cluster runs whatever it was created with. Where the engine
	// cannot say (an inspect format it does not share with Docker and
	// Podman), the report says the image was the request, not read back.
	if k.images, err = k.nodeImages(); err != nil {
		k.images = fmt.Sprintf("%s as requested (not read back from the nodes: %v)", k.RequestedNodeImage(), err)
		if !k.created {
			k.images = fmt.Sprintf("unknown (reused cluster; not read back from the nodes: %v)", err)
		}
	}
	return nil
}

// nodeImages asks the engine which image each node container of the
// cluster was created from (`<engine> inspect --format {{.Config.Image}}`,
// the same field for Docker and Podman) and returns the distinct ones.
func (k *Kind) nodeImages() (string, error) {
	nodes, err := k.kind.ListNodes(k.opts.ClusterName)
	if err != nil {
		return "", fmt.Errorf("listing the nodes of %q: %w", k.opts.ClusterName, err)
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range nodes {
		lines, err := kindexec.OutputLines(kindexec.Command(k.engine.CLI, "inspect", "--format", "{{.Config.Image}}", n.String()))
		if err != nil || len(lines) != 1 || strings.TrimSpace(lines[0]) == "" {
			return "", fmt.Errorf("reading the image of node %s from %s: output %q, error %v", n.String(), k.engine.CLI, lines, err)
		}
		if img := strings.TrimSpace(lines[0]); !seen[img] {
			seen[img] = true
			out = append(out, img)
		}
	}
	if len(out) == 0 {
		return "", fmt.Errorf("kind cluster %q has no nodes", k.opts.ClusterName)
	}
	sort.Strings(out)
	return strings.Join(out, ", "), nil
}

// NodeImage is the node image the cluster's nodes run, read from the
// engine by Start ("" before Start). The report records it.
func (k *Kind) NodeImage() string { return k.images }

// Engine is the container engine Start found (zero before Start).
func (k *Kind) Engine() ContainerEngine { return k.engine }

// Describe implements Describer: the engine and the node image, for the
// report.
func (k *Kind) Describe() string {
	how := "created by this run"
	if !k.created {
		how = "reused"
	}
	return fmt.Sprintf("kind v%s cluster %q (%s) on %s, node image %s", kindversion.Version(), k.opts.ClusterName, how, k.engine, k.images)
}

// connect finds a running container engine and builds kind's provider for it.
func (k *Kind) connect(ctx context.Context) error {
	if k.kind != nil {
		return nil
	}
	engine, err := k.host.Detect(ctx)
	if err != nil {
		return err
	}
	k.kind = kindcluster.NewProvider(engine.Option(), kindcluster.ProviderWithLogger(kindcmd.NewLogger()))
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
	// The engine the cluster runs on, not kind's own detection again, which
	// would pick a docker CLI without a daemon over a running Podman.
	return images.LoadIntoKindWith(ctx, k.engine.Option(), k.opts.ClusterName, tarball)
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
	// kind deletes the nodes and their volumes but keeps its network, and
	// Podman (cgroupfs manager) keeps the empty libpod_parent cgroups:
	// remove what this run's creation added.
	if err := removeEngineLeftovers(ctx, k.engine.CLI, k.hostBefore); err != nil {
		return fmt.Errorf("kind: after deleting cluster %q: %w", k.opts.ClusterName, err)
	}
	return nil
}

// Facts implements Provider: what Start read of the nodes and the CNI, and
// that kind's nodes are containers of one engine's host, each reporting
// that host's cores.
func (k *Kind) Facts() Facts {
	f := k.read
	f.NodesShareHost = true
	return f
}
