package images

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The same source, checked out in two different directories and built into
// two different temporary outputs, gives the same image digest and the same
// tarball bytes.
func TestBuildIsReproducible(t *testing.T) {
	a := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v1.0.0"))
	b := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v1.0.0"))
	if a.Digest != b.Digest {
		t.Fatalf("same source gave digests %s and %s", a.Digest, b.Digest)
	}
	if a.ConfigDigest != b.ConfigDigest {
		t.Fatalf("same source gave config digests %s and %s", a.ConfigDigest, b.ConfigDigest)
	}
	if a.BinarySHA256 != b.BinarySHA256 {
		t.Fatalf("same source gave binaries %s and %s", a.BinarySHA256, b.BinarySHA256)
	}
	ref := ImageRef("tiny", "v1.0.0")
	pa, pb := filepath.Join(t.TempDir(), "a.tar"), filepath.Join(t.TempDir(), "b.tar")
	if err := WriteTarball(a.Image, ref, pa); err != nil {
		t.Fatal(err)
	}
	if err := WriteTarball(b.Image, ref, pb); err != nil {
		t.Fatal(err)
	}
	if ha, hb := fileSHA256(t, pa), fileSHA256(t, pb); ha != hb {
		t.Fatalf("same image gave tarballs with sha256 %s and %s", ha, hb)
	}
}

// Negative controls for reproducibility: each kind of change must move the
// digest, or the equality above would prove nothing.
func TestBuildDigestChangesWithInput(t *testing.T) {
	dir := writeTinyModule(t, "hello")
	base := mustBuild(t, tinySpec(dir, "v1.0.0"))

	otherX := tinySpec(dir, "v1.0.0")
	otherX.LDFlags = "-X main.version=v1.0.1"
	otherSource := tinySpec(writeTinyModule(t, "hello, world"), "v1.0.0")
	otherLabel := tinySpec(dir, "v1.0.0")
	otherLabel.Revision = "fedcba9876543210fedcba9876543210fedcba98"
	otherTime := tinySpec(dir, "v1.0.0")
	otherTime.Created = time.Unix(1700000000, 0)
	extraFile := tinySpec(dir, "v1.0.0")
	extraFile.ExtraFiles = []File{{Path: "/pause", Mode: 0o755, Data: []byte("not really pause")}}

	for name, spec := range map[string]Spec{
		"ldflags -X value": otherX, "source text": otherSource, "revision label": otherLabel,
		"timestamp": otherTime, "extra file": extraFile,
	} {
		t.Run(name, func(t *testing.T) {
			got := mustBuild(t, spec)
			if got.Digest == base.Digest || got.ConfigDigest == base.ConfigDigest {
				t.Fatalf("changing the %s left the digest at %s (config %s)", name, got.Digest, got.ConfigDigest)
			}
		})
	}
	// The binary itself must differ when the code or its -X data differ.
	if b := mustBuild(t, otherX); b.BinarySHA256 == base.BinarySHA256 {
		t.Error("a different -X value gave the same binary")
	}
}

func TestSourceDateEpoch(t *testing.T) {
	dir := writeTinyModule(t, "hello")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	img := mustBuild(t, tinySpec(dir, "v1.0.0"))
	want := time.Unix(1700000000, 0).UTC()
	if !img.Created.Equal(want) {
		t.Fatalf("Created = %v, want %v from SOURCE_DATE_EPOCH", img.Created, want)
	}
	cfg, err := img.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Created.Time.Equal(want) {
		t.Errorf("config created = %v, want %v", cfg.Created.Time, want)
	}
	for _, e := range layerEntries(t, img.Image) {
		if !e.hdr.ModTime.Equal(want) {
			t.Errorf("%s has mtime %v, want %v", e.hdr.Name, e.hdr.ModTime, want)
		}
	}

	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	_, err = Build(context.Background(), tinySpec(dir, "v1.0.0"))
	if err == nil || !strings.Contains(err.Error(), `"yesterday"`) {
		t.Fatalf("bad SOURCE_DATE_EPOCH: err = %v, want one naming the value", err)
	}
}

func TestImageConfig(t *testing.T) {
	img := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v1.2.3"))
	cfg, err := img.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532 (non-root)", cfg.Config.User)
	}
	wantLabels := map[string]string{
		LabelVersion:  "v1.2.3",
		LabelSource:   "https://github.com/meshclaims/meshclaims",
		LabelRevision: "0123456789abcdef0123456789abcdef01234567",
	}
	for k, v := range wantLabels {
		if cfg.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Config.Labels[k], v)
		}
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/workload"}) {
		t.Errorf("Entrypoint = %q", cfg.Config.Entrypoint)
	}
	if !slices.Equal(cfg.Config.Cmd, []string{"--version"}) {
		t.Errorf("Cmd = %q", cfg.Config.Cmd)
	}
	if !slices.Equal(cfg.Config.Env, []string{"MESHCLAIMS_ROLE=test"}) {
		t.Errorf("Env = %q", cfg.Config.Env)
	}
	if cfg.Config.WorkingDir != "/" {
		t.Errorf("WorkingDir = %q", cfg.Config.WorkingDir)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform = %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if !cfg.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("created = %v, want the Unix epoch", cfg.Created.Time)
	}
	if mt, _ := img.Image.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s, want OCI", mt)
	}
	m, err := img.Image.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest = %+v, want one OCI layer and an OCI config", m)
	}
	if len(cfg.RootFS.DiffIDs) != 1 || len(cfg.History) != 1 {
		t.Errorf("rootfs %v, history %v: want one layer", cfg.RootFS.DiffIDs, cfg.History)
	}
}

func TestLayerContents(t *testing.T) {
	spec := tinySpec(writeTinyModule(t, "hello"), "v1.0.0")
	pauseSrc := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(pauseSrc, []byte("pause-binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec.ExtraFiles = []File{
		{Path: "/usr/local/bin/pause", Mode: 0o755, SourcePath: pauseSrc},
		{Path: "/etc/meshclaims/config.json", Data: []byte(`{}`)},
	}
	img := mustBuild(t, spec)
	entries := layerEntries(t, img.Image)

	var names []string
	byName := map[string]*tar.Header{}
	for _, e := range entries {
		names = append(names, e.hdr.Name)
		byName[e.hdr.Name] = e.hdr
		if !e.hdr.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s mtime %v, want the epoch", e.hdr.Name, e.hdr.ModTime)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("tar entries not sorted: %q", names)
	}
	for _, want := range []string{"etc/", "etc/meshclaims/", "usr/", "usr/local/", "usr/local/bin/", "tmp/", "home/", "home/nonroot/"} {
		if h := byName[want]; h == nil || h.Typeflag != tar.TypeDir {
			t.Errorf("missing directory %s in %q", want, names)
		}
	}
	checks := []struct {
		name     string
		mode     int64
		uid, gid int
	}{
		{"workload", 0o755, 0, 0},
		{"usr/local/bin/pause", 0o755, 0, 0},
		{"etc/meshclaims/config.json", 0o644, 0, 0},
		{"etc/passwd", 0o644, 0, 0},
		{"tmp/", 0o1777, 0, 0},
		{"home/nonroot/", 0o755, NonRootUID, NonRootGID},
	}
	for _, c := range checks {
		h := byName[c.name]
		if h == nil {
			t.Errorf("missing %s", c.name)
			continue
		}
		if h.Mode != c.mode || h.Uid != c.uid || h.Gid != c.gid {
			t.Errorf("%s: mode %o uid %d gid %d, want %o %d %d", c.name, h.Mode, h.Uid, h.Gid, c.mode, c.uid, c.gid)
		}
	}
	if got := string(fileInLayer(t, img.Image, "/usr/local/bin/pause")); got != "pause-binary" {
		t.Errorf("pause content %q", got)
	}
	if got := string(fileInLayer(t, img.Image, "/etc/passwd")); !strings.Contains(got, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the non-root user:\n%s", got)
	}
	if got := string(fileInLayer(t, img.Image, "/etc/group")); !strings.Contains(got, "nonroot:x:65532:") {
		t.Errorf("/etc/group lacks the non-root group:\n%s", got)
	}
	if got := sha256Hex(fileInLayer(t, img.Image, "/workload")); got != img.BinarySHA256 {
		t.Errorf("binary in layer has sha256 %s, Image.BinarySHA256 says %s", got, img.BinarySHA256)
	}
}

// The binary inside the written tarball is byte-identical to an independent
// `go build` with the same flags, and it runs and reports its -X version.
func TestTarballCarriesTheBuiltBinary(t *testing.T) {
	dir := writeTinyModule(t, "hello")
	spec := tinySpec(dir, "v7.7.7")
	img := mustBuild(t, spec)
	tarPath := filepath.Join(t.TempDir(), "out", "tiny.tar")
	ref := ImageRef("tiny", "v7.7.7")
	if err := WriteTarball(img.Image, ref, tarPath); err != nil {
		t.Fatal(err)
	}

	// Read it back the way an importer does: manifest.json, then blobs.
	loaded := readTarball(t, tarPath, ref)
	// A docker tarball has no manifest, so compare what it does carry: the
	// config blob (the image ID) and the layer blob.
	if c, _ := loaded.ConfigName(); c != img.ConfigDigest {
		t.Fatalf("tarball config digest %s, built %s", c, img.ConfigDigest)
	}
	loadedLayers, _ := loaded.Layers()
	builtLayers, _ := img.Image.Layers()
	ld, _ := loadedLayers[0].Digest()
	bd, _ := builtLayers[0].Digest()
	if ld != bd {
		t.Fatalf("tarball layer digest %s, built %s", ld, bd)
	}
	binary := fileInLayer(t, loaded, "/workload")

	// A fresh build outside the package's code path.
	args, err := GoBuildArgs(spec)
	if err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	cmd := exec.Command("go", append(args, "-o", fresh, ".")...)
	cmd.Dir = dir
	cmd.Env = GoBuildEnv(runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fresh go build: %v\n%s", err, out)
	}
	if got, want := sha256Hex(binary), fileSHA256(t, fresh); got != want {
		t.Fatalf("binary in tarball sha256 %s, fresh build %s", got, want)
	}
	if sha256Hex(binary) != img.BinarySHA256 {
		t.Fatalf("Image.BinarySHA256 %s does not match the tarball's binary", img.BinarySHA256)
	}

	if runtime.GOOS != "linux" {
		t.Skip("the extracted binary is linux/" + runtime.GOARCH + "; cannot run it on " + runtime.GOOS)
	}
	extracted := filepath.Join(t.TempDir(), "workload")
	if err := os.WriteFile(extracted, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(extracted, "--version").Output()
	if err != nil {
		t.Fatalf("running extracted binary: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "v7.7.7" {
		t.Fatalf("extracted binary --version printed %q, want v7.7.7", got)
	}
	// It is static: no ELF interpreter, so it runs in an image with no libc.
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("binary has a PT_INTERP program header: it is dynamically linked")
		}
	}
}

// arm64 for EKS m7g nodes: the config says arm64 and the binary is an
// AArch64 ELF.
func TestBuildArm64(t *testing.T) {
	spec := tinySpec(writeTinyModule(t, "hello"), "v1.0.0")
	spec.GOARCH = "arm64"
	img := mustBuild(t, spec)
	cfg, err := img.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "arm64" || img.Platform.Architecture != "arm64" {
		t.Fatalf("architecture = %s / %s, want arm64", cfg.Architecture, img.Platform.Architecture)
	}
	f, err := elf.NewFile(bytes.NewReader(fileInLayer(t, img.Image, "/workload")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("binary machine = %v, want EM_AARCH64", f.Machine)
	}
	// Negative control: the default build for this host is not AArch64
	// unless the host is.
	if runtime.GOARCH != "arm64" {
		host := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v1.0.0"))
		if host.Digest == img.Digest {
			t.Fatal("arm64 and host builds have the same digest")
		}
	}
}

func TestBuildRejectsBadSpecs(t *testing.T) {
	dir := writeTinyModule(t, "hello")
	tests := []struct {
		name    string
		mutate  func(*Spec)
		wantErr []string
	}{
		{"no main package", func(s *Spec) { s.MainPackage = "" }, []string{"MainPackage"}},
		{"bad arch", func(s *Spec) { s.GOARCH = "s390x" }, []string{`"s390x"`, "amd64, arm64"}},
		{"relative binary path", func(s *Spec) { s.BinaryPath = "workload" }, []string{`"workload"`, "absolute"}},
		{"binary over passwd", func(s *Spec) { s.BinaryPath = "/etc/passwd" }, []string{`"/etc/passwd"`, "reserved"}},
		{"no version", func(s *Spec) { s.Version = "" }, []string{"Version", LabelVersion}},
		{"env without =", func(s *Spec) { s.Env = []string{"JUSTKEY"} }, []string{`"JUSTKEY"`, "KEY=VALUE"}},
		{"relative workdir", func(s *Spec) { s.WorkingDir = "data" }, []string{`"data"`, "absolute"}},
		{"label overrides version", func(s *Spec) { s.Labels = map[string]string{LabelVersion: "x"} }, []string{LabelVersion, "Spec.Version"}},
		{"extra file without content", func(s *Spec) { s.ExtraFiles = []File{{Path: "/pause"}} }, []string{"/pause", "Data and SourcePath"}},
		{"extra file twice", func(s *Spec) {
			s.ExtraFiles = []File{{Path: "/pause", Data: []byte("a")}, {Path: "/pause", Data: []byte("b")}}
		}, []string{`"/pause"`, "twice"}},
		{"extra file at binary path", func(s *Spec) { s.ExtraFiles = []File{{Path: "/workload", Data: []byte("a")}} }, []string{`"/workload"`}},
		{"extra file over group", func(s *Spec) { s.ExtraFiles = []File{{Path: "/etc/group", Data: []byte("a")}} }, []string{`"/etc/group"`, "reserved"}},
		{"extra file over a directory", func(s *Spec) { s.ExtraFiles = []File{{Path: "/tmp", Data: []byte("a")}} }, []string{`"/tmp"`, "directory"}},
		{"extra file under the binary", func(s *Spec) { s.ExtraFiles = []File{{Path: "/workload/x", Data: []byte("a")}} }, []string{`"/workload"`, "directory"}},
		{"extra file bad mode", func(s *Spec) {
			s.ExtraFiles = []File{{Path: "/pause", Data: []byte("a"), Mode: os.ModeSymlink | 0o777}}
		}, []string{"/pause", "permission bits"}},
		{"extra file missing source", func(s *Spec) {
			s.ExtraFiles = []File{{Path: "/pause", SourcePath: filepath.Join(dir, "no-such-file")}}
		}, []string{"no-such-file"}},
		{"unknown package", func(s *Spec) { s.MainPackage = "./nosuchdir" }, []string{"nosuchdir", "go build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tinySpec(dir, "v1.0.0")
			tt.mutate(&spec)
			_, err := Build(context.Background(), spec)
			if err == nil {
				t.Fatal("Build accepted a bad spec")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A compile error reaches the caller with go's own message.
func TestBuildReportsCompileErrors(t *testing.T) {
	dir := writeTinyModule(t, "hello")
	if err := os.WriteFile(filepath.Join(dir, "broken.go"), []byte("package main\n\nfunc broken() { undefinedThing() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), tinySpec(dir, "v1.0.0"))
	if err == nil || !strings.Contains(err.Error(), "undefinedThing") {
		t.Fatalf("err = %v, want go's message about undefinedThing", err)
	}
}

func TestBuildHonoursCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, tinySpec(writeTinyModule(t, "hello"), "v1.0.0")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Build with a cancelled context: err = %v, want context.Canceled", err)
	}
}

// The real workload program, when it exists. Skipped only when
// fixtures/workload has no Go files yet.
func TestBuildRealWorkload(t *testing.T) {
	root := moduleRoot(t)
	pkgDir := filepath.Join(root, "fixtures", "workload")
	goFiles, _ := filepath.Glob(filepath.Join(pkgDir, "*.go"))
	if len(goFiles) == 0 {
		t.Skipf("no Go files in %s yet (the workload package is written elsewhere)", pkgDir)
	}
	spec := Spec{MainPackage: "./fixtures/workload", Dir: root, LDFlags: "-s -w", ImageConfig: ImageConfig{Version: "test"}}
	a := mustBuild(t, spec)
	b := mustBuild(t, spec)
	if a.Digest != b.Digest {
		t.Fatalf("two builds of ./fixtures/workload: %s and %s", a.Digest, b.Digest)
	}
	if err := WriteTarball(a.Image, ImageRef("workload", "test"), filepath.Join(t.TempDir(), "workload.tar")); err != nil {
		t.Fatal(err)
	}
	t.Logf("workload image %s, binary sha256 %s", a.Digest, a.BinarySHA256)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	return filepath.Dir(gomod)
}
