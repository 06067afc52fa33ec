package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	kindexec "sigs.k8s.io/kind/pkg/exec"
)

// engineLeftovers is what a kind creation may add to the host that kind's
// own delete keeps: the engine network kind attaches its nodes to, and
// (Podman with the cgroupfs manager) the libpod_parent cgroup in each
// cgroup v1 controller, which stays, empty, after the last container.
type engineLeftovers struct {
	read          bool
	network       string
	networkExists bool
	cgroups       map[string]bool // libpod_parent directories that existed
}

// kindNetworkName is the network kind v0.33.0 uses for cli: "kind", or the
// experimental override (KIND_EXPERIMENTAL_DOCKER_NETWORK,
// KIND_EXPERIMENTAL_PODMAN_NETWORK).
func kindNetworkName(cli string) string {
	env := map[string]string{"docker": "KIND_EXPERIMENTAL_DOCKER_NETWORK", "podman": "KIND_EXPERIMENTAL_PODMAN_NETWORK"}[cli]
	if v := os.Getenv(env); env != "" && v != "" {
		return v
	}
	return "kind"
}

// libpodParents are the libpod_parent cgroups under /sys/fs/cgroup.
func libpodParents() []string {
	m, _ := filepath.Glob("/sys/fs/cgroup/*/libpod_parent")
	if v2, err := os.Stat("/sys/fs/cgroup/libpod_parent"); err == nil && v2.IsDir() {
		m = append(m, "/sys/fs/cgroup/libpod_parent")
	}
	sort.Strings(m)
	return m
}

func readEngineLeftovers(ctx context.Context, cli string) engineLeftovers {
	l := engineLeftovers{read: true, network: kindNetworkName(cli), cgroups: map[string]bool{}}
	if cli == "docker" || cli == "podman" {
		err := kindexec.CommandContext(ctx, cli, "network", "inspect", l.network).Run()
		l.networkExists = err == nil
	}
	for _, p := range libpodParents() {
		l.cgroups[p] = true
	}
	return l
}

// removeEngineLeftovers removes the kind network if it did not exist
// before the creation, and the libpod_parent cgroups that did not (each
// only when empty: rmdir of a cgroup with tasks or children fails).
func removeEngineLeftovers(ctx context.Context, cli string, before engineLeftovers) error {
	if !before.read {
		return nil
	}
	var errs []error
	if (cli == "docker" || cli == "podman") && !before.networkExists {
		if kindexec.CommandContext(ctx, cli, "network", "inspect", before.network).Run() == nil {
			if out, err := kindexec.CombinedOutputLines(kindexec.CommandContext(ctx, cli, "network", "rm", before.network)); err != nil {
				errs = append(errs, fmt.Errorf("removing the %s network %q this run created: %v: %s", cli, before.network, err, strings.Join(out, " ")))
			}
		}
	}
	if cli == "podman" {
		for _, p := range libpodParents() {
			if before.cgroups[p] {
				continue
			}
			if err := removeCgroupTree(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroupTree removes an empty cgroup and its empty children, deepest
// first.
func removeCgroupTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("removing cgroup %s (Podman's, left after the nodes were deleted): %w", dir, err)
	}
	return nil
}
