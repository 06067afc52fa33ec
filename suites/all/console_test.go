package all

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/junit"
	"github.com/meshclaims/meshclaims/framework/progress"
)

// consoleOf says what kind of run a console output is of, and so what it
// must show.
type consoleOf int

const (
	// A dry run: "spec N of M" for every spec, nothing judged.
	consoleDryRun consoleOf = iota
	// A run whose set-up failed: its phases, the failure, the end and
	// the report's path.
	consoleSetUpFailed
	// A run that ran its specs: set-up phases with their durations,
	// "spec N of M" for every spec, a verdict line for each, the time
	// left by the plan, and at the end the verdict counts and the
	// report's path.
	consoleRun
)

var (
	// Ginkgo indents GinkgoWriter's lines under -ginkgo.v.
	phaseLine   = regexp.MustCompile(`(?m)^\s*\d\d:\d\d:\d\d set-up: .+ took \S+$`)
	specLine    = regexp.MustCompile(`(?m)^\s*\d\d:\d\d:\d\d spec (\d+) of (\d+): (\S+ \[[a-z0-9-]+\])`)
	verdictLine = regexp.MustCompile(`(?m)^\s*\d\d:\d\d:\d\d spec (\d+) of (\d+) done in \S+: (\S+ \[[a-z0-9-]+\]) ` +
		`(?:(reproduced|not reproduced|inconclusive|recorded): measured .+; documented .+|failed without a verdict: .+)$`)
	finishedLine = regexp.MustCompile(`(?m)^\s*\d\d:\d\d:\d\d finished(?: after \S+)?: (\d+) of (\d+) specs ran; verdicts: (.+)$`)
	reportLine   = regexp.MustCompile(`(?m)^\s*\d\d:\d\d:\d\d report: (\S+/report\.md)`)
	countPart    = regexp.MustCompile(`^(\d+) (reproduced|not reproduced|inconclusive|recorded|without a verdict)$`)
	// Raw JSON as Ginkgo printed report entries: an object with a quoted
	// key, or its "Report Entries" block.
	rawJSON = regexp.MustCompile(`\{\s*"[A-Za-z_]+"\s*:|Report Entries`)
	// Ginkgo's mark of a spec the selection left out, a line each.
	skipLine = regexp.MustCompile(`(?m)^S$`)
)

// checkConsole returns what keeps out, a run's console output read from a
// pipe (as in a CI log), from showing what the README promises for a run
// of kind of: no colour codes, no raw JSON, and the progress lines.
func checkConsole(out string, kind consoleOf) error {
	var errs []error
	if i := strings.Index(out, "\x1b["); i >= 0 {
		errs = append(errs, fmt.Errorf("colour codes in output that is not a terminal, first at %q", excerpt(out, i)))
	}
	if loc := rawJSON.FindStringIndex(out); loc != nil {
		errs = append(errs, fmt.Errorf("raw JSON on the console: %q", excerpt(out, loc[0])))
	}
	if n := len(skipLine.FindAllString(out, -1)); n > 0 {
		errs = append(errs, fmt.Errorf("%d lines of \"S\", one per spec the selection left out", n))
	}
	if kind != consoleDryRun {
		if !phaseLine.MatchString(out) {
			errs = append(errs, errors.New(`no set-up phase with its duration ("HH:MM:SS set-up: <phase> took <d>")`))
		}
		done := "set-up done after "
		if kind == consoleSetUpFailed {
			done = "set-up failed after "
		}
		if !strings.Contains(out, done) {
			errs = append(errs, fmt.Errorf("no %q line", strings.TrimSpace(done)))
		}
		f := finishedLine.FindStringSubmatch(out)
		if kind == consoleSetUpFailed {
			if !regexp.MustCompile(`finished(?: after \S+)?: the set-up failed, so none of the `).MatchString(out) {
				errs = append(errs, errors.New("no line saying the set-up failed and no spec ran"))
			}
		} else if f == nil {
			errs = append(errs, errors.New(`no final "finished: N of M specs ran; verdicts: ..." line`))
		}
		if m := reportLine.FindStringSubmatch(out); m == nil {
			errs = append(errs, errors.New(`no final "report: <dir>/report.md" line`))
		} else if _, err := os.Stat(m[1]); err != nil {
			errs = append(errs, fmt.Errorf("the report the console names: %v", err))
		}
		if kind == consoleRun && f != nil {
			errs = append(errs, checkCounts(out, f)...)
		}
	}
	if kind == consoleSetUpFailed {
		return errors.Join(errs...)
	}
	started := specLine.FindAllStringSubmatch(out, -1)
	if len(started) == 0 {
		errs = append(errs, errors.New(`no "spec N of M: <claim> [<mode>]" line`))
		return errors.Join(errs...)
	}
	total := started[0][2]
	for i, m := range started {
		if m[1] != strconv.Itoa(i+1) || m[2] != total {
			errs = append(errs, fmt.Errorf("spec line %d reads %q, want spec %d of %s", i+1, m[0], i+1, total))
			break
		}
	}
	if strconv.Itoa(len(started)) != total {
		errs = append(errs, fmt.Errorf("%d spec lines for %s specs", len(started), total))
	}
	if kind == consoleRun {
		ended := verdictLine.FindAllStringSubmatch(out, -1)
		if len(ended) != len(started) {
			errs = append(errs, fmt.Errorf("%d verdict lines for %d specs started", len(ended), len(started)))
		}
		for i := 0; i < min(len(ended), len(started)); i++ {
			if ended[i][1] != started[i][1] || ended[i][3] != started[i][3] {
				errs = append(errs, fmt.Errorf("verdict line %d is of %s (spec %s), not of %s (spec %s)", i+1, ended[i][3], ended[i][1], started[i][3], started[i][1]))
				break
			}
		}
		if !strings.Contains(out, "time left by the plan: ") {
			errs = append(errs, errors.New(`no "time left by the plan" line`))
		}
	}
	return errors.Join(errs...)
}

// checkCounts compares the final line's counts with the verdict lines.
func checkCounts(out string, finished []string) []error {
	var errs []error
	n := 0
	for _, part := range strings.Split(finished[3], ", ") {
		m := countPart.FindStringSubmatch(part)
		if m == nil {
			errs = append(errs, fmt.Errorf("final counts %q: %q is not \"<n> <verdict>\"", finished[3], part))
			continue
		}
		c, _ := strconv.Atoi(m[1])
		n += c
	}
	if lines := len(verdictLine.FindAllString(out, -1)); n != lines || finished[1] != strconv.Itoa(lines) {
		errs = append(errs, fmt.Errorf("final line %q counts %d verdicts of %s specs; the console shows %d verdict lines", strings.TrimSpace(finished[0]), n, finished[1], lines))
	}
	return errs
}

func excerpt(s string, i int) string {
	return s[max(0, i-40):min(len(s), i+60)]
}

// The README's dry run, as a user's CI runs it (stdout a pipe): a "spec N
// of M" line per spec, no colour codes, no JSON. Its negative control:
// the same run with colour asked for by flag fails the check.
func TestConsoleOfADryRun(t *testing.T) {
	bin := e2eBinary(t)
	run := func(extra ...string) string {
		args := append([]string{"-test.v", "-mode=none,sidecar", "-duration-scale=0.05", "-ginkgo.dry-run"}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run()
	if err := checkConsole(out, consoleDryRun); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	// Each planned spec once, by its claim and mode.
	if !regexp.MustCompile(`(?m)spec \d+ of \d+: latency\.percentiles \[sidecar\] `).MatchString(out) {
		t.Errorf("no spec line for latency.percentiles [sidecar]:\n%s", out)
	}
	// -ginkgo.v indents the lines; they still read the same.
	if err := checkConsole(run("-ginkgo.v"), consoleDryRun); err != nil {
		t.Errorf("-ginkgo.v: %v", err)
	}
	colour := run("-ginkgo.no-color=false")
	if err := checkConsole(colour, consoleDryRun); err == nil || !strings.Contains(err.Error(), "colour codes") {
		t.Errorf("colour asked for by flag: check = %v; want it to find colour codes", err)
	}
	// One claim of the README's examples: the specs left out print
	// nothing, unless asked to by flag.
	one := []string{"-ginkgo.label-filter=claim:latency.percentiles"}
	if out := run(one...); checkConsole(out, consoleDryRun) != nil || !strings.Contains(out, "spec 1 of 2: latency.percentiles [none]") {
		t.Errorf("one claim's dry run: %v\n%s", checkConsole(out, consoleDryRun), out)
	}
	if err := checkConsole(run(append(one, "-ginkgo.silence-skips=false")...), consoleDryRun); err == nil || !strings.Contains(err.Error(), `lines of "S"`) {
		t.Errorf("skips asked for by flag: check = %v; want it to find the S lines", err)
	}
}

// A run whose set-up fails at once (kind without a container engine)
// says which phases ran, that it failed, and where the report is.
func TestConsoleOfAFailedSetUp(t *testing.T) {
	bin := e2eBinary(t)
	results := t.TempDir()
	cmd := exec.Command(bin, "-test.v", "-mode=none", "-provider=kind", "-results="+results, "-run-id=nokind")
	cmd.Env = onlyOnPath(t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("passed without a container engine:\n%s", out)
	}
	if err := checkConsole(string(out), consoleSetUpFailed); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "report: "+filepath.Join(results, "nokind", "report.md")) {
		t.Errorf("the console does not name this run's report:\n%s", out)
	}
	// The JUnit report the run wrote (framework/junit): it reads, judges
	// nothing, and keeps Ginkgo's record of the failed set-up.
	path := filepath.Join(results, "nokind", "junit.xml")
	if judged, err := junit.Check(path); err != nil || judged != 0 {
		t.Errorf("junit.xml: %d judged, %v", judged, err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), `<failure message="set-up failed`) || !strings.Contains(string(b), `name="verdicts" value=""`) {
		t.Errorf("junit.xml lacks the set-up failure or the verdict count (%v):\n%s", err, b)
	}
}

// consoleOfARun is what the suite's printer (framework/progress) prints
// for a run of two specs, one reproduced and one not reproduced under
// -fail-on=error, with a spec's own log line and Ginkgo's dots between:
// the checker is held to the printer's real output.
func consoleOfARun(t *testing.T, report string) string {
	t.Helper()
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var b strings.Builder
	p := progress.New(&b, clock, budget{"latency.percentiles [none]": time.Minute, "rollout.baseline [none]": 2 * time.Minute})
	p.Phase("cluster")
	now = now.Add(time.Minute)
	p.SetUpDone(nil)
	p.Total(2)
	p.SpecStarted("latency.percentiles [none]", "steady-state latency")
	b.WriteString("[latency.percentiles none +3s] load steady-none: 15s of 1m0s\n")
	now = now.Add(time.Minute)
	p.SpecEnded(progress.Ended{Key: "latency.percentiles [none]", Verdict: "reproduced", Measured: "p50 1 ms", Documented: "p50 1 ms"})
	b.WriteString("•\n")
	p.SpecStarted("rollout.baseline [none]", "no 503")
	now = now.Add(time.Minute)
	p.SpecEnded(progress.Ended{Key: "rollout.baseline [none]", Verdict: "not reproduced", Measured: "4 of 6000", Documented: "0", Note: "not gating: -fail-on=error reports not reproduced, does not fail it"})
	b.WriteString("•\n")
	p.Finished(report + " (and report.html beside it)")
	return b.String()
}

// budget is a plan of fixed per-spec times.
type budget map[string]time.Duration

func (b budget) Left(setUpDone bool, done map[string]bool) (time.Duration, int) {
	var d time.Duration
	for k, v := range b {
		if !done[k] {
			d += v
		}
	}
	return d, 0
}

// Negative controls of the checker on a run's output: each way it can
// fall short of the README's promise is found.
func TestCheckConsoleFindsWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "report.md")
	if err := os.WriteFile(report, []byte("# report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := consoleOfARun(t, report)
	if err := checkConsole(good, consoleRun); err != nil {
		t.Fatalf("a good run's output: %v\n%s", err, good)
	}
	// As -ginkgo.v prints it: GinkgoWriter's lines indented.
	if err := checkConsole(regexp.MustCompile(`(?m)^`).ReplaceAllString(good, "  "), consoleRun); err != nil {
		t.Errorf("indented: %v", err)
	}
	verdict1 := regexp.MustCompile(`(?m)^.*spec 1 of 2 done in .*\n`).FindString(good)
	for name, c := range map[string]struct{ old, new, want string }{
		"colour":               {"•", "\x1b[38;5;10m•\x1b[0m", "colour codes"},
		"raw JSON":             {"•", "Report Entries >>\n  verdict\n  {\"claim\":\"x\"}", "raw JSON"},
		"no phase durations":   {"set-up: cluster took 1m0s", "set-up: cluster", "set-up phase"},
		"no spec line":         {"spec 2 of 2: rollout.baseline [none] no 503", "rollout.baseline [none] no 503", "spec lines"},
		"numbering off":        {"spec 2 of 2: rollout", "spec 3 of 2: rollout", "want spec 2 of 2"},
		"no verdict line":      {verdict1, "", "verdict lines"},
		"verdict without data": {"reproduced: measured p50 1 ms; documented p50 1 ms", "reproduced", "verdict lines"},
		"no time left":         {"time left by the plan: ", "left: ", "time left"},
		"no final counts":      {"2 of 2 specs ran", "", "finished"},
		"counts wrong":         {"1 reproduced, 1 not reproduced", "2 reproduced, 1 not reproduced", "counts 3 verdicts"},
		"counts as a Go map":   {"1 reproduced, 1 not reproduced", "map[not reproduced:1 reproduced:1]", "is not"},
		"no report":            {"report: " + report, "done", "report: <dir>/report.md"},
		"report missing":       {report, filepath.Join(dir, "gone", "report.md"), "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := strings.ReplaceAll(good, c.old, c.new)
			if c.old == "" || bad == good {
				t.Fatalf("the control changed nothing (%q not found)", c.old)
			}
			if err := checkConsole(bad, consoleRun); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("check = %v; want an error saying %q", err, c.want)
			}
		})
	}
}
