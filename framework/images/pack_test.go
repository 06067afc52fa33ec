package images

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// rootFSFixture is a small tree shaped like unpacked Debian packages: a
// library directory, a multi-call binary and the symlinks naming it.
func rootFSFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr", "sbin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "lib", "x86_64-linux-gnu"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr", "sbin", "xtables-nft-multi"), []byte("multi"), 0o755))
	must(os.WriteFile(filepath.Join(root, "lib", "x86_64-linux-gnu", "libc.so.6"), []byte("libc"), 0o644))
	must(os.Symlink("xtables-nft-multi", filepath.Join(root, "usr", "sbin", "iptables-nft")))
	return root
}

func packSpec(root string) PackSpec {
	return PackSpec{
		Name: "test cni", RootFS: root,
		Files:    []File{{Path: "/usr/local/bin/install-cni", Mode: 0o755, Data: []byte("install-cni")}},
		Symlinks: []Symlink{{Path: "/usr/sbin/iptables", Target: "xtables-nft-multi"}},
		User:     Account{Name: "istio-proxy", UID: 1337, GID: 1337},
		ImageConfig: ImageConfig{
			Version:    "1.30.3-dev",
			Entrypoint: []string{"/usr/local/bin/install-cni"},
			Env:        []string{"PATH=/usr/local/bin:/usr/sbin"},
		},
	}
}

func mustPack(t *testing.T, s PackSpec) Packed {
	t.Helper()
	p, err := Pack(s)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return p
}

func TestPackIsReproducibleAndFollowsItsInput(t *testing.T) {
	root := rootFSFixture(t)
	a, b := mustPack(t, packSpec(root)), mustPack(t, packSpec(root))
	if a.Digest != b.Digest {
		t.Fatalf("same files, different digests: %s vs %s", a.Digest, b.Digest)
	}
	// Negative control: one byte of one file changes the digest.
	if err := os.WriteFile(filepath.Join(root, "lib", "x86_64-linux-gnu", "libc.so.6"), []byte("libC"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := mustPack(t, packSpec(root)); c.Digest == a.Digest {
		t.Fatalf("a changed RootFS file left the digest at %s", a.Digest)
	}
}

func TestPackLayerAndConfig(t *testing.T) {
	p := mustPack(t, packSpec(rootFSFixture(t)))
	byName := map[string]*tar.Header{}
	for _, e := range layerEntries(t, p.Image) {
		byName[e.hdr.Name] = e.hdr
	}
	links := map[string]string{"usr/sbin/iptables-nft": "xtables-nft-multi", "usr/sbin/iptables": "xtables-nft-multi"}
	for name, target := range links {
		h := byName[name]
		if h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != target {
			t.Errorf("%s: %+v, want a symlink to %s", name, h, target)
		}
	}
	for name, mode := range map[string]int64{"usr/sbin/xtables-nft-multi": 0o755, "lib/x86_64-linux-gnu/libc.so.6": 0o644, "usr/local/bin/install-cni": 0o755} {
		if h := byName[name]; h == nil || h.Typeflag != tar.TypeReg || h.Mode != mode || h.Uid != 0 {
			t.Errorf("%s: %+v, want a root-owned file of mode %o", name, h, mode)
		}
	}
	if h := byName["home/istio-proxy/"]; h == nil || h.Uid != 1337 || h.Gid != 1337 {
		t.Errorf("home/istio-proxy/: %+v, want a directory owned by 1337", h)
	}
	// Dirs belong to the user, even one that is a file's parent or is in
	// RootFS already; the implied parents stay root's.
	ds := packSpec(rootFSFixture(t))
	ds.Files = append(ds.Files, File{Path: "/var/lib/istio/envoy/envoy_bootstrap_tmpl.json", Data: []byte("{}")})
	ds.Dirs = []Dir{{Path: "/var/lib/istio/envoy"}, {Path: "/etc/istio/proxy", Mode: 0o775}, {Path: "/usr/sbin"}}
	dirs := map[string]*tar.Header{}
	for _, e := range layerEntries(t, mustPack(t, ds).Image) {
		dirs[e.hdr.Name] = e.hdr
	}
	for name, mode := range map[string]int64{"var/lib/istio/envoy/": 0o755, "etc/istio/proxy/": 0o775, "usr/sbin/": 0o755} {
		if h := dirs[name]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 1337 || h.Gid != 1337 || h.Mode != mode {
			t.Errorf("%s: %+v, want a directory owned by 1337 of mode %o", name, h, mode)
		}
	}
	for _, name := range []string{"var/lib/istio/", "etc/istio/", "var/lib/istio/envoy/envoy_bootstrap_tmpl.json"} {
		if h := dirs[name]; h == nil || h.Uid != 0 {
			t.Errorf("%s: %+v, want it root's", name, h)
		}
	}
	if got := string(fileInLayer(t, p.Image, "/etc/passwd")); !strings.Contains(got, "istio-proxy:x:1337:1337:") {
		t.Errorf("/etc/passwd lacks istio-proxy:\n%s", got)
	}
	if got := p.FileSHA256["/usr/local/bin/install-cni"]; got != sha256Hex([]byte("install-cni")) {
		t.Errorf("FileSHA256 of install-cni = %q", got)
	}
	cfg, err := p.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "1337:1337" || cfg.Config.Entrypoint[0] != "/usr/local/bin/install-cni" || cfg.Config.Labels[LabelVersion] != "1.30.3-dev" {
		t.Errorf("config: user %q entrypoint %q labels %v", cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Labels)
	}
	// The zero Account is root, and only root is in /etc/passwd.
	s := packSpec(rootFSFixture(t))
	s.User = Account{}
	root := mustPack(t, s)
	if cfg, _ := root.Image.ConfigFile(); cfg.Config.User != "0:0" {
		t.Errorf("root image user %q, want 0:0", cfg.Config.User)
	}
	if got := string(fileInLayer(t, root.Image, "/etc/passwd")); strings.Contains(got, "istio-proxy") {
		t.Errorf("root image's /etc/passwd names istio-proxy:\n%s", got)
	}
}

func TestPackRejectsBadSpecs(t *testing.T) {
	cases := map[string]func(*PackSpec){
		"no name":              func(s *PackSpec) { s.Name = "" },
		"no version":           func(s *PackSpec) { s.Version = "" },
		"no entrypoint":        func(s *PackSpec) { s.Entrypoint, s.Cmd = nil, nil },
		"bad arch":             func(s *PackSpec) { s.GOARCH = "mips" },
		"root by name":         func(s *PackSpec) { s.User = Account{Name: "root", UID: 0, GID: 0} },
		"file twice":           func(s *PackSpec) { s.Files = append(s.Files, s.Files[0]) },
		"file over rootfs":     func(s *PackSpec) { s.Files[0].Path = "/usr/sbin/xtables-nft-multi" },
		"file under a symlink": func(s *PackSpec) { s.Files[0].Path = "/usr/sbin/iptables-nft/x" },
		"relative path":        func(s *PackSpec) { s.Files[0].Path = "usr/bin/x" },
		"no content":           func(s *PackSpec) { s.Files[0].Data = nil },
		"empty link target":    func(s *PackSpec) { s.Symlinks[0].Target = "" },
		"rootfs missing":       func(s *PackSpec) { s.RootFS = "/nonexistent-meshclaims" },
		"reserved label":       func(s *PackSpec) { s.Labels = map[string]string{LabelVersion: "x"} },
		"dir over a file":      func(s *PackSpec) { s.Dirs = []Dir{{Path: "/usr/local/bin/install-cni"}} },
		"dir without a user":   func(s *PackSpec) { s.User, s.Dirs = Account{}, []Dir{{Path: "/var/lib/istio"}} },
		"dir of bad mode":      func(s *PackSpec) { s.Dirs = []Dir{{Path: "/var/lib/istio", Mode: 0o4755 | 1<<31}} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			s := packSpec(rootFSFixture(t))
			mutate(&s)
			if _, err := Pack(s); err == nil {
				t.Fatalf("Pack accepted a spec with %s", name)
			}
		})
	}
	t.Run("fifo in rootfs", func(t *testing.T) {
		root := rootFSFixture(t)
		if err := syscall.Mkfifo(filepath.Join(root, "usr", "fifo"), 0o644); err != nil {
			t.Skip("cannot make a FIFO here:", err)
		}
		_, err := Pack(packSpec(root))
		if err == nil || !strings.Contains(err.Error(), "accepted: directories, regular files and symbolic links") {
			t.Fatalf("Pack with a FIFO in RootFS: %v", err)
		}
	})
	t.Run("passwd in rootfs", func(t *testing.T) {
		root := rootFSFixture(t)
		if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Pack(packSpec(root)); err == nil || !strings.Contains(err.Error(), "/etc/passwd") {
			t.Fatalf("Pack with /etc/passwd in RootFS: %v", err)
		}
	})
}
