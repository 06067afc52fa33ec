package all

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// machinePath matches an absolute path that names the machine a file was
// made on rather than anything the product does: a checkout, a home
// directory, a scratch or results directory, a Go installation. Paths
// that are the product's function (/var/run/ztunnel, /etc/cni/net.d,
// /proc, /sys, /opt/cni/bin, /usr/bin, /usr/local/bin inside an image) do
// not match. A committed record (a sample run, a bench record) names such
// paths with a placeholder instead: $CHECKOUT for the checkout the run was
// made from, $RESULTS for a results directory outside it.
var machinePath = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.~$-])(/(?:work|root|home|Users|tmp|var/tmp|var/folders|mnt|media|srv|scratch)/[A-Za-z0-9._+-]+|/usr/local/g[o](?:/[A-Za-z0-9._+-]+)*)`)

// buildHistory matches words that tell how the project was built instead
// of what it does: a numbered CI attempt ("stop" and its number), other
// builds "beside it" by name, and the word for a working period in any form. A technical
// use (a TLS, HTTP, SSH or login one) is told apart by its qualifier, and
// a dotted identifier (one of Envoy's UDP filter names, envoy.filters.udp.<name>) by its dots.
var buildHistory = regexp.MustCompile(`(?i)\b[s]essions?\b|\bstop \d+\b|\bhelpers?'? builds\b|\bother helpers\b`)

var qualifiedTechnicalUse = regexp.MustCompile(`(?i)\b(?:tls|ssl|http|https|ssh|login|logind|d-bus|dbus|cookie|user) [s]essions?\b|[A-Za-z0-9_]\.[s]essions?\b|\b[s]essions?\.[A-Za-z0-9_]`)

// officialGoRoot is where the official Go archive installs; spelt so that
// this file does not name it.
const officialGoRoot = "/usr/local/g" + "o"

// allowedMachinePaths are the matches that are not a machine's, by file
// and path, each with why.
var allowedMachinePaths = map[string]string{
	".ci/run " + officialGoRoot + "/bin":                                 "where the official Go archive installs, on PATH for a CI runner whose Go is there",
	"framework/images/layer.go /home/nonroot":                            "the home directory of the workload image's non-root user, inside the image",
	"framework/cluster/example_test.go /home/me":                         "an example's kubeconfig path, as a user names theirs",
	"docs/kind-on-podman.md /tmp/meshclaims-cluster.lock":                "the lock every cluster-creating target takes",
	"suites/all/bench_test.go /tmp/meshclaims-cluster.lock":              "the lock every cluster-creating target takes",
	"suites/all/kind_interrupt_test.go /tmp/meshclaims-cluster.lock":     "the lock every cluster-creating target takes",
	"framework/cluster/kind_podman_test.go /tmp/meshclaims-cluster.lock": "the lock every cluster-creating target takes",
}

// thisFile is this test's own path in the repository.
const thisFile = "suites/all/committed_files_test.go"

// allowedAnywhere says whether path is allowed in some file.
func allowedAnywhere(path string) bool {
	for key := range allowedMachinePaths {
		if _, p, _ := strings.Cut(key, " "); p == path {
			return true
		}
	}
	return false
}

// committedFileProblems returns, one per line, each machine path and each
// build-history word in text, as "file:line: what".
func committedFileProblems(file string, text []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, m := range machinePath.FindAllStringSubmatch(line, -1) {
			if _, ok := allowedMachinePaths[file+" "+m[1]]; ok {
				continue
			}
			if file == thisFile && allowedAnywhere(m[1]) {
				continue // the allow list names what it allows
			}
			out = append(out, fmt.Sprintf("%s:%d: machine path %s", file, n, m[1]))
		}
		rest := qualifiedTechnicalUse.ReplaceAllString(line, "")
		for _, m := range buildHistory.FindAllString(rest, -1) {
			out = append(out, fmt.Sprintf("%s:%d: build history %q", file, n, m))
		}
	}
	return out
}

// The matchers fire on what they are for and not on the product's own
// paths and words: the negative controls of TestNoMachinePathInCommittedFiles.
func TestCommittedFileProblemsMatcher(t *testing.T) {
	fire := map[string]string{
		"a sample's JUnit":       `<testsuite package="/wo` + `rk/wt-newcomer/e2e">`,
		"a bench plan":           `costs beyond loads from run x (/wo` + `rk/bench-results/fill-noconn2)`,
		"the VM binary":          `under bin/uml/root (...), /wo` + `rk/main/bin/uml/root/usr/bin/linux.uml)`,
		"a home directory":       `go test -kubeconfig=/ho` + `me/alice/.kube/config`,
		"root's home":            `cp /ro` + `ot/go/bin/x .`,
		"a scratch directory":    `wrote /t` + `mp/TestPlan123/001/results`,
		"a Go installation":      `panic at /usr/local/g` + `o/src/runtime/proc.go:250`,
		"a macOS home":           `/Us` + `ers/bob/src/meshclaims`,
		"a numbered period":      `measured in s` + `ession 14`,
		"the plural":             `two S` + `essions here`,
		"a numbered CI attempt":  `CI's record was 2439 s (st` + `op 28)`,
		"other builds beside it": `with two other help` + `ers' builds beside it`,
		"an allowed path, moved": `/ho` + `me/nonroot in another file`,
	}
	for what, line := range fire {
		if got := committedFileProblems("x.md", []byte("first line\n"+line+"\n")); len(got) != 1 || !strings.HasPrefix(got[0], "x.md:2: ") {
			t.Errorf("%s: %q gives %q, want one problem on line 2", what, line, got)
		}
	}
	quiet := []string{
		"/var/run/ztunnel/ztunnel.sock", "/etc/cni/net.d/10-kube-router.conflist", "/proc/1/ns/net",
		"/sys/fs/cgroup", "/opt/cni/bin", "/usr/bin/linux.uml", "/usr/local/bin/pilot-agent",
		"/usr/lib/cni", "bin/uml/root/usr/bin/linux.uml", "$CHECKOUT/bin/uml/root/usr/bin/linux.uml",
		"($RESULTS/fill-noconn2)", "~/.kube/config", "--tmpfs /tmp --tmpfs /run", "~/work/x",
		"a TLS s" + "ession ticket", "the rollout stops after 20 cycles", "sequential stopping",
		"credential helpers", "pilot-agent", `"category": "envoy.filters.udp.s` + `ession",`, "udp_proxy.s" + "ession.http_capsule.v3", "t.Helper()", "https://example.com/home/x",
	}
	for _, line := range quiet {
		if got := committedFileProblems("x.md", []byte(line)); len(got) != 0 {
			t.Errorf("%q gives %q, want nothing", line, got)
		}
	}
	// An allowed path is allowed only in the file it is allowed in, and in
	// the allow list here.
	for _, file := range []string{"framework/images/layer.go", thisFile} {
		if got := committedFileProblems(file, []byte(`"/ho`+`me/nonroot"`)); len(got) != 0 {
			t.Errorf("%s: the allowed path gives %q", file, got)
		}
	}
	if got := committedFileProblems(thisFile, []byte(`"/ho`+`me/alice"`)); len(got) != 1 {
		t.Errorf("a path allowed nowhere, in this file: %q, want one problem", got)
	}
}

// No committed file names the machine it was made on, or tells how the
// project was built instead of what it does.
func TestNoMachinePathInCommittedFiles(t *testing.T) {
	root := repoRoot()
	// safe.directory: CI runs as root on a clone another user owns.
	cmd := exec.Command("git", "-c", "safe.directory=*", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v (the committed files are what this test reads)", root, err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 100 {
		t.Fatalf("git ls-files lists %d files", len(files))
	}
	var problems []string
	read := 0
	for _, f := range files {
		if filepath.Base(f) == "go.sum" {
			continue // module checksums only
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			continue // binary
		}
		read++
		problems = append(problems, committedFileProblems(f, b)...)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Logf("%d problems in %d committed text files. A record's machine path becomes $CHECKOUT/... (the checkout) or $RESULTS/... (a results directory), in every file of the record alike so it re-judges the same; a path that is the product's function belongs in machinePath's exclusions, or, for one file, in allowedMachinePaths with why; a date or what was measured replaces a build-history word", len(problems), read)
	}
	// Every allowed path is still where it is allowed: a stale entry would
	// let the path in silently once moved back.
	for key, why := range allowedMachinePaths {
		f, path, _ := strings.Cut(key, " ")
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil || !bytes.Contains(b, []byte(path)) {
			t.Errorf("allowedMachinePaths has %q (%s), which %s no longer holds: remove the entry", path, why, f)
		}
	}
}
