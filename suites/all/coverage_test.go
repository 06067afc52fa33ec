package all

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
	reg := registry(t)
	bin := e2eBinary(t)
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
			// The It's location is its claim's spec.Declare (a
			// CodeLocation decorator), so failures and reports point
			// at the suite file, not spec.Build's loop.
			LeafNodeLocation struct{ FileName string }
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
			if rel, err := filepath.Rel(repoRoot(), s.LeafNodeLocation.FileName); err != nil || !strings.HasPrefix(rel, "suites"+string(filepath.Separator)) {
				t.Errorf("%s: located at %q, not in suites/", s.LeafNodeText, s.LeafNodeLocation.FileName)
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

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// e2eBinary builds the e2e test binary once per test process.
func e2eBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the e2e binary")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "meshclaims-e2e-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "e2e.test")
		cmd := exec.Command("go", "test", "-c", "-o", built.path, "./e2e")
		cmd.Dir = repoRoot()
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("building the e2e binary: %v\n%s", built.err, built.out)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// Bad flag values fail before anything touches a cluster, naming the value
// and what is accepted, with exit code 2.
func TestBadFlagsFailFast(t *testing.T) {
	bin := e2eBinary(t)
	cases := map[string][]string{
		`unknown mode "bogus"`:                                                 {"-mode=bogus"},
		`accepted: none, sidecar, ambient-l4, ambient-l7`:                      {"-mode=bogus"},
		`-provider="minikube" is not known`:                                    {"-provider=minikube"},
		`-duration-scale=-1 must be in (0, 10]`:                                {"-duration-scale=-1"},
		`-kind-node-image="kindest/node@sha256:bad" is not an image reference`: {"-kind-node-image=kindest/node@sha256:bad"},
		`-istio-values="/nonexistent/values.yaml"`:                             {"-istio-values=/nonexistent/values.yaml"},
		`-kind-kube-proxy-mode="ipvss"; accepted: iptables, ipvs, nftables`:    {"-kind-kube-proxy-mode=ipvss"},
		`is not a command line sh can parse`:                                   {"-provider=existing", `-netpol-enable-command=aws eks update-addon --configuration-values '{"enableNetworkPolicy":"true"}`},
	}
	for want, args := range cases {
		results := t.TempDir()
		start := time.Now()
		out, err := exec.Command(bin, append(args, "-results="+results)...).CombinedOutput()
		took := time.Since(start)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), want) {
			t.Errorf("%v: exit %v, output:\n%s\nwant %q", args, err, out, want)
		}
		if entries, _ := os.ReadDir(results); len(entries) != 0 {
			t.Errorf("%v: a rejected run wrote results: %v", args, entries)
		}
		t.Logf("%v rejected in %s", args, took)
	}
}

// Without a container engine the kind provider fails at once, names the
// alternatives, and the run still leaves a report saying nothing was measured.
// The absence is made, not found: the run's PATH holds only what each case
// puts there, so the test means the same with Docker running, with Podman
// installed, with a docker CLI whose daemon is down, or with none, and never
// starts kind or pulls an image.
func TestKindWithoutEngineFailsFastWithReport(t *testing.T) {
	bin := e2eBinary(t)
	cases := map[string]func(t *testing.T, dir string) []string{
		"no engine": func(t *testing.T, dir string) []string { return nil },
		"docker CLI without daemon": func(t *testing.T, dir string) []string {
			// The CLI answers `docker -v` (all kind's own detection
			// checks); everything needing the daemon fails as the real
			// CLI does.
			script := "#!/bin/sh\n[ \"$1\" = -v ] && { echo 'Docker version 99.0.0, build fake'; exit 0; }\n" +
				"echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n"
			if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			return []string{"Cannot connect to the Docker daemon"}
		},
	}
	for name, prepare := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			wantWhy := prepare(t, dir)
			results := t.TempDir()
			cmd := exec.Command(bin, "-mode=none", "-provider=kind", "-results="+results, "-run-id=nokind")
			cmd.Env = onlyOnPath(dir)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("run without a container engine passed:\n%s", out)
			}
			for _, want := range append(wantWhy, "no container engine", "-provider=existing", "A BeforeSuite node failed") {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(string(out), "Ensuring node image") || strings.Contains(string(out), "Creating cluster") {
				t.Errorf("kind started creating a cluster:\n%s", out)
			}
			md, err := os.ReadFile(filepath.Join(results, "nokind", "report.md"))
			if err != nil {
				t.Fatalf("no report after a failed set-up: %v", err)
			}
			if !strings.Contains(string(md), "## Not measured in this run") || !strings.Contains(string(md), "`latency.percentiles` (none)") {
				t.Fatalf("report.md:\n%s", md)
			}
			// The set-up failure is in both reports, not only in JUnit,
			// and the console says it once (no Gomega type dump).
			html, err := os.ReadFile(filepath.Join(results, "nokind", "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			for f, b := range map[string][]byte{"report.md": md, "report.html": html} {
				if !strings.Contains(string(b), "Set-up failed: no claim was measured.") || !strings.Contains(string(b), "no container engine") {
					t.Errorf("%s does not state the set-up failure:\n%s", f, b)
				}
			}
			if n := strings.Count(string(out), "no container engine"); n != 1 {
				t.Errorf("the set-up error is printed %d times:\n%s", n, out)
			}
			for _, dump := range []string{"<*", "errors.joinError", "{errs:", "0x"} {
				if strings.Contains(string(out), dump) {
					t.Errorf("output holds a Go type dump %q:\n%s", dump, out)
				}
			}
			if _, err := os.Stat(filepath.Join(results, "nokind", "junit.xml")); err != nil {
				t.Fatalf("no junit.xml: %v", err)
			}
		})
	}
}

// ambient-l7 on the local provider without a ztunnel image fails in the
// set-up before the provider starts, as ambient-l4 does: the waypoint alone
// (which make e2e-local runs, framework/istiod's TestWaypointOnLocalCluster)
// is not ambient-l7, and the suite's ambient-l7 needs ztunnel in front of
// it. The run's PATH is empty, so even a regression of the check could not
// start a cluster here (the local provider's host check finds no programs).
func TestAmbientL7OnLocalWithoutZtunnelFailsBeforeTheCluster(t *testing.T) {
	bin := e2eBinary(t)
	for _, m := range []string{"ambient-l7", "ambient-l4"} {
		t.Run(m, func(t *testing.T) {
			results := t.TempDir()
			cmd := exec.Command(bin, "-mode="+m, "-provider=local", "-results="+results, "-run-id=noztunnel")
			cmd.Env = onlyOnPath(t.TempDir())
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("-mode=%s -provider=local without a ztunnel image passed:\n%s", m, out)
			}
			for _, want := range []string{"-mode=" + m + " on -provider=local needs a ztunnel image", "/ztunnel:", "-image-archives", "A BeforeSuite node failed"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(string(out), "cluster: starting provider") {
				t.Errorf("the provider started:\n%s", out)
			}
			md, err := os.ReadFile(filepath.Join(results, "noztunnel", "report.md"))
			if err != nil || !strings.Contains(string(md), "needs a ztunnel image") {
				t.Errorf("report.md does not state why (%v):\n%s", err, md)
			}
		})
	}
}

// onlyOnPath is this process's environment with PATH set to dir alone and
// the variables that choose or redirect a container engine removed.
func onlyOnPath(dir string) []string {
	env := []string{"PATH=" + dir}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "KIND_EXPERIMENTAL_PROVIDER", "DOCKER_HOST", "DOCKER_CONTEXT", "CONTAINER_HOST", "CONTAINER_CONNECTION":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Every declaration knows where it is: spec.Declare records its caller's
// file:line, relative to the repository, and that line is the call.
func TestDeclarationsKnowTheirSource(t *testing.T) {
	for _, d := range spec.Defs() {
		file, line, ok := strings.Cut(d.Declared, ".go:")
		if !ok || !strings.HasPrefix(file, "suites/") {
			t.Errorf("%s: declared at %q, want suites/<area>/<file>.go:<line>", d.Claim, d.Declared)
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot(), file+".go"))
		if err != nil {
			t.Error(err)
			continue
		}
		lines := strings.Split(string(b), "\n")
		n := 0
		for _, c := range line {
			n = n*10 + int(c-'0')
		}
		if n < 1 || n > len(lines) || !strings.Contains(lines[n-1], "spec.Declare(") {
			t.Errorf("%s: %s is not a spec.Declare call", d.Claim, d.Declared)
		}
	}
}
