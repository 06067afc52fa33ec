// Package images builds OCI images of Go main packages without Docker or a
// registry, and ships them to where a cluster can run them.
//
// A meshclaims run deploys the same workload binary into every mode's
// namespace, so the image must be byte-identical from run to run: the same
// source gives the same digest. Build compiles a static binary
// (CGO_ENABLED=0, -trimpath, -buildvcs=false) and packs it into a single
// layer on top of empty.Image with fixed timestamps, sorted tar entries and a
// fixed config creation time. The result can be written as a docker-compatible
// tarball (WriteTarball) that `ctr images import` and kind accept, loaded into
// the nodes of a kind cluster (LoadIntoKind), or pushed to a registry (Push)
// for clusters such as EKS that cannot see a local tarball.
package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Label keys the image always carries (OCI image-spec annotations used as
// config labels, so `crictl inspecti` and registries show them).
const (
	LabelVersion  = "org.opencontainers.image.version"
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
)

// NonRootUID and NonRootGID are the user and group the image runs as. 65532
// is the "nonroot" user of distroless images, so Pod securityContexts written
// for distroless images (runAsNonRoot, runAsUser 65532) fit ours too.
const (
	NonRootUID = 65532
	NonRootGID = 65532
)

// DefaultBinaryPath is where the binary lands in the image unless
// Spec.BinaryPath says otherwise.
const DefaultBinaryPath = "/workload"

// SupportedArchitectures are the GOARCH values Build accepts: amd64 for kind
// on developer machines and CI, arm64 for EKS m7g (Graviton) nodes.
var SupportedArchitectures = []string{"amd64", "arm64"}

// Spec says what to build and how the image around the binary looks.
type Spec struct {
	// MainPackage is the package argument of `go build`, e.g.
	// "./fixtures/workload" (relative to Dir) or a full import path. Required.
	MainPackage string
	// Dir is the directory `go build` runs in (inside the main package's
	// module). Empty means the current directory.
	Dir string
	// LDFlags is passed as -ldflags, e.g. "-s -w -X main.version=v1.2.3".
	LDFlags string
	// BuildTags is passed as -tags.
	BuildTags []string

	// BinaryPath is the absolute path of the binary in the image; empty means
	// DefaultBinaryPath.
	BinaryPath string
	// ExtraFiles are added to the layer next to the binary, e.g. a pause
	// binary for a multi-call image. Parent directories are created.
	ExtraFiles []File

	// ImageConfig is the config around the binary (its Entrypoint
	// defaults to [BinaryPath]).
	ImageConfig
}

// File is one extra file for the image layer. Exactly one of Data and
// SourcePath gives its content.
type File struct {
	// Path is the absolute path in the image, e.g. "/pause".
	Path string
	// Mode holds the permission bits; zero means 0644 (0755 is typical for
	// executables). Ownership is always root:root.
	Mode fs.FileMode
	// Data is the file's content.
	Data []byte
	// SourcePath is a file on this machine to copy the content from.
	SourcePath string
}

// Image is the result of Build.
type Image struct {
	// Image is the OCI image (manifest, config and the single layer).
	Image v1.Image
	// Digest is the manifest digest: the image's identity in a registry
	// (Push preserves it).
	Digest v1.Hash
	// ConfigDigest is the config blob's digest, the "image ID". A docker
	// tarball carries no manifest, so an importer (ctr, kind, docker load)
	// synthesizes its own and the manifest digest on a node differs from
	// Digest; the config digest survives the tarball and is what `crictl
	// images` shows as IMAGE ID, so it is the identity to check on kind nodes.
	ConfigDigest v1.Hash
	// Platform is the image's OS and architecture (always linux).
	Platform v1.Platform
	// BinaryPath is where the binary lives in the image.
	BinaryPath string
	// BinarySHA256 is the hex sha256 of the binary as built, to check what a
	// node actually runs against what was compiled.
	BinarySHA256 string
	// Created is the fixed timestamp used for files and config.
	Created time.Time
}

// Build compiles spec.MainPackage for linux/spec.GOARCH and packs it into a
// single-layer image. The same source, flags and toolchain give the same
// Image.Digest.
func Build(ctx context.Context, spec Spec) (Image, error) {
	s, err := spec.withDefaults()
	if err != nil {
		return Image{}, err
	}
	binary, err := compile(ctx, s)
	if err != nil {
		return Image{}, err
	}
	files, err := layerFiles(s, binary)
	if err != nil {
		return Image{}, err
	}
	a, err := assemble(buildConfig(s), files)
	if err != nil {
		return Image{}, fmt.Errorf("images: assembling image of %s: %w", s.MainPackage, err)
	}
	sum := sha256.Sum256(binary)
	return Image{
		Image:        a.image,
		Digest:       a.digest,
		ConfigDigest: a.configDigest,
		Platform:     v1.Platform{OS: "linux", Architecture: s.GOARCH},
		BinaryPath:   s.BinaryPath,
		BinarySHA256: hex.EncodeToString(sum[:]),
		Created:      s.Created,
	}, nil
}

// reservedPaths are files Build writes itself; ExtraFiles may not replace
// them because the non-root user depends on them.
var reservedPaths = []string{"/etc/passwd", "/etc/group"}

// withDefaults validates spec and fills in defaults, returning a copy.
func (spec Spec) withDefaults() (Spec, error) {
	s := spec
	if strings.TrimSpace(s.MainPackage) == "" {
		return s, errors.New("images: Spec.MainPackage is empty; give the package to build, e.g. \"./fixtures/workload\"")
	}
	if err := s.ImageConfig.setDefaults("Spec"); err != nil {
		return s, err
	}
	if s.BinaryPath == "" {
		s.BinaryPath = DefaultBinaryPath
	}
	if err := checkImagePath("Spec.BinaryPath", s.BinaryPath); err != nil {
		return s, err
	}
	if slices.Contains(reservedPaths, s.BinaryPath) {
		return s, fmt.Errorf("images: Spec.BinaryPath %q is reserved for the non-root user's files (%s)", s.BinaryPath, strings.Join(reservedPaths, ", "))
	}
	if len(s.Entrypoint) == 0 {
		s.Entrypoint = []string{s.BinaryPath}
	}
	if strings.TrimSpace(s.Version) == "" {
		return s, fmt.Errorf("images: Spec.Version is empty; it becomes the %s label and the image tag", LabelVersion)
	}
	seen := map[string]bool{s.BinaryPath: true}
	for i, f := range s.ExtraFiles {
		if err := f.check(fmt.Sprintf("Spec.ExtraFiles[%d]", i)); err != nil {
			return s, err
		}
		if slices.Contains(reservedPaths, f.Path) {
			return s, fmt.Errorf("images: Spec.ExtraFiles[%d].Path %q is reserved for the non-root user's files (%s)", i, f.Path, strings.Join(reservedPaths, ", "))
		}
		if seen[f.Path] {
			return s, fmt.Errorf("images: Spec.ExtraFiles[%d].Path %q is given twice (or is the binary's path)", i, f.Path)
		}
		seen[f.Path] = true
	}
	return s, nil
}

// checkImagePath accepts clean absolute paths below "/".
func checkImagePath(field, p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("images: %s %q is not a clean absolute file path; accepted: e.g. \"/workload\"", field, p)
	}
	return nil
}

// sourceDateEpoch reads $SOURCE_DATE_EPOCH (reproducible-builds.org), the
// conventional way for a build system to pin timestamps.
func sourceDateEpoch() (time.Time, error) {
	v, ok := os.LookupEnv("SOURCE_DATE_EPOCH")
	if !ok || v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("images: SOURCE_DATE_EPOCH=%q is not a non-negative integer number of seconds since 1970-01-01 UTC", v)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// GoBuildArgs returns the `go build` arguments Build uses for spec (after
// defaults), without the -o flag; exported so that tests and tools can
// reproduce a build outside the image.
func GoBuildArgs(spec Spec) ([]string, error) {
	s, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	return goBuildArgs(s), nil
}

func goBuildArgs(s Spec) []string {
	args := []string{"build", "-trimpath", "-buildvcs=false"}
	if s.LDFlags != "" {
		args = append(args, "-ldflags="+s.LDFlags)
	}
	if len(s.BuildTags) > 0 {
		args = append(args, "-tags="+strings.Join(s.BuildTags, ","))
	}
	return args
}

// GoBuildEnv returns the environment Build gives `go build` for an
// architecture: the current environment plus the static linux settings.
func GoBuildEnv(goarch string) []string {
	// Later entries win in os/exec, so these override whatever the caller's
	// environment says about cgo and the target.
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
}

// compile runs `go build` into a private temporary directory and returns the
// binary's bytes.
func compile(ctx context.Context, s Spec) ([]byte, error) {
	out, err := os.MkdirTemp("", "meshclaims-images-")
	if err != nil {
		return nil, fmt.Errorf("images: temporary build directory: %w", err)
	}
	defer os.RemoveAll(out)
	binPath := filepath.Join(out, "binary")

	args := append(goBuildArgs(s), "-o", binPath, s.MainPackage)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = s.Dir
	cmd.Env = GoBuildEnv(s.GOARCH)
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		dir := s.Dir
		if dir == "" {
			dir = "."
		}
		return nil, fmt.Errorf("images: go %s (in %s, GOOS=linux GOARCH=%s CGO_ENABLED=0) failed: %w\n%s",
			strings.Join(args, " "), dir, s.GOARCH, err, strings.TrimSpace(output.String()))
	}
	binary, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("images: reading built binary of %s: %w", s.MainPackage, err)
	}
	return binary, nil
}
