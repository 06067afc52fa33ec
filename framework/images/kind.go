package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindexec "sigs.k8s.io/kind/pkg/exec"
)

// ErrNoContainerEngine is returned (wrapped) by LoadIntoKind when kind finds
// none of the container engines it drives (docker, podman, nerdctl).
var ErrNoContainerEngine = errors.New("no container engine for kind found (looked for docker, nerdctl and podman on PATH)")

// ErrNoKindNodes is returned (wrapped) by LoadIntoKind when the engine
// answers but has no nodes for the cluster name.
var ErrNoKindNodes = errors.New("kind cluster has no nodes")

// kindProviderOption chooses the node provider the way the kind CLI does:
// $KIND_EXPERIMENTAL_PROVIDER if set, else auto-detection. Unlike
// cluster.NewProvider with no option, it does not silently fall back to
// docker when nothing is found, so a missing engine fails here, clearly.
func kindProviderOption() (cluster.ProviderOption, error) {
	switch p := os.Getenv("KIND_EXPERIMENTAL_PROVIDER"); p {
	case "":
		opt, err := cluster.DetectNodeProvider()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoContainerEngine, err)
		}
		return opt, nil
	case "docker":
		return cluster.ProviderWithDocker(), nil
	case "podman":
		return cluster.ProviderWithPodman(), nil
	case "nerdctl", "finch", "nerdctl.lima":
		return cluster.ProviderWithNerdctl(p), nil
	default:
		return nil, fmt.Errorf("images: KIND_EXPERIMENTAL_PROVIDER=%q is not known; accepted: docker, podman, nerdctl, finch, nerdctl.lima", p)
	}
}

// LoadIntoKind imports an image tarball (see WriteTarball) into the
// containerd of every internal node of the kind cluster clusterName, as
// `kind load image-archive` does: `ctr --namespace=k8s.io images import` on
// each node, all nodes in parallel. It fails fast, before touching any node,
// when the tarball is not an image archive, when no container engine is
// available (ErrNoContainerEngine) or when the cluster has no nodes
// (ErrNoKindNodes). kind's API takes no context, so ctx is checked between
// steps and a load already running on a node is not interrupted.
func LoadIntoKind(ctx context.Context, clusterName, tarballPath string) error {
	return LoadIntoKindWith(ctx, nil, clusterName, tarballPath)
}

// LoadIntoKindWith is LoadIntoKind on the container engine engine names
// (kind's provider option; nil = choose as LoadIntoKind does). A caller that
// already found the engine the cluster runs on passes it: kind's own
// detection takes the first CLI it finds, so on a machine with a docker CLI
// but only Podman running it would pick docker and fail.
func LoadIntoKindWith(ctx context.Context, engine cluster.ProviderOption, clusterName, tarballPath string) error {
	if clusterName == "" {
		return errors.New("images: LoadIntoKind: cluster name is empty; kind's default cluster is named \"kind\"")
	}
	if _, err := os.Stat(tarballPath); err != nil {
		return fmt.Errorf("images: LoadIntoKind: image tarball: %w", err)
	}
	// Reading manifest.json catches a wrong file before kind runs ctr on
	// every node and reports an opaque import failure.
	if _, err := tarball.ImageFromPath(tarballPath, nil); err != nil {
		return fmt.Errorf("images: LoadIntoKind: %s is not a docker image tarball: %w", tarballPath, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("images: LoadIntoKind %s into %q: %w", tarballPath, clusterName, err)
	}
	if engine == nil {
		opt, err := kindProviderOption()
		if err != nil {
			return fmt.Errorf("images: LoadIntoKind %s into kind cluster %q: %w", tarballPath, clusterName, err)
		}
		engine = opt
	}
	provider := cluster.NewProvider(engine)
	nodeList, err := provider.ListInternalNodes(clusterName)
	if err != nil {
		return fmt.Errorf("images: LoadIntoKind: listing nodes of kind cluster %q (is the container engine running?): %w%s", clusterName, err, kindCommandOutput(err))
	}
	if len(nodeList) == 0 {
		return fmt.Errorf("images: LoadIntoKind %s: %w: %q (does it exist? see `kind get clusters`)", tarballPath, ErrNoKindNodes, clusterName)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("images: LoadIntoKind %s into %q: %w", tarballPath, clusterName, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(nodeList))
	for i, node := range nodeList {
		wg.Add(1)
		go func(i int, node nodes.Node) {
			defer wg.Done()
			errs[i] = loadOnNode(tarballPath, node)
		}(i, node)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// kindCommandOutput returns what a failed engine command printed: kind's
// errors name only the command and exit status, and the output ("Cannot
// connect to the Docker daemon ...") is the part that says what is wrong.
func kindCommandOutput(err error) string {
	rerr := kindexec.RunErrorForError(err)
	if rerr == nil || len(bytes.TrimSpace(rerr.Output)) == 0 {
		return ""
	}
	return "; output: " + string(bytes.TrimSpace(rerr.Output))
}

// loadOnNode streams the tarball into one node; each node gets its own file
// handle because the import consumes the reader.
func loadOnNode(tarballPath string, node nodes.Node) error {
	f, err := os.Open(tarballPath)
	if err != nil {
		return fmt.Errorf("images: opening %s for node %s: %w", tarballPath, node.String(), err)
	}
	defer f.Close()
	if err := nodeutils.LoadImageArchive(node, f); err != nil {
		return fmt.Errorf("images: importing %s into node %s: %w%s", tarballPath, node.String(), err, kindCommandOutput(err))
	}
	return nil
}
