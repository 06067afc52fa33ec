// Package claimstest gives tests the repository's claims registry
// (testdata/claims.yaml): the judges, the plan and the report are tested
// against the registry the suite runs, not a copy that could drift.
package claimstest

import (
	"path/filepath"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/repo"
)

// Path is testdata/claims.yaml of this repository.
func Path(t testing.TB) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "claims.yaml")
}

// Registry is the repository's registry, loaded (and so validated) as the
// suite loads it; t fails if it does not load.
func Registry(t testing.TB) *claims.Registry {
	t.Helper()
	reg, err := claims.Load(Path(t))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// Claim is claim id of the repository's registry, which a judge's test
// judges against; t fails if the registry does not hold it.
func Claim(t testing.TB, id string) *claims.Claim {
	t.Helper()
	return Registry(t).MustGet(id)
}
