package all

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

func registry(t *testing.T) *claims.Registry {
	reg, err := claims.Load(filepath.Join(repoRoot(), "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// Every claim of the registry has exactly one declared spec for each mode it
// applies to, and no declaration names an unknown claim.
func TestDeclarationsCoverRegistry(t *testing.T) {
	reg := registry(t)
	if _, err := spec.Plan(reg, spec.Defs(), mode.All()); err != nil {
		t.Fatal(err)
	}
	if missing := spec.Unspecified(reg, spec.Defs(), mode.All()); len(missing) > 0 {
		t.Fatalf("claims without a spec: %s", strings.Join(missing, ", "))
	}
}

// The same, proven on the Ginkgo spec tree itself: build the e2e test binary,
// dry-run it for each mode with a JSON report, and compare the specs' claim
// and mode labels with the registry.
func TestSpecTreeMatchesRegistryPerMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the e2e binary")
	}
	reg := registry(t)
	bin := filepath.Join(t.TempDir(), "e2e.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./e2e")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the e2e binary: %v\n%s", err, out)
	}
	for _, m := range mode.All() {
		t.Run(string(m), func(t *testing.T) {
			rep := filepath.Join(t.TempDir(), "report.json")
			cmd := exec.Command(bin, "-mode="+string(m), "-results="+t.TempDir(), "-ginkgo.dry-run", "-ginkgo.json-report="+rep)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("dry run: %v\n%s", err, out)
			}
			got := specClaims(t, rep, m)
			var want []string
			for _, c := range reg.ForMode(m) {
				want = append(want, c.ID)
			}
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("mode %s:\n spec tree: %v\n registry:  %v", m, got, want)
			}
		})
	}
}

// specClaims reads a Ginkgo JSON report and returns the claim of every spec,
// checking each spec carries exactly one claim label and the mode's label.
func specClaims(t *testing.T, path string, m mode.Mode) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var reports []struct {
		SpecReports []struct {
			LeafNodeType   string
			LeafNodeText   string
			LeafNodeLabels []string
		}
	}
	if err := json.Unmarshal(b, &reports); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var out []string
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			var ids []string
			hasMode := false
			for _, l := range s.LeafNodeLabels {
				if id, ok := strings.CutPrefix(l, "claim:"); ok {
					ids = append(ids, id)
				}
				hasMode = hasMode || l == "mode:"+string(m)
			}
			if len(ids) != 1 || !hasMode {
				t.Errorf("spec %q has claim labels %v and mode label %v", s.LeafNodeText, ids, hasMode)
				continue
			}
			if seen[ids[0]]++; seen[ids[0]] > 1 {
				t.Errorf("claim %s has more than one spec in mode %s", ids[0], m)
			}
			out = append(out, ids[0])
		}
	}
	sort.Strings(out)
	return out
}
