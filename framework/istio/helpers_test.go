package istio

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := apiserver.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// EnvCharts names a directory with Istio's charts (istio.io/istio's module
// root or its manifests/charts); the Makefile sets it from
// `go mod download -json istio.io/istio@<pseudo-version>`.
const EnvCharts = "MESHCLAIMS_ISTIO_CHARTS"

// chartsDir skips when no charts are configured, unless the run requires
// the real-cluster tests (MESHCLAIMS_REQUIRE_APISERVER=1), then it fails.
func chartsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvCharts)
	if dir == "" {
		if os.Getenv(apiserver.EnvRequire) == "1" {
			t.Fatalf("%s is not set but %s=1: set it to the istio.io/istio module directory", EnvCharts, apiserver.EnvRequire)
		}
		t.Skipf("%s not set (the directory of `go mod download -json istio.io/istio@v0.0.0-20260826214018-9739e10eb9d7`, the Makefile's ISTIO_MODULE)", EnvCharts)
	}
	return dir
}
