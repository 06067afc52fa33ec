package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindexec "sigs.k8s.io/kind/pkg/exec"
)

// ErrNoContainerEngine is wrapped by the kind provider's error when no
// container engine answers. It comes before kind is asked to do anything,
// so the run fails in well under a second instead of in a kind retry loop.
var ErrNoContainerEngine = errors.New("no container engine is running")

// engineProbeTimeout bounds each `<engine> info`: a hung daemon socket must
// not hang the run.
const engineProbeTimeout = 20 * time.Second

// containerEngines are the node providers kind supports, in kind's own
// auto-detection order.
var containerEngines = []struct {
	cli    string
	option func() kindcluster.ProviderOption
}{
	{"docker", kindcluster.ProviderWithDocker},
	{"nerdctl", func() kindcluster.ProviderOption { return kindcluster.ProviderWithNerdctl("") }},
	{"podman", kindcluster.ProviderWithPodman},
}

// DetectContainerEngine returns kind's provider option for the first
// container engine whose daemon answers `<cli> info`.
//
// kind's own DetectNodeProvider only checks that a CLI exists (`docker -v`),
// which is true on machines with a docker CLI and no daemon (like CI
// sandboxes); the failure would then surface deep inside cluster creation.
// Asking the engine for `info` is what tells a running engine from a CLI.
func DetectContainerEngine(ctx context.Context) (kindcluster.ProviderOption, string, error) {
	var why []string
	for _, e := range containerEngines {
		path, err := exec.LookPath(e.cli)
		if err != nil {
			why = append(why, e.cli+": not installed")
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, engineProbeTimeout)
		lines, err := kindexec.CombinedOutputLines(kindexec.CommandContext(pctx, e.cli, "info"))
		cancel()
		if err == nil {
			return e.option(), e.cli, nil
		}
		why = append(why, fmt.Sprintf("%s: CLI at %s, but `%s info` failed: %s", e.cli, path, e.cli, firstLine(lines, err)))
	}
	return nil, "", fmt.Errorf("-provider=kind: %w (%s). kind runs its nodes as containers and cannot start here; "+
		"use -provider=existing -kubeconfig=PATH [-context=NAME] to run against a cluster you already have, "+
		"or -provider=local (a single-node cluster from host processes) where it is available",
		ErrNoContainerEngine, strings.Join(why, "; "))
}

func firstLine(lines []string, err error) string {
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return err.Error()
}
