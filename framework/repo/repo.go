// Package repo finds the meshclaims repository on disk: the suite builds
// the workload image and the local cluster's images from it, and finds its
// registry and charts there.
package repo

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Module is the module path the repository's go.mod declares.
const Module = "github.com/meshclaims/meshclaims"

// Root returns the repository root: first from this source file's location
// (kept in test binaries and `go run` builds), else by walking up from the
// working directory (binaries built with -trimpath). Either way the
// directory's go.mod must declare Module.
func Root() (string, error) {
	if _, here, _, ok := runtime.Caller(0); ok {
		root := filepath.Clean(filepath.Join(filepath.Dir(here), "..", ".."))
		if declares(root) {
			return root, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if declares(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod declaring module %s at or above %s", Module, wd)
		}
	}
}

func declares(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	return DeclaresModule(data, Module)
}

// DeclaresModule reports whether go.mod content declares module mod.
func DeclaresModule(gomod []byte, mod string) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == mod {
			return true
		}
	}
	return false
}
