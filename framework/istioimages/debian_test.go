package istioimages

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/repo"
)

// debCache is a cache directory holding the .deb files make istio-images
// downloaded (bin/istio/debian/debs), copied, so a test neither downloads
// them again nor writes into bin/.
func debCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	debs, _ := filepath.Glob(filepath.Join(root, "bin", "istio", "debian", "debs", "*.deb"))
	if err := os.MkdirAll(filepath.Join(cache, "debs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range debs {
		copyFile(t, d, filepath.Join(cache, "debs", filepath.Base(d)))
	}
	return cache
}

// The base root filesystem carries nft as istio-cni's native nftables mode
// runs it: Debian bookworm's nftables, on the tree's own glibc, with JSON
// support compiled in (the node agent falls back to iptables when
// `nft --json list tables` says "JSON support not compiled-in"). The JSON
// run lists the tables of a network namespace of its own, never the host's.
func TestBaseRootFSHasNftWithJSON(t *testing.T) {
	arch, err := DebianArch(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	cache := debCache(t)
	root, pkgs, err := DebianRootFS(ctx, cache, arch, BasePackages())
	if err != nil {
		t.Skip("Debian packages unavailable here:", err)
	}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.Name)
	}
	for _, want := range []string{"iptables", "nftables", "libnftables1", "libjansson4"} {
		if !slices.Contains(names, want) {
			t.Errorf("root filesystem lacks %s: %v", want, names)
		}
	}
	loader, err := TreeLoader(root, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	nft := filepath.Join(root, "usr", "sbin", "nft")
	out, err := exec.Command(loader[0], append(loader[1:], nft, "--version")...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "nftables v1.0.6") {
		t.Fatalf("the tree's nft --version: %v: %q, want Debian bookworm's nftables v1.0.6", err, out)
	}
	t.Logf("tree's nft: %s", strings.TrimSpace(string(out)))

	if os.Geteuid() != 0 {
		t.Log("not root: nft --json list tables (needs a network namespace of its own) not run")
	} else if _, err := exec.LookPath("unshare"); err == nil {
		cmd := exec.Command("unshare", append([]string{"--net", "--"}, append(loader, nft, "--json", "list", "tables")...)...)
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "JSON support not compiled-in") {
			t.Fatalf("the tree's nft lacks JSON support (istio-cni would fall back to iptables): %s", out)
		}
		if err != nil {
			t.Fatalf("nft --json list tables in a new network namespace: %v: %s", err, out)
		}
		var doc struct {
			Nftables []map[string]json.RawMessage `json:"nftables"`
		}
		if err := json.Unmarshal(out, &doc); err != nil || len(doc.Nftables) == 0 || doc.Nftables[0]["metainfo"] == nil {
			t.Fatalf("nft --json list tables printed %q (%v), want nft's JSON with its metainfo", out, err)
		}
		t.Logf("tree's nft --json list tables (new network namespace): %s", strings.TrimSpace(string(out)))
	}

	// Negative control: nftables without libjansson4 is refused, naming
	// the library nft would fail to load.
	without := slices.DeleteFunc(BasePackages(), func(p string) bool { return p == "libjansson4" })
	if _, _, err := DebianRootFS(ctx, cache, arch, without); err == nil || !strings.Contains(err.Error(), "libjansson.so.4") {
		t.Fatalf("root filesystem without libjansson4: %v, want a missing libjansson.so.4", err)
	}
}
