package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -requirements is checked with the other flags, before any cluster work:
// a bad file fails with exit 2 naming its line and field, and writes
// nothing; a good one passes validation (the control: -plan).
func TestRequirementsFlagRefusedBeforeAnyWork(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "tiers.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ntiers:\n  - name: api\n    max_rollout_error_rate: lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	out, code := run(t, "-mode=none,sidecar", "-requirements="+bad, "-results="+results)
	if code != 2 || !strings.Contains(out, bad+`:4: tier "api": field "max_rollout_error_rate": "lots" is not a rate; accepted:`) {
		t.Errorf("bad file: exit %d\n%s", code, out)
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("a refused run wrote %v", entries)
	}
	out, code = run(t, "-mode=none,sidecar", "-requirements="+filepath.Join(repoRoot(), "testdata", "requirements", "tiers.yaml"), "-plan", "-results="+results)
	if code != 0 {
		t.Errorf("good file with -plan: exit %d\n%s", code, out)
	}
}
