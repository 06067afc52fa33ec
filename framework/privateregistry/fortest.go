package privateregistry

import (
	"context"
	"errors"
	"os"
	"testing"
)

// EnvRequire, set to 1 (as `make test` does), turns "registry not built"
// from a skip into a failure, so CI cannot pass by skipping every test that
// needs the real registry.
const EnvRequire = "MESHCLAIMS_REQUIRE_REGISTRY"

// ForTest starts a registry in a temporary directory for t and stops it when
// t ends. Without the binary, t is skipped saying how to build it, unless
// MESHCLAIMS_REQUIRE_REGISTRY=1.
func ForTest(t testing.TB) *Registry {
	t.Helper()
	r, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		if errors.Is(err, ErrBinaryMissing) && os.Getenv(EnvRequire) != "1" {
			t.Skipf("no registry here: %v (set %s=1 to make this a failure)", err, EnvRequire)
		}
		t.Fatalf("private registry: %v", err)
	}
	t.Cleanup(r.Stop)
	return r
}
