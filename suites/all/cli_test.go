package all

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs the e2e binary with args and returns its output and exit code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(e2eBinary(t), args...)
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("%v: %v", args, err)
	return "", -1
}

// A selection that would run nothing, or names a claim, mode or area that
// does not exist, fails with exit code 2 before anything is written, naming
// the closest ids. A selection that matches runs (the control: as a dry run).
func TestSelectionThatMatchesNothingFails(t *testing.T) {
	cases := map[string][]string{
		`claim id "latency.percentile" is not known; closest: latency.percentiles`:                 {"-mode=none", "-ginkgo.label-filter=claim:latency.percentile"},
		`claim "netpol.hbone-allowed" applies to -mode=ambient-l4,ambient-l7, not to the selected`: {"-mode=none", "-ginkgo.label-filter=claim:netpol.hbone-allowed"},
		`area "latncy" is not known; closest: latency`:                                             {"-mode=none", "-ginkgo.label-filter=area:latncy"},
		`-ginkgo.focus="no such spec" match none of the`:                                           {"-mode=sidecar", "-ginkgo.focus=no such spec"},
	}
	for want, args := range cases {
		results := t.TempDir()
		out, code := run(t, append(args, "-results="+results)...)
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("%v: exit %d, output:\n%s\nwant %q", args, code, out, want)
		}
		if entries, _ := os.ReadDir(results); len(entries) != 0 {
			t.Errorf("%v: a refused run wrote %v", args, entries)
		}
	}
	// A filter the check cannot foresee (-ginkgo.focus-file) still fails
	// a run that selected nothing, after the fact (exit 1).
	out, code := run(t, "-mode=none", "-ginkgo.focus-file=nosuch.go", "-results="+t.TempDir())
	if code != 1 || !strings.Contains(out, "no spec of the 18 planned for -mode=none was selected, so nothing was measured") {
		t.Errorf("-ginkgo.focus-file=nosuch.go: exit %d\n%s", code, out)
	}
	out, code = run(t, "-mode=none", "-ginkgo.label-filter=claim:latency.percentiles", "-ginkgo.dry-run", "-ginkgo.v", "-results="+t.TempDir())
	if code != 0 || !strings.Contains(out, "Ran 1 of 18 Specs") {
		t.Errorf("control: a matching selection: exit %d\n%s", code, out)
	}
}

// A -run-id whose directory holds a run is refused (exit 2, the earlier run
// untouched) unless -overwrite.
func TestRunIDThatHoldsARunIsRefused(t *testing.T) {
	results := t.TempDir()
	earlier := filepath.Join(results, "r1", "environment.json")
	if err := os.MkdirAll(filepath.Dir(earlier), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(earlier, []byte(`{"run_id":"r1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, "-mode=none", "-results="+results, "-run-id=r1")
	if code != 2 || !strings.Contains(out, `-run-id="r1"`) || !strings.Contains(out, "already holds a run") || !strings.Contains(out, "-overwrite") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if b, err := os.ReadFile(earlier); err != nil || string(b) != `{"run_id":"r1"}` {
		t.Fatalf("the earlier run was touched: %q %v", b, err)
	}
}

// The command line is the suite's: -h exits 0 listing the suite's flags and
// none of fortio's; fortio's flags are refused by name; -timeout is the
// run's time limit (go test's), not fortio's HTTP timeout; an argument that
// is not a flag is refused rather than silently ending flag parsing.
func TestCommandLineIsTheSuites(t *testing.T) {
	out, code := run(t, "-h")
	if code != 0 || !strings.Contains(out, "The suite's flags:") || !strings.Contains(out, "-mode string") {
		t.Errorf("-h: exit %d\n%s", code, out)
	}
	for _, fortio := range []string{"for HTTP", "Do not verify certs", "-payload-size"} {
		if strings.Contains(out, fortio) {
			t.Errorf("-h lists fortio's %q", fortio)
		}
	}
	out, code = run(t, "-mode=none", "-k", "-results="+t.TempDir())
	if code != 2 || !strings.Contains(out, "flag provided but not defined: -k (a flag a linked library, fortio, registers") {
		t.Errorf("-k: exit %d\n%s", code, out)
	}
	// -timeout reaches the run: the run's limit is stated, and a 1 ns limit
	// ends it (go test's timeout panics with "test timed out").
	out, _ = run(t, "-timeout", "7h13m", "-mode=none", "-ginkgo.label-filter=claim:nosuch", "-results="+t.TempDir())
	if strings.Contains(out, "time limit") {
		t.Errorf("a refused run stated a time limit:\n%s", out)
	}
	out, code = run(t, "-timeout", "1ns", "-mode=none", "-provider=existing", "-kubeconfig=/nonexistent", "-results="+t.TempDir(), "-run-id=t")
	if code == 0 || !strings.Contains(out, "the run's time limit is 1ns (-timeout)") || !strings.Contains(out, "test timed out after 1ns") {
		t.Errorf("-timeout 1ns did not limit the run: exit %d\n%s", code, out)
	}
	results := t.TempDir()
	out, code = run(t, "-mode=none", "sidecar", "-provider=local", "-results="+results)
	if code != 2 || !strings.Contains(out, `unexpected argument "sidecar"`) || !strings.Contains(out, "-provider=local") {
		t.Errorf("positional argument: exit %d\n%s", code, out)
	}
}

// The compiled suite runs from any directory: its shipped files (the kind
// config, Istio's values) are found in the repository it was built from, so
// a run from elsewhere gets as far as the container engine's absence.
func TestSuiteRunsFromAnyDirectory(t *testing.T) {
	cmd := exec.Command(e2eBinary(t), "-mode=none", "-provider=kind", "-results="+t.TempDir(), "-run-id=elsewhere")
	cmd.Dir = t.TempDir()
	cmd.Env = onlyOnPath(t.TempDir())
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "no container engine") || strings.Contains(string(out), "not found in the working directory") {
		t.Errorf("run from %s:\n%s", cmd.Dir, out)
	}
}
