package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// KindProviderEnv is the variable the kind CLI reads to choose its node
// provider instead of auto-detecting one; the kind provider honours it the
// same way, so `KIND_EXPERIMENTAL_PROVIDER=podman go test ./e2e` uses Podman
// on a machine that also has Docker.
const KindProviderEnv = "KIND_EXPERIMENTAL_PROVIDER"

// ContainerEngine is a container engine kind can run its nodes on.
type ContainerEngine struct {
	// CLI is the engine's command (docker, podman, nerdctl, ...).
	CLI string
	// Provider names kind's node provider for it, for the report: Podman
	// and nerdctl are kind's experimental providers.
	Provider string
	option   func() kindcluster.ProviderOption
}

// Option is kind's provider option for this engine.
func (e ContainerEngine) Option() kindcluster.ProviderOption { return e.option() }

// String says which engine and which of kind's providers, e.g.
// "podman (kind's experimental Podman provider)".
func (e ContainerEngine) String() string { return e.CLI + " (" + e.Provider + ")" }

// containerEngines are the node providers kind's auto-detection tries, in
// kind's own order (cluster.DetectNodeProvider: docker, nerdctl, podman).
var containerEngines = []ContainerEngine{
	{"docker", "kind's Docker provider", kindcluster.ProviderWithDocker},
	{"nerdctl", "kind's experimental nerdctl provider", func() kindcluster.ProviderOption { return kindcluster.ProviderWithNerdctl("nerdctl") }},
	{"podman", "kind's experimental Podman provider", kindcluster.ProviderWithPodman},
}

// explicitEngines are the values of KIND_EXPERIMENTAL_PROVIDER the kind CLI
// (v0.33.0, pkg/internal/runtime.GetDefault) accepts: the three above,
// and finch and nerdctl.lima, which drive kind's nerdctl provider with
// another binary.
var explicitEngines = append(containerEngines[:len(containerEngines):len(containerEngines)],
	ContainerEngine{"finch", "kind's experimental nerdctl provider", func() kindcluster.ProviderOption { return kindcluster.ProviderWithNerdctl("finch") }},
	ContainerEngine{"nerdctl.lima", "kind's experimental nerdctl provider", func() kindcluster.ProviderOption { return kindcluster.ProviderWithNerdctl("nerdctl.lima") }},
)

// EngineHost is what engine detection asks of the machine. Tests inject
// one, so that the engines a test sees are exactly those it describes,
// whatever this machine has installed.
type EngineHost struct {
	// LookPath finds a command (exec.LookPath).
	LookPath func(file string) (string, error)
	// Info runs `<cli> info` and returns its output lines.
	Info func(ctx context.Context, cli string) ([]string, error)
	// Getenv reads an environment variable (os.Getenv).
	Getenv func(key string) string
}

// SystemEngineHost is the real machine: PATH, the engines' CLIs and the
// process environment.
func SystemEngineHost() EngineHost {
	return EngineHost{
		LookPath: exec.LookPath,
		Info: func(ctx context.Context, cli string) ([]string, error) {
			return kindexec.CombinedOutputLines(kindexec.CommandContext(ctx, cli, "info"))
		},
		Getenv: os.Getenv,
	}
}

// DetectContainerEngine finds the container engine kind will run the
// nodes on, on this machine; see EngineHost.Detect.
func DetectContainerEngine(ctx context.Context) (ContainerEngine, error) {
	return SystemEngineHost().Detect(ctx)
}

// Detect returns the first container engine, in kind's order, whose
// daemon answers `<cli> info`; or, when KIND_EXPERIMENTAL_PROVIDER is set,
// that engine only, as the kind CLI does. (The kind CLI ignores a value it
// does not know and auto-detects; here it is an error naming the value, so a
// typo does not silently measure on another engine.)
//
// kind's own DetectNodeProvider only checks that a CLI exists (`docker -v`),
// which is true on machines with a docker CLI and no daemon (like CI
// sandboxes, or laptops where Docker is installed and Podman is what runs);
// kind would pick docker and fail deep inside cluster creation. Asking the
// engine for `info` is what tells a running engine from a CLI.
func (h EngineHost) Detect(ctx context.Context) (ContainerEngine, error) {
	candidates := containerEngines
	chosen := ""
	if v := h.Getenv(KindProviderEnv); v != "" {
		candidates = nil
		var accepted []string
		for _, e := range explicitEngines {
			accepted = append(accepted, e.CLI)
			if e.CLI == v {
				candidates = []ContainerEngine{e}
			}
		}
		if candidates == nil {
			return ContainerEngine{}, fmt.Errorf("-provider=kind: %s=%q is not known; accepted: %s (or unset, to detect the engine)",
				KindProviderEnv, v, strings.Join(accepted, ", "))
		}
		chosen = fmt.Sprintf(" (%s=%s chose it)", KindProviderEnv, v)
	}
	var why []string
	for _, e := range candidates {
		path, err := h.LookPath(e.CLI)
		if err != nil {
			why = append(why, e.CLI+": not installed"+chosen)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, engineProbeTimeout)
		lines, err := h.Info(pctx, e.CLI)
		cancel()
		if err == nil {
			return e, nil
		}
		why = append(why, fmt.Sprintf("%s: CLI at %s, but `%s info` failed%s: %s", e.CLI, path, e.CLI, chosen, reason(lines, err)))
	}
	return ContainerEngine{}, fmt.Errorf("-provider=kind: %w (%s). kind runs its nodes as containers (Docker, or Podman with kind's experimental provider) and cannot start here; "+
		"use -provider=existing -kubeconfig=PATH [-context=NAME] to run against a cluster you already have, "+
		"or -provider=local (a single-node cluster from host processes) where it is available",
		ErrNoContainerEngine, strings.Join(why, "; "))
}

// reason picks the line of an engine's `info` output that says why it
// failed: `docker info` with its daemon down prints the client's section
// ("Client:", "Version: ...") before "Cannot connect to the Docker daemon",
// so the first line says nothing. Else the last line, else the exit error.
func reason(lines []string, err error) string {
	last := ""
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if low := strings.ToLower(l); strings.Contains(low, "cannot connect") || strings.Contains(low, "error") {
			return l
		}
		if l != "" {
			last = l
		}
	}
	if last != "" {
		return last
	}
	return err.Error()
}
