package kindnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// StageOptions are the inputs of the node's root filesystem.
type StageOptions struct {
	// Debian is the tree Debootstrap made; it is copied, never changed.
	Debian string
	// KindDir is kind's module directory (sigs.k8s.io/kind@v0.33.0), whose
	// images/base/files are the node's entrypoint, systemd units and
	// containerd config.
	KindDir string
	// K8sBinary is cmd/k8s's multi-call binary (with kubeadm).
	K8sBinary string
	// KubernetesVersion goes into /kind/version, which kind reads to
	// choose the kubeadm config API.
	KubernetesVersion string
	// ImageArchives are docker image archives the node imports into
	// containerd's k8s.io namespace when it boots, before the kubelet
	// starts (see preloadUnit).
	ImageArchives []string
	// CNIManifest is /kind/manifests/default-cni.yaml, the network kind
	// applies when the cluster config keeps its default CNI.
	CNIManifest []byte
}

// preloadUnit imports the images under /kind/images into containerd's
// k8s.io namespace before the kubelet starts. kind's own image build runs
// a containerd at build time and commits its store; that store (a bolt
// database with timestamps) would make every build's digest different.
// Importing at boot keeps the image a function of its inputs, at the cost
// of a few seconds per node.
const preloadUnit = `[Unit]
Description=meshclaims: import the preloaded images (/kind/images) into containerd
After=containerd.service
Requires=containerd.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for t in /kind/images/*.tar; do [ -e "$t" ] || continue; ctr --namespace k8s.io images import --all-platforms --digests "$t" || exit 1; done'

[Install]
WantedBy=multi-user.target
`

// kubeletPreload orders the kubelet after the import: kubeadm starts the
// kubelet (systemctl restart), which then waits for the import to finish.
const kubeletPreload = `[Unit]
After=meshclaims-preload-images.service
Wants=meshclaims-preload-images.service
`

// Stage makes the node's root filesystem at dir (replacing what is there):
// a copy of the Debian tree with kind's base image steps applied as kind's
// images/base/Dockerfile does them, the multi-call Kubernetes binary, the
// image archives and the CNI manifest.
func Stage(ctx context.Context, dir string, o StageOptions) error {
	if o.KubernetesVersion == "" || !strings.HasPrefix(o.KubernetesVersion, "v") {
		return fmt.Errorf("kindnode: KubernetesVersion %q; accepted: a version such as v1.36.3", o.KubernetesVersion)
	}
	base := filepath.Join(o.KindDir, "images", "base", "files")
	if _, err := os.Stat(filepath.Join(base, "usr", "local", "bin", "entrypoint")); err != nil {
		return fmt.Errorf("kindnode: KindDir %q has no images/base/files/usr/local/bin/entrypoint; accepted: the directory of sigs.k8s.io/kind@v0.33.0 in the module cache: %w", o.KindDir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	// cp -a keeps owners, modes, hard links and file capabilities.
	if out, err := exec.CommandContext(ctx, "cp", "-a", o.Debian, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("kindnode: copying %s to %s: %w\n%s", o.Debian, dir, err, out)
	}
	r := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
	steps := []struct {
		what string
		do   func() error
	}{
		{"remove the debootstrap stamp and apt's caches", func() error {
			for _, g := range []string{stampFile, "var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*",
				"var/log/*.log", "var/log/apt/*", "var/cache/debconf/*-old", "var/cache/ldconfig/aux-cache", "etc/machine-id"} {
				m, _ := filepath.Glob(r(g))
				for _, p := range m {
					if st, err := os.Lstat(p); err == nil && st.IsDir() {
						continue
					}
					if err := os.Remove(p); err != nil {
						return err
					}
				}
			}
			return emptyMachineID(dir)
		}},
		// COPY --chmod=0755 files/usr/local/bin/* /usr/local/bin/, and so on.
		{"copy kind's base files", func() error {
			return copyTree(base, dir, func(rel string, isDir bool) fs.FileMode {
				switch {
				case isDir:
					return 0o755
				case strings.HasPrefix(rel, "usr/local/bin/"), strings.HasPrefix(rel, "kind/bin/"):
					return 0o755
				}
				return 0o644
			})
		}},
		{"empty the systemd wants directories as kind's Dockerfile does", func() error {
			for _, g := range []string{"lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
				"lib/systemd/system/multi-user.target.wants/*", "etc/systemd/system/*.wants/*",
				"lib/systemd/system/local-fs.target.wants/*", "lib/systemd/system/sockets.target.wants/*udev*",
				"lib/systemd/system/sockets.target.wants/*initctl*", "lib/systemd/system/basic.target.wants/*"} {
				m, _ := filepath.Glob(r(g))
				for _, p := range m {
					if err := os.Remove(p); err != nil {
						return err
					}
				}
			}
			return appendFile(r("etc/systemd/journald.conf"), "ReadKMsg=no\n")
		}},
		{"enable kubelet, containerd, undo-mount-hacks and the image preload; mask systemd-binfmt", func() error {
			if err := os.WriteFile(r("etc/systemd/system/meshclaims-preload-images.service"), []byte(preloadUnit), 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(r("etc/systemd/system/kubelet.service.d/20-meshclaims-preload.conf"), []byte(kubeletPreload), 0o644); err != nil {
				return err
			}
			wants := r("etc/systemd/system/multi-user.target.wants")
			if err := os.MkdirAll(wants, 0o755); err != nil {
				return err
			}
			for _, u := range []string{"kubelet.service", "containerd.service", "undo-mount-hacks.service", "meshclaims-preload-images.service"} {
				if err := os.Symlink("/etc/systemd/system/"+u, filepath.Join(wants, u)); err != nil {
					return err
				}
			}
			return os.Symlink("/dev/null", r("etc/systemd/system/systemd-binfmt.service"))
		}},
		{"put Debian's containerd and CNI plugins where kind's config looks", func() error {
			// kind's containerd.service runs /usr/local/bin/containerd;
			// containerd's CRI looks for CNI plugins in /opt/cni/bin.
			if err := os.Symlink("/usr/bin/containerd", r("usr/local/bin/containerd")); err != nil {
				return err
			}
			if err := os.MkdirAll(r("opt/cni"), 0o755); err != nil {
				return err
			}
			if err := os.Symlink("/usr/lib/cni", r("opt/cni/bin")); err != nil {
				return err
			}
			return os.MkdirAll(r("etc/kubernetes/manifests"), 0o755)
		}},
		{"write /etc/containerd/cri-base.json from ctr oci spec", func() error { return criBaseSpec(ctx, dir) }},
		{"restrict_oom_score_adj = true", func() error {
			// A node that cannot raise its OOM score adjustment (no
			// CAP_SYS_RESOURCE, as on hosts that run the engine inside a
			// sandbox) would fail every critical pod's start; with the
			// restriction runc leaves a pod's score at the node's. kind's
			// entrypoint sets it only under a user namespace.
			p := r("etc/containerd/config.toml")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := string(b)
			if !strings.Contains(s, "restrict_oom_score_adj = false") {
				return fmt.Errorf("kind's containerd config no longer says restrict_oom_score_adj = false")
			}
			return os.WriteFile(p, []byte(strings.Replace(s, "restrict_oom_score_adj = false", "restrict_oom_score_adj = true", 1)), 0o644)
		}},
		{"install the Kubernetes binary as kubeadm, kubelet and kubectl", func() error {
			if err := copyFile(o.K8sBinary, r("usr/bin/k8s"), 0o755); err != nil {
				return err
			}
			for _, n := range []string{"kubeadm", "kubelet", "kubectl"} {
				if err := os.Symlink("k8s", r("usr/bin/"+n)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"write /kind/version, the CNI manifest and the image archives", func() error {
			if err := os.WriteFile(r("kind/version"), []byte(o.KubernetesVersion), 0o644); err != nil {
				return err
			}
			if err := os.MkdirAll(r("kind/manifests"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(r("kind/manifests/default-cni.yaml"), o.CNIManifest, 0o644); err != nil {
				return err
			}
			if err := os.MkdirAll(r("kind/images"), 0o755); err != nil {
				return err
			}
			for _, a := range o.ImageArchives {
				if err := copyFile(a, r("kind/images/"+filepath.Base(a)), 0o644); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("kindnode: staging %s: %s: %w", dir, s.what, err)
		}
	}
	return nil
}

// criBaseSpec writes /etc/containerd/cri-base.json as kind's Dockerfile
// does: `ctr oci spec` (the node's own ctr, run in the tree; it needs no
// daemon) with kind's createContainer hook added and the process rlimits
// removed, so that pods inherit the node's.
func criBaseSpec(ctx context.Context, dir string) error {
	out, err := exec.CommandContext(ctx, "chroot", dir, "ctr", "oci", "spec").Output()
	if err != nil {
		return fmt.Errorf("chroot %s ctr oci spec: %w", dir, err)
	}
	var spec map[string]any
	if err := json.Unmarshal(out, &spec); err != nil {
		return fmt.Errorf("ctr oci spec printed no JSON: %w", err)
	}
	hooks, _ := spec["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	cc, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(cc, map[string]any{"path": "/kind/bin/mount-product-files.sh"})
	spec["hooks"] = hooks
	if p, ok := spec["process"].(map[string]any); ok {
		delete(p, "rlimits")
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "etc", "containerd", "cri-base.json"), append(b, '\n'), 0o644)
}

// copyTree copies the regular files and directories under src into dst,
// root-owned, with the modes mode gives (as Dockerfile COPY --chmod does).
func copyTree(src, dst string, mode func(rel string, isDir bool) fs.FileMode) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return os.Chmod(target, mode(rel, true))
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		return copyFile(p, target, mode(rel, false))
	})
}

// copyFile copies src to dst (replacing it), root-owned, with mode.
func copyFile(src, dst string, mode fs.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	_ = os.Remove(dst)
	if err := os.WriteFile(dst, b, mode); err != nil {
		return err
	}
	if err := os.Chmod(dst, mode); err != nil { // umask
		return err
	}
	return os.Lchown(dst, 0, 0)
}

func appendFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// emptyMachineID leaves the tree without a machine ID of its own. The
// entrypoint regenerates /etc/machine-id at boot; an empty file is what
// systemd expects in an image. Debian's dbus postinst writes a random
// /var/lib/dbus/machine-id during debootstrap (no /etc/machine-id yet),
// which made two fresh builds differ in that file alone, and gave every
// node of every cluster the same D-Bus machine ID: it becomes the link to
// /etc/machine-id that dbus installs on a systemd system.
func emptyMachineID(root string) error {
	if err := os.WriteFile(filepath.Join(root, "etc", "machine-id"), nil, 0o444); err != nil {
		return err
	}
	dbus := filepath.Join(root, "var", "lib", "dbus")
	if _, err := os.Stat(dbus); err != nil {
		return nil // no dbus in the tree
	}
	id := filepath.Join(dbus, "machine-id")
	if err := os.Remove(id); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Symlink("/etc/machine-id", id)
}
