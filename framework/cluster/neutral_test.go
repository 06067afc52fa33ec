package cluster

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/repo"
)

// providerPackages are the cluster providers: this package (kind,
// existing, and the local provider's adapter) and the local cluster.
var providerPackages = []string{"framework/cluster", "framework/localk8s"}

// meshPackages are this module's packages about Istio: its install,
// images and checks, what its data plane leaves on a host or writes in
// its logs, its proxies' dumps and certificates, and the packages that
// compose its values or build its objects. Any framework/istio* package
// counts too.
var meshPackages = []string{
	"framework/probeset", "framework/ztunnellog", "framework/hbone", "framework/proxycert",
	"framework/proxydump", "framework/envoylog", "framework/envoywheel",
	"framework/setup", "framework/scenario", "framework/steps", "fixtures",
}

// istioValueKeys are keys of Istio's chart values: those the suite sets
// (framework/setup, testdata/istio/values.yaml) and a few of meshConfig's.
var istioValueKeys = []string{
	"nativeNftables", "cniBinDir", "cniConfDir", "cniNetnsDir", "autoscaleEnabled",
	"replicaCount", "meshConfig", "discoverySelectors", "defaultConfig", "holdApplicationUntilProxyStarts",
}

func isMeshPackage(rel string) bool {
	return strings.HasPrefix(rel, "framework/istio") || slices.Contains(meshPackages, rel)
}

// The providers state facts about the nodes and know nothing of a mesh
// (cluster.Facts): no provider package imports one of this module's
// packages about Istio, directly, through another of the module's
// packages, or in its tests; none of their Go files has an Istio value
// key in a string; and no identifier of their code names Istio. (Their
// comments and the host state the local cluster's wipe removes may
// name what runs on the node.) Negative control: the same checks find the
// mesh layer's import, key and identifiers in framework/setup.
func TestProvidersKnowNoMesh(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range providerPackages {
		for _, f := range meshNames(t, root, p) {
			t.Errorf("%s: %s", p, f)
		}
	}
	control := meshNames(t, root, "framework/setup")
	for _, want := range []string{"imports framework/istio", "nativeNftables", "identifier istioValues"} {
		if !slices.ContainsFunc(control, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("control: no finding %q among framework/setup's %d", want, len(control))
		}
	}
}

// meshNames lists what package rel (a directory under root) knows of the
// mesh: the mesh packages it depends on, Istio value keys in its strings,
// and identifiers naming Istio in its non-test code.
func meshNames(t *testing.T, root, rel string) []string {
	t.Helper()
	var found []string
	pkg, err := build.ImportDir(filepath.Join(root, rel), 0)
	if err != nil {
		t.Fatal(err)
	}
	direct := append(append(append([]string{}, pkg.Imports...), pkg.TestImports...), pkg.XTestImports...)
	for _, dep := range moduleDeps(t, root, direct) {
		if isMeshPackage(dep) {
			found = append(found, "imports "+dep)
		}
	}
	files := append(append(append([]string{}, pkg.GoFiles...), pkg.TestGoFiles...), pkg.XTestGoFiles...)
	for _, name := range files {
		if rel == "framework/cluster" && name == "neutral_test.go" {
			continue // lists the keys it looks for
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, rel, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		test := strings.HasSuffix(name, "_test.go")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec:
				return false
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					break
				}
				s, _ := strconv.Unquote(n.Value)
				for _, k := range istioValueKeys {
					if strings.Contains(s, k) {
						found = append(found, fmt.Sprintf("%s: Istio value key %s", fset.Position(n.Pos()), k))
					}
				}
			case *ast.Ident:
				if !test && strings.Contains(strings.ToLower(n.Name), "istio") {
					found = append(found, fmt.Sprintf("%s: identifier %s", fset.Position(n.Pos()), n.Name))
				}
			}
			return true
		})
	}
	return found
}

// moduleDeps are the packages of this module (relative to root) among
// imports and everything they import in turn, for this platform's build.
func moduleDeps(t *testing.T, root string, imports []string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	var walk func(paths []string)
	walk = func(paths []string) {
		for _, p := range paths {
			rel, ok := strings.CutPrefix(p, repo.Module+"/")
			if !ok || seen[rel] {
				continue
			}
			seen[rel] = true
			out = append(out, rel)
			pkg, err := build.ImportDir(filepath.Join(root, rel), 0)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			walk(pkg.Imports)
		}
	}
	walk(imports)
	return out
}
