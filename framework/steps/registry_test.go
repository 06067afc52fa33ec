package steps

import (
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
)

// registryClaim is claim id of the repository's registry
// (testdata/claims.yaml), which the judges' tests judge against.
func registryClaim(t *testing.T, id string) *claims.Claim {
	t.Helper()
	return claimstest.Registry(t).MustGet(id)
}
