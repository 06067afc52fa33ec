package istioimages

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// IptablesPackages are the Debian packages that give install-cni's image
// the iptables tools istio-cni runs (iptables-nft, iptables-legacy and their
// -save/-restore, ip6tables likewise) with every shared library they load:
// iptables and its Depends, closed over (apt-cache depends --recurse on
// bookworm; gcc-12-base is left out, it holds only documentation). netbase
// gives /etc/protocols, which iptables reads to name protocols.
//
// Debian packages rather than the host's installed binaries: the host may
// not have iptables at all (the local provider installs it only for the
// node), and a package set is one versioned, checkable input, where a host's
// /usr/sbin is whatever it is. Istio's own iptables image is built the same
// way from Wolfi packages (docker/iptables.yaml of istio.io/istio).
var IptablesPackages = []string{
	"iptables", "libip4tc2", "libip6tc2", "libxtables12", "libmnl0", "libnetfilter-conntrack3",
	"libnfnetlink0", "libnftnl11", "libc6", "libgcc-s1", "netbase",
}

// NftablesPackages give the same images the nft tool that istio-cni runs in
// native nftables mode (global.nativeNftables: its host rules, probe set
// and in-pod rules go through sigs.k8s.io/knftables, which execs `nft`, and
// the node agent checks `nft --json list tables` before choosing nftables):
// nftables and its Depends closed over as for IptablesPackages, less what
// IptablesPackages already has (libc6, libmnl0, libnftnl11, libxtables12).
// libjansson4 is nft's JSON support; libedit2 (with libbsd0, libmd0,
// libtinfo6) its interactive mode, which nft links whether used or not.
var NftablesPackages = []string{
	"nftables", "libnftables1", "libjansson4", "libgmp10", "libedit2", "libbsd0", "libmd0", "libtinfo6",
}

// BasePackages are the root filesystem of install-cni's and proxyv2's
// images: Istio's own "iptables" base image has iptables, ip6tables and
// nftables-slim (docker/iptables.yaml), and so does this one.
func BasePackages() []string {
	return append(slices.Clone(IptablesPackages), NftablesPackages...)
}

// Package is one Debian package unpacked into a root filesystem.
type Package struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	Architecture string `json:"architecture"`
	SHA256       string `json:"sha256"` // of the .deb file
}

// DebianArch maps GOARCH to Debian's architecture names.
func DebianArch(goarch string) (string, error) {
	switch goarch {
	case "amd64", "arm64":
		return goarch, nil
	}
	return "", fmt.Errorf("istioimages: no Debian architecture for GOARCH %q; accepted: amd64, arm64", goarch)
}

// DebianRootFS downloads packages for arch with `apt-get download` into
// cacheDir/debs (a .deb already there is reused), unpacks each with
// `dpkg-deb -x` into a fresh cacheDir/rootfs-<arch>, adds the /usr/sbin
// names Debian's maintainer scripts would create as alternatives (iptables
// -> xtables-nft-multi, Debian's default), and checks that every ELF file's
// needed libraries are inside the tree. It returns the tree and what went in.
// apt-get download needs no root; it needs the apt lists (apt-get update).
func DebianRootFS(ctx context.Context, cacheDir, arch string, packages []string) (string, []Package, error) {
	if len(packages) == 0 {
		return "", nil, errors.New("istioimages: DebianRootFS: no packages given")
	}
	// Absolute: apt-get and dpkg-deb run in the debs directory, where a
	// relative path would no longer name the files.
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return "", nil, err
	}
	debs := filepath.Join(cacheDir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return "", nil, err
	}
	root := filepath.Join(cacheDir, "rootfs-"+arch)
	if err := os.RemoveAll(root); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, err
	}
	var out []Package
	for _, name := range packages {
		deb, err := downloadDeb(ctx, debs, name, arch)
		if err != nil {
			return "", nil, err
		}
		p, err := debInfo(ctx, deb)
		if err != nil {
			return "", nil, err
		}
		if _, err := run(ctx, debs, "dpkg-deb", "-x", deb, root); err != nil {
			return "", nil, err
		}
		out = append(out, p)
	}
	// What the tools never read goes: documentation, manuals, translations,
	// and glibc's iconv converters (gconv), which also load libraries of
	// their own directory that no other program here needs.
	for _, junk := range []string{"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian",
		"usr/lib/x86_64-linux-gnu/gconv", "usr/lib/aarch64-linux-gnu/gconv"} {
		if err := os.RemoveAll(filepath.Join(root, junk)); err != nil {
			return "", nil, err
		}
	}
	// Debian's iptables postinst registers these with update-alternatives;
	// dpkg-deb -x runs no scripts, so the plain names are made here.
	for _, tool := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		link := filepath.Join(root, "usr", "sbin", tool)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink("xtables-nft-multi", link); err != nil {
			return "", nil, err
		}
	}
	if err := CheckLibraries(root); err != nil {
		return "", nil, err
	}
	return root, out, nil
}

// downloadDeb returns the .deb of name for arch in dir, downloading it when
// no file of that package and architecture is there yet.
func downloadDeb(ctx context.Context, dir, name, arch string) (string, error) {
	glob := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, name+"_*_"+arch+".deb"))
		if len(m) == 0 && arch != "all" {
			m, _ = filepath.Glob(filepath.Join(dir, name+"_*_all.deb"))
		}
		return m
	}
	if m := glob(); len(m) == 1 {
		return m[0], nil
	}
	if _, err := run(ctx, dir, "apt-get", "download", "-q", name+":"+arch); err != nil {
		return "", fmt.Errorf("istioimages: Debian package %s (%s): %w (are the apt lists there? apt-get update)", name, arch, err)
	}
	m := glob()
	if len(m) != 1 {
		return "", fmt.Errorf("istioimages: after apt-get download %s:%s, %d matching .deb files in %s: %v", name, arch, len(m), dir, m)
	}
	return m[0], nil
}

func debInfo(ctx context.Context, deb string) (Package, error) {
	f, err := run(ctx, "", "dpkg-deb", "-f", deb, "Package", "Version", "Architecture")
	if err != nil {
		return Package{}, err
	}
	p := Package{}
	for _, l := range strings.Split(f, "\n") {
		k, v, _ := strings.Cut(l, ": ")
		switch k {
		case "Package":
			p.Name = v
		case "Version":
			p.Version = v
		case "Architecture":
			p.Architecture = v
		}
	}
	sum, err := fileSHA256(deb)
	if err != nil {
		return Package{}, err
	}
	p.SHA256 = sum
	return p, nil
}

// libraryDirs are where glibc's loader looks without an ld.so.cache on a
// Debian multiarch system (its built-in trusted directories).
var libraryDirs = []string{"lib", "usr/lib", "lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "usr/lib/aarch64-linux-gnu", "lib64"}

// CheckLibraries fails unless every dynamically linked ELF file under root,
// and each of the files extra (binaries the image adds over root), finds
// each library it needs (DT_NEEDED) in root's library directories and its
// interpreter (PT_INTERP) inside root: the image has nothing else.
func CheckLibraries(root string, extra ...string) error {
	have := map[string]bool{}
	for _, d := range libraryDirs {
		entries, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range entries {
			have[e.Name()] = true
		}
	}
	var missing []string
	check := func(p, rel string) error {
		f, err := elf.Open(p)
		if err != nil {
			return nil // not ELF
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			buf := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(buf, 0); err != nil {
				return fmt.Errorf("istioimages: %s: reading interpreter: %w", rel, err)
			}
			interp := string(bytes.TrimRight(buf, "\x00"))
			if !existsIn(root, interp) {
				missing = append(missing, rel+" needs interpreter "+interp)
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return nil // no dynamic section
		}
		for _, l := range libs {
			if !have[l] {
				missing = append(missing, rel+" needs "+l)
			}
		}
		return nil
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		return check(p, rel)
	})
	if err != nil {
		return err
	}
	for _, p := range extra {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("istioimages: checking libraries of %s: %w", p, err)
		}
		if err := check(p, p); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = slices.Compact(missing)
		return fmt.Errorf("istioimages: root filesystem %s lacks libraries: %s", root, strings.Join(missing, "; "))
	}
	return nil
}

// existsIn reports whether the absolute path p names a regular file inside
// root, following symbolic links as the container would see them (an
// absolute target is resolved against root, not against this host).
func existsIn(root, p string) bool {
	for hops := 0; hops < 40; hops++ {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			return false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return fi.Mode().IsRegular()
		}
		target, err := os.Readlink(filepath.Join(root, p))
		if err != nil {
			return false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = filepath.Clean(target)
	}
	return false
}

func run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}
