// Command kindnodeimage builds the kind node image of make kind-node-image
// (framework/kindnode): a Debian bookworm tree from debootstrap with kind
// v0.33.0's base files, the multi-call Kubernetes binary and every image
// kubeadm and the CNI need, written as a docker archive for `podman load`.
// Root: debootstrap and the staged tree's owners need it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/meshclaims/meshclaims/framework/kindnode"
)

func main() {
	var (
		k8sBin     = flag.String("k8s-bin", "bin/k8s/k8s", "cmd/k8s's multi-call binary, with kubeadm (make k8s-bin)")
		kubeRouter = flag.String("kube-router", "bin/kube-router/kube-router", "kube-router (make kube-router)")
		coreDNS    = flag.String("coredns", "bin/kind-node/coredns", "CoreDNS from cmd/kindcoredns")
		work       = flag.String("work", "bin/kind-node", "work and cache directory (debootstrap tree, Debian packages, images, staged tree)")
		ref        = flag.String("ref", kindnode.DefaultRef, "the node image's name")
		out        = flag.String("out", "", "the docker archive to write (default <work>/node-image.tar)")
		kindDir    = flag.String("kind-dir", "", "sigs.k8s.io/kind@v0.33.0's module directory (default: go list -m sigs.k8s.io/kind)")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *k8sBin, *kubeRouter, *coreDNS, *work, *ref, *out, *kindDir); err != nil {
		fmt.Fprintln(os.Stderr, "kindnodeimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, k8sBin, kubeRouter, coreDNS, work, ref, out, kindDir string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root: debootstrap chroots, and the node's files keep their Debian owners")
	}
	for _, b := range []struct{ flag, path string }{{"-k8s-bin", k8sBin}, {"-kube-router", kubeRouter}, {"-coredns", coreDNS}} {
		if st, err := os.Stat(b.path); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("%s %q is not a file (make kind-node-image builds it)", b.flag, b.path)
		}
	}
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	if kindDir == "" {
		o, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kind").Output()
		if err != nil {
			return fmt.Errorf("finding kind's module directory (go list -m sigs.k8s.io/kind): %w", err)
		}
		kindDir = strings.TrimSpace(string(o))
	}
	if out == "" {
		out = filepath.Join(work, "node-image.tar")
	}
	log := func(s string) { fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().UTC().Format("15:04:05"), s) }
	step := func(what string) func() {
		start := time.Now()
		log(what + " ...")
		return func() { log(fmt.Sprintf("%s: %.0f s", what, time.Since(start).Seconds())) }
	}

	done := step("Debian tree (debootstrap)")
	debian, err := kindnode.Debootstrap(ctx, work, log)
	if err != nil {
		return err
	}
	done()

	done = step("system images")
	archives, err := kindnode.SystemImages(ctx, kindnode.SystemImageInputs{
		RepoRoot: repo, K8sBinary: k8sBin, CoreDNS: coreDNS, KubeRouter: kubeRouter,
		DebianDir: filepath.Join(work, "debian"), GOARCH: runtime.GOARCH,
	}, filepath.Join(work, "images"), log)
	if err != nil {
		return err
	}
	done()

	done = step("staging the node's tree")
	rootfs := filepath.Join(work, "rootfs")
	if err := kindnode.Stage(ctx, rootfs, kindnode.StageOptions{
		Debian: debian, KindDir: kindDir, K8sBinary: k8sBin, KubernetesVersion: kindnode.KubernetesVersion,
		ImageArchives: archives, CNIManifest: kindnode.CNIManifest(),
	}); err != nil {
		return err
	}
	done()

	done = step("packing " + ref)
	created, err := kindnode.Created()
	if err != nil {
		return err
	}
	res, err := kindnode.PackImage(rootfs, ref, out, created, kindnode.Labels(), runtime.GOARCH)
	if err != nil {
		return err
	}
	done()
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(out+".json", append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}
