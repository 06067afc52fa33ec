package repo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootHoldsTheRegistry(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "testdata", "claims.yaml")); err != nil {
		t.Fatalf("root %s: %v", root, err)
	}
}

func TestDeclaresModule(t *testing.T) {
	if !DeclaresModule([]byte("// x\nmodule github.com/meshclaims/meshclaims\n\ngo 1.26.0\n"), Module) {
		t.Error("own go.mod not recognised")
	}
	if DeclaresModule([]byte("module github.com/meshclaims/meshclaims/cmd/k8s\n"), Module) {
		t.Error("the nested cmd/k8s module taken for the repository")
	}
}
