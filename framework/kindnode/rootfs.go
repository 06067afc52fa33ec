package kindnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Suite and Mirror are where the node's Debian comes from: bookworm, whose
// systemd 252 still boots on a cgroup v1 host (kind's own base is trixie,
// systemd 257, which refuses legacy cgroups) and whose containerd 1.6 the
// kubelet of Kubernetes 1.36 still accepts (1.37 drops it).
const (
	Suite  = "bookworm"
	Mirror = "http://deb.debian.org/debian"
)

// NodePackages are the Debian packages of the node: kind's base image's
// apt list (images/base/Dockerfile of kind v0.33.0, less nfs-common and
// open-iscsi, which only storage tests use), plus what kind's base builds
// from source and Debian packages: containerd, runc and the CNI plugins
// (bridge, host-local, loopback, portmap: kube-router's CNI config uses
// bridge and portmap), and socat and ebtables, which the kubelet and
// kube-proxy look for.
var NodePackages = []string{
	"systemd", "systemd-sysv", "dbus", "conntrack", "iptables", "nftables", "iproute2", "ethtool",
	"util-linux", "mount", "kmod", "libseccomp2", "pigz", "fuse-overlayfs", "e2fsprogs", "bash",
	"ca-certificates", "curl", "jq", "procps", "containerd", "runc", "containernetworking-plugins",
	"socat", "ebtables",
}

// debootstrapArgs is the debootstrap command line for target, without the
// program name: minbase (essential packages and apt) plus NodePackages.
func debootstrapArgs(target string) []string {
	return []string{"--variant=minbase", "--include=" + strings.Join(NodePackages, ","), Suite, target, Mirror}
}

// stampFile records, inside a finished debootstrap tree, the arguments it
// was made with: a tree without it (an interrupted run) or with other
// arguments is made again.
const stampFile = ".meshclaims-debootstrap"

// Debootstrap returns a Debian tree made by `debootstrap` with
// debootstrapArgs under cacheDir/debootstrap, reusing the tree a previous
// call made with the same arguments. The tree is never changed afterwards:
// Stage copies it. debootstrap needs root (it chroots to run the packages'
// scripts) and the Debian mirror.
func Debootstrap(ctx context.Context, cacheDir string, log func(string)) (string, error) {
	target, err := filepath.Abs(filepath.Join(cacheDir, "debootstrap"))
	if err != nil {
		return "", err
	}
	want := strings.Join(debootstrapArgs("TARGET"), " ") + "\n"
	if got, err := os.ReadFile(filepath.Join(target, stampFile)); err == nil && string(got) == want {
		log("reusing " + target + " (debootstrap " + strings.TrimSpace(want) + ")")
		return target, nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("kindnode: debootstrap is not installed (apt-get install debootstrap; hack/install-kind-packages.sh does): %w", err)
	}
	tmp := target + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.RemoveAll(target); err != nil {
		return "", err
	}
	log("debootstrap " + strings.Join(debootstrapArgs(tmp), " "))
	cmd := exec.CommandContext(ctx, "debootstrap", debootstrapArgs(tmp)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("kindnode: debootstrap into %s: %w\n%s", tmp, err, tail(out, 30))
	}
	if err := os.WriteFile(filepath.Join(tmp, stampFile), []byte(want), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, target); err != nil {
		return "", err
	}
	return target, nil
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
