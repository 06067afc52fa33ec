package apiserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	// Linked (not used) so the test binary's build info names the exact
	// versions of these modules: the CRDs installed then match the Go types
	// compiled into the binary that applies objects against them.
	_ "istio.io/api/networking/v1"
	_ "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshclaims/meshclaims/framework/repo"
)

const (
	istioAPIModule   = "istio.io/api"
	gatewayAPIModule = "sigs.k8s.io/gateway-api"
)

// ModuleDir returns the directory of a module this binary was built with, in
// the module cache (from the binary's build info), falling back to
// `go list -m` run in the repository. It never downloads anything.
func ModuleDir(modPath string) (string, error) {
	if dir, ok := moduleDirFromBuildInfo(modPath); ok {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("module %s: not in build info, and %v", modPath, err)
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", modPath)
	cmd.Dir = root
	// GOPROXY=off: locating a module must never download one.
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		return "", fmt.Errorf("module %s: not in build info, and `go list -m` in %s failed: %v %s", modPath, root, err, strings.TrimSpace(stderr.String()))
	}
	return dir, nil
}

func moduleDirFromBuildInfo(modPath string) (string, bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, dep := range info.Deps {
		if dep.Path != modPath {
			continue
		}
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
			if m.Version == "" { // replaced by a local directory
				return existingDir(m.Path)
			}
		}
		cache := modCache()
		if cache == "" {
			return "", false
		}
		return existingDir(filepath.Join(cache, escapePath(m.Path)+"@"+escapePath(m.Version)))
	}
	return "", false
}

func existingDir(dir string) (string, bool) {
	fi, err := os.Stat(dir)
	return dir, err == nil && fi.IsDir()
}

// modCache mirrors the go command's own rule for the module cache location.
func modCache() string {
	if c := os.Getenv("GOMODCACHE"); c != "" {
		return c
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if c := strings.TrimSpace(string(out)); c != "" {
			return c
		}
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		gopath = filepath.Join(home, "go")
	}
	return filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
}

// escapePath is the module cache's case encoding: an upper-case letter is
// stored as '!' followed by its lower-case form (golang.org/x/mod/module).
func escapePath(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			b.WriteRune(r + ('a' - 'A'))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// RepoRoot returns the repository root (framework/repo.Root).
func RepoRoot() (string, error) { return repo.Root() }
