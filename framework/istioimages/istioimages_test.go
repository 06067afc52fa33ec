package istioimages

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func fakeBinDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("binary "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fakeRootFS(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr", "sbin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr", "sbin", "xtables-nft-multi"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// The images are laid out as Istio's Dockerfiles of the same commit lay
// them out, and the archives carry the references the charts compose.
func TestPackLaysImagesOutAsIstio(t *testing.T) {
	o := Options{BinDir: fakeBinDir(t), Hub: "localhost/istio", Tag: "1.30.3-dev", Revision: "9739e10eb9d7", GOARCH: "amd64",
		CNIRootFS: fakeRootFS(t), CNIPackages: []Package{{Name: "iptables", Version: "1.8.9-2"}}}
	imgs, err := Pack(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 || imgs[0].Ref != "localhost/istio/pilot:1.30.3-dev" || imgs[1].Ref != "localhost/istio/install-cni:1.30.3-dev" {
		t.Fatalf("images %+v", imgs)
	}
	pilot, _ := imgs[0].Image.ConfigFile()
	if pilot.Config.User != "1337:1337" || strings.Join(pilot.Config.Entrypoint, " ") != "/usr/local/bin/pilot-discovery" {
		t.Errorf("pilot config: user %q entrypoint %q", pilot.Config.User, pilot.Config.Entrypoint)
	}
	if _, ok := imgs[0].FileSHA256["/usr/local/bin/pilot-discovery"]; !ok {
		t.Errorf("pilot lacks /usr/local/bin/pilot-discovery: %v", imgs[0].FileSHA256)
	}
	cni, _ := imgs[1].Image.ConfigFile()
	if cni.Config.User != "0:0" || strings.Join(cni.Config.Cmd, " ") != "/usr/local/bin/install-cni" || cni.Config.WorkingDir != "/opt/cni/bin" ||
		!strings.Contains(strings.Join(cni.Config.Env, " "), ":/opt/cni/bin") {
		t.Errorf("install-cni config: user %q cmd %q workdir %q env %q", cni.Config.User, cni.Config.Cmd, cni.Config.WorkingDir, cni.Config.Env)
	}
	for _, p := range []string{"/usr/local/bin/install-cni", "/opt/cni/bin/istio-cni", "/usr/sbin/xtables-nft-multi"} {
		if _, ok := imgs[1].FileSHA256[p]; !ok {
			t.Errorf("install-cni lacks %s", p)
		}
	}
	if got := cni.Config.Labels["io.meshclaims.debian-packages"]; got != "iptables=1.8.9-2" {
		t.Errorf("package label %q", got)
	}

	dir := t.TempDir()
	m, err := WriteArchives(dir, o, imgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range m.Images {
		img, err := tarball.ImageFromPath(filepath.Join(dir, mi.Archive), nil)
		if err != nil {
			t.Fatal(err)
		}
		cd, _ := img.ConfigName()
		if cd.String() != mi.ConfigDigest {
			t.Errorf("%s: archive's config digest %s, manifest says %s", mi.Archive, cd, mi.ConfigDigest)
		}
		if _, ok := mi.Files["/opt/cni/bin/istio-cni"]; mi.Name == "install-cni" && !ok {
			t.Errorf("manifest of install-cni lacks the plugin's sum: %v", mi.Files)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
		t.Fatal(err)
	}

	// Negative control: a missing binary is named.
	os.Remove(filepath.Join(o.BinDir, "istio-cni"))
	if _, err := Pack(o); err == nil || !strings.Contains(err.Error(), "istio-cni not found") {
		t.Fatalf("Pack without istio-cni: %v", err)
	}
}

func TestCheckHubTag(t *testing.T) {
	for _, ok := range [][2]string{{"docker.io/istio", "1.30.2"}, {"localhost/istio", "1.30.3-dev"}, {"registry.example.com:5000/mirror/istio", "1.30.2-distroless"}} {
		if err := CheckHubTag(ok[0], ok[1]); err != nil {
			t.Errorf("CheckHubTag(%q, %q): %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range [][2]string{{"", "1.30.2"}, {"Docker.io/Istio", "1.30.2"}, {"docker.io/istio/", "1.30.2"}, {"docker.io/istio:1.30", "1.30.2"},
		{"docker.io/istio", ""}, {"docker.io/istio", "1.30/2"}, {"docker.io/istio", "a b"}, {"docker.io/istio", strings.Repeat("a", 129)}} {
		err := CheckHubTag(bad[0], bad[1])
		if err == nil {
			t.Errorf("CheckHubTag(%q, %q) accepted", bad[0], bad[1])
			continue
		}
		if !strings.Contains(err.Error(), "accepted:") {
			t.Errorf("error does not say what is accepted: %v", err)
		}
	}
}

// CheckLibraries finds a program's missing library (negative control) and
// passes once the library and the loader are in the tree.
func TestCheckLibraries(t *testing.T) {
	const prog = "/bin/ls"
	f, err := elf.Open(prog)
	if err != nil {
		t.Skip("no dynamically linked", prog, "on this host:", err)
	}
	libs, err := f.ImportedLibraries()
	f.Close()
	if err != nil || len(libs) == 0 {
		t.Skip(prog, "links no libraries here")
	}
	root := t.TempDir()
	copyFile(t, prog, filepath.Join(root, "bin", "ls"))
	err = CheckLibraries(root)
	if err == nil || !strings.Contains(err.Error(), "bin/ls needs "+libs[0]) {
		t.Fatalf("CheckLibraries without libraries: %v", err)
	}
	var found bool
	for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"} {
		if _, err := os.Stat(filepath.Join(dir, libs[0])); err != nil {
			continue
		}
		found = true
		// The libraries' own libraries too, as the loader needs them.
		for todo, seen := libs, map[string]bool{}; len(todo) > 0; todo = todo[1:] {
			l := todo[0]
			if seen[l] {
				continue
			}
			seen[l] = true
			copyFile(t, filepath.Join(dir, l), filepath.Join(root, strings.TrimPrefix(dir, "/"), l))
			if lf, err := elf.Open(filepath.Join(dir, l)); err == nil {
				more, _ := lf.ImportedLibraries()
				lf.Close()
				todo = append(todo, more...)
			}
		}
		for _, ld := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
			if _, err := os.Stat(ld); err == nil {
				copyFile(t, ld, filepath.Join(root, strings.TrimPrefix(ld, "/")))
			}
		}
		break
	}
	if !found {
		t.Skip("libraries of", prog, "not in a multiarch directory")
	}
	if err := CheckLibraries(root); err != nil {
		t.Fatalf("CheckLibraries with the libraries and loader: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// The charts (the Makefile's ISTIO_MODULE), the binaries (cmd/istio's
// go.mod) and the version stamp (ISTIO_COMMIT) name one Istio commit.
func TestOneIstioCommit(t *testing.T) {
	read := func(p string) string {
		raw, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	mk, gomod := read("Makefile"), read("cmd/istio/go.mod")
	var module string
	for _, l := range strings.Split(mk, "\n") {
		if v, ok := strings.CutPrefix(l, "ISTIO_MODULE := istio.io/istio@"); ok {
			module = strings.TrimSpace(v)
		}
	}
	if module == "" {
		t.Fatal("Makefile has no ISTIO_MODULE := istio.io/istio@...")
	}
	if !strings.Contains(gomod, "\tistio.io/istio "+module+" ") {
		t.Errorf("cmd/istio/go.mod does not require istio.io/istio %s (the charts' version)", module)
	}
	commit := module[strings.LastIndex(module, "-")+1:]
	if !strings.Contains(mk, "ISTIO_COMMIT := "+commit+"\n") {
		t.Errorf("Makefile's ISTIO_COMMIT is not %s", commit)
	}
}
