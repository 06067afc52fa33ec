package all

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quickStart returns the shell commands of README.md's "Quick start".
func quickStart(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := quickStartOf(string(b))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	return cmds
}

// benchmarkCommands returns the shell commands of docs/benchmarks.md: the
// plans made from the shipped bench records, which the quick start's test
// follows too.
func benchmarkCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := shCommandsOf(string(b))
	if len(cmds) == 0 {
		t.Fatal("docs/benchmarks.md has no sh commands")
	}
	return cmds
}

// quickStartOf returns every line of the sh blocks of a README's "## Quick
// start" section (up to the next "## " heading), comments dropped and
// continuation lines joined.
func quickStartOf(text string) ([]string, error) {
	start := strings.Index(text, "\n## Quick start\n")
	if start < 0 {
		return nil, errors.New(`no "## Quick start" section`)
	}
	text = text[start+1:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	cmds := shCommandsOf(text)
	if len(cmds) == 0 {
		return nil, errors.New("the quick start has no commands")
	}
	return cmds, nil
}

// shCommandsOf returns every line of text's sh blocks, comments dropped and
// continuation lines joined.
func shCommandsOf(text string) []string {
	var cmds []string
	in := false
	cont := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		}
		if !in {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if c, ok := strings.CutSuffix(line, `\`); ok {
			cont += c + " "
			continue
		}
		if line = strings.TrimSpace(cont + line); line != "" {
			cmds = append(cmds, line)
		}
		cont = ""
	}
	return cmds
}

func TestQuickStartOf(t *testing.T) {
	readme := "# x\n\n## Quick start\n\n```sh\ngo run ./cmd/meshclaims claims   # list\ngo test ./e2e \\\n  -mode=none\n```\n\n```go\nnot a command\n```\n\n## Next\n\n```sh\ngo test ./e2e -mode=all\n```\n"
	got, err := quickStartOf(readme)
	if err != nil || strings.Join(got, "|") != "go run ./cmd/meshclaims claims|go test ./e2e  -mode=none" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := quickStartOf("# x\n\n## Usage\n"); err == nil {
		t.Error("a README without a quick start was accepted")
	}
	if _, err := quickStartOf("# x\n\n## Quick start\n\nprose only\n\n## Next\n"); err == nil || !strings.Contains(err.Error(), "no commands") {
		t.Error("a quick start without commands was accepted")
	}
}

// The quick start, followed as written by a user without a container engine:
// the claims list, then every suite command up to its clear failure (exit
// non-zero at once, "no container engine" said once, a report saying
// nothing was measured), or for a dry run the list of specs, or for a plan
// the plan; then report and diff on the sample runs the README links; then
// docs/benchmarks.md's plans from the bench records, which must use the
// records' measured costs. A command of a form this test does not know
// fails it, so the documents cannot drift from the tool.
func TestQuickStartAsWritten(t *testing.T) {
	cmds := append(quickStart(t), benchmarkCommands(t)...)
	cli := filepath.Join(t.TempDir(), "meshclaims")
	build := exec.Command("go", "build", "-o", cli, "./cmd/meshclaims")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/meshclaims: %v\n%s", err, out)
	}
	// The sample runs are copied: report rewrites the directory it is given.
	examples := filepath.Join(t.TempDir(), "examples")
	if out, err := exec.Command("cp", "-r", filepath.Join(repoRoot(), "testdata", "examples"), examples).CombinedOutput(); err != nil {
		t.Fatalf("copying the samples: %v\n%s", err, out)
	}
	noEngine := onlyOnPath(t.TempDir())
	for _, line := range cmds {
		// The commands run from the repository's root, where a shell
		// expands $PWD to it; no other variable is known.
		expanded := strings.ReplaceAll(line, "$PWD", repoRoot())
		if strings.Contains(expanded, "$") {
			t.Errorf("the documents' commands include %q, whose variables this test does not know how to expand (only $PWD, the repository's root); teach it", line)
			continue
		}
		args := strings.Fields(expanded)
		switch {
		case len(args) > 2 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/meshclaims":
			a := args[3:]
			for i, x := range a {
				if rest, ok := strings.CutPrefix(x, "testdata/examples/"); ok {
					a[i] = filepath.Join(examples, rest)
				}
			}
			cmd := exec.Command(cli, a...)
			cmd.Dir = t.TempDir() // the registry is built in: any directory works
			out, err := cmd.CombinedOutput()
			if err != nil || len(out) == 0 {
				t.Errorf("%s: %v\n%s", line, err, out)
				continue
			}
			// What each command is for, in its output: the registry's
			// ids, the rebuilt report, the comparison.
			for sub, want := range map[string]string{"claims": "latency.percentiles", "report": "report.html", "diff": "meshclaims diff: "} {
				if len(a) > 0 && a[0] == sub && !strings.Contains(string(out), want) {
					t.Errorf("%s: output lacks %q:\n%s", line, want, out)
				}
			}
			t.Logf("%s: ok (%d bytes of output)", line, len(out))
		case len(args) > 2 && args[0] == "go" && args[1] == "test" && args[2] == "./e2e":
			a := goTestArgs(t, args[3:])
			results := t.TempDir()
			cmd := exec.Command(e2eBinary(t), append(a, "-results="+results, "-run-id=quickstart")...)
			cmd.Dir = repoRoot()
			cmd.Env = noEngine
			out, err := cmd.CombinedOutput()
			if strings.Contains(line, " -plan") {
				// The plan needs no cluster: it prints and exits 0.
				if err != nil || !strings.Contains(string(out), "plan: -mode=") || !strings.Contains(string(out), "estimated total") {
					t.Errorf("%s: %v\n%s", line, err, out)
					continue
				}
				// With an earlier run's costs, the plan uses them.
				if strings.Contains(line, "-plan-costs=") && !strings.Contains(string(out), "(measured)") {
					t.Errorf("%s: the plan uses none of the record's measured costs:\n%s", line, out)
					continue
				}
				t.Logf("%s: prints the plan", line)
				continue
			}
			if strings.Contains(line, "-ginkgo.dry-run") {
				if err != nil || !regexp.MustCompile(`Ran \d+ of \d+ Specs`).Match(out) {
					t.Errorf("%s: %v\n%s", line, err, out)
				}
				if err := checkConsole(string(out), consoleDryRun); err != nil {
					t.Errorf("%s: the console: %v\n%s", line, err, out)
				}
				t.Logf("%s: lists the specs", line)
				continue
			}
			if err == nil || strings.Count(string(out), "no container engine") != 1 {
				t.Errorf("%s without a container engine: %v, want one clear failure:\n%s", line, err, out)
				continue
			}
			if err := checkConsole(string(out), consoleSetUpFailed); err != nil {
				t.Errorf("%s: the console: %v\n%s", line, err, out)
			}
			md, rerr := os.ReadFile(filepath.Join(results, "quickstart", "report.md"))
			if rerr != nil || !strings.Contains(string(md), "Set-up failed: no claim was measured.") {
				t.Errorf("%s: the report does not say the set-up failed: %v\n%s", line, rerr, md)
			}
			t.Logf("%s: fails at once without a container engine, report written", line)
		default:
			t.Errorf("the documents' commands include %q, which this test does not know how to follow; teach it", line)
		}
	}
}

// goTestArgs turns `go test ./e2e` arguments into the test binary's: go
// test's -count is dropped (the binary runs once), -v is -test.v, -timeout
// is passed on (the binary takes it as -test.timeout), -args is dropped.
func goTestArgs(t *testing.T, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "-count="):
		case a == "-v":
			out = append(out, "-test.v")
		case a == "-args":
		case a == "-timeout" && i+1 < len(args):
			out = append(out, a, args[i+1])
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

// Every relative link in README.md and docs/ names a file that exists.
func TestDocumentLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, doc := range []string{"README.md", "docs/DEVELOPMENT.md", "docs/GLOSSARY.md", "docs/benchmarks.md", "docs/run-times.md", "docs/kind-on-podman.md", "docs/existing-provider.md", "testdata/examples/README.md"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(), doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(repoRoot(), filepath.Dir(doc), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %s, which does not exist", doc, m[1])
			}
		}
	}
}
