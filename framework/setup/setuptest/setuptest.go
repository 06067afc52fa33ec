// Package setuptest brings the suite's own set-up up on the local provider
// for the tests that drive a real cluster (make e2e-local): the flags parsed
// and validated as the suite parses them, the registry, setup.Up, and the
// teardown when the test ends. One place, so the cluster tests of istiod,
// istio-cni and the steps cannot drift from each other or from the suite.
package setuptest

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/istioimages"
	"github.com/meshclaims/meshclaims/framework/setup"
)

// Writer sends the set-up's progress lines to the test's log.
type Writer struct{ T testing.TB }

func (w Writer) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// RequireLocal skips t unless MESHCLAIMS_LOCAL=1 (root: the local provider
// runs a Kubernetes node as host processes), saying what would have run.
func RequireLocal(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("MESHCLAIMS_LOCAL") != "1" {
		t.Skipf("set MESHCLAIMS_LOCAL=1 (root) to run %s on a local cluster", what)
	}
}

// IstioImages returns make istio-images' directory and the istio.io/istio
// module directory (MESHCLAIMS_ISTIO_IMAGES, MESHCLAIMS_ISTIO_CHARTS; make
// e2e-local sets both), failing t when either is missing.
func IstioImages(t testing.TB) (archives, charts string) {
	t.Helper()
	archives, charts = os.Getenv("MESHCLAIMS_ISTIO_IMAGES"), os.Getenv("MESHCLAIMS_ISTIO_CHARTS")
	if archives == "" || charts == "" {
		t.Fatal("MESHCLAIMS_ISTIO_IMAGES (make istio-images' bin/istio/images) and MESHCLAIMS_ISTIO_CHARTS (the istio.io/istio module directory) must be set; make e2e-local sets them")
	}
	return archives, charts
}

// IstioVersion is the tag images.json records for the archives (the
// version the images report, e.g. 1.30.3-dev).
func IstioVersion(t testing.TB) string {
	t.Helper()
	archives, _ := IstioImages(t)
	raw, err := os.ReadFile(filepath.Join(archives, "images.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m istioimages.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.Tag == "" {
		t.Fatalf("images.json: tag %q, %v", m.Tag, err)
	}
	return m.Tag
}

// IstioFlags are the suite flags that install Istio from make
// istio-images' archives and the same module's charts.
func IstioFlags(t testing.TB) []string {
	t.Helper()
	archives, charts := IstioImages(t)
	v := IstioVersion(t)
	return []string{"-istio-version=" + v, "-istio-hub=localhost/istio", "-istio-tag=" + v,
		"-image-archives=" + archives, "-istio-charts=" + charts}
}

// Local is a suite brought up on the local provider for a test.
type Local struct {
	Suite    *setup.Suite
	Config   *config.Config
	Registry *claims.Registry
	Out      Writer
}

// Up parses args after -provider=local and a results directory of the
// test's own (args name the mode, cluster name and run id), validates them
// as the suite does, loads the registry and runs setup.Up. The suite is torn
// down when the test ends (after a failure too); a test that tears down
// itself to check the host afterwards calls Suite.Down, which runs once.
func Up(t *testing.T, args ...string) *Local {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..", "..")
	fs := flag.NewFlagSet(t.Name(), flag.ContinueOnError)
	cfg := config.Register(fs)
	if err := fs.Parse(append([]string{"-provider=local", "-results=" + t.TempDir()}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(root, time.Now()); err != nil {
		t.Fatal(err)
	}
	reg, err := claims.Load(cfg.ClaimsFile)
	if err != nil {
		t.Fatal(err)
	}
	out := Writer{t}
	s, err := setup.Up(context.Background(), cfg, reg, out)
	t.Cleanup(func() {
		if err := s.Down(context.Background(), t.Failed()); err != nil {
			t.Errorf("tear-down: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("set-up: %v", err)
	}
	return &Local{Suite: s, Config: cfg, Registry: reg, Out: out}
}
