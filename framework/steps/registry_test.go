package steps

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
)

// testRegistry is the repository's registry (testdata/claims.yaml), which
// the judges' tests judge against.
func testRegistry(t *testing.T) *claims.Registry {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	reg, err := claims.Load(filepath.Join(filepath.Dir(here), "..", "..", "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// registryClaim is claim id of the repository's registry.
func registryClaim(t *testing.T, id string) *claims.Claim {
	t.Helper()
	return testRegistry(t).MustGet(id)
}
