package all

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/cleanup/cleanuptest"
	"github.com/meshclaims/meshclaims/framework/junit"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/resume"
)

// A real run on the local cluster that dies part-way goes on with -resume:
// killed (SIGKILL, as an out-of-memory kill or a recycled runner ends it,
// no clean-up at all) or interrupted (SIGINT, Ctrl-C) once two specs have
// written their records. The resumed run with another -duration-scale is
// refused with exit 2 and leaves the directory as it was (the control of
// the acceptance below); the same invocation runs only the specs without
// a record, keeps the first part's records as they were, and ends with a
// record of every spec, a report that says the run was resumed and when
// each part started, and a JUnit report judging every spec.
//
// Root, MESHCLAIMS_LOCAL=1 and the machine's cluster lock held, as for
// the other local runs.
func TestKilledLocalRunResumes(t *testing.T) {
	if os.Getenv("MESHCLAIMS_LOCAL") != "1" {
		t.Skip("MESHCLAIMS_LOCAL=1 not set: this test kills and resumes a real run on the local cluster (root, the cluster lock held); it is run by hand")
	}
	bin := e2eBinary(t)
	base := []string{"-mode=none", "-provider=local", "-duration-scale=0.05", "-fail-on=error", "-test.timeout=2h"}
	// "spec 3 of N" starts once the second spec has ended and written
	// its record.
	third := regexp.MustCompile(`spec 3 of [0-9]+: `)
	for _, c := range []struct {
		name string
		stop func(p *cleanuptest.Process) error
	}{
		{"SIGKILL", func(p *cleanuptest.Process) error { return p.Kill(t, time.Minute) }},
		{"SIGINT", func(p *cleanuptest.Process) error { return p.Interrupt(t, 10*time.Minute) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			results := t.TempDir()
			dir := filepath.Join(results, "part-1")
			first := cleanuptest.Start(t, exec.Command(bin, append(append([]string{}, base...), "-results="+results, "-run-id=part-1")...), "first part")
			first.WaitForMatch(t, third, time.Hour)
			var ee *exec.ExitError
			if err := c.stop(first); !errors.As(err, &ee) {
				t.Fatalf("the stopped run exited %v, want a failure", err)
			}
			kept := measuredFiles(t, dir)
			if len(kept) < 2 {
				t.Fatalf("the first part left %d measured records, want at least 2: %v", len(kept), kept)
			}
			snapshot := dirSnapshot(t, dir)

			out, err := exec.Command(bin, append(append([]string{}, base...), "-duration-scale=0.1", "-resume="+dir)...).CombinedOutput()
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "-duration-scale: the run has 0.05, this invocation 0.1") {
				t.Errorf("a resume with another scale: %v, want exit 2 naming both scales:\n%s", err, lastLinesOf(string(out), 20))
			}
			if after := dirSnapshot(t, dir); after != snapshot {
				t.Errorf("the refused resume changed the directory")
			}

			second := cleanuptest.Start(t, exec.Command(bin, append(append([]string{}, base...), "-resume="+dir)...), "second part")
			if err := second.Wait(t, 2*time.Hour); err != nil {
				t.Errorf("the resumed run: %v\n%s", err, lastLinesOf(second.Output(), 40))
			}
			if !strings.Contains(second.Output(), "resume: part 2 of run part-1") {
				t.Errorf("the resumed run does not say it is part 2:\n%s", lastLinesOf(second.Output(), 40))
			}
			for f, digest := range kept {
				if now := measuredFiles(t, dir)[f]; now != digest {
					t.Errorf("%s: the first part's record was rewritten", f)
				}
			}
			res, err := report.LoadResults(filepath.Join(dir, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			all := measuredFiles(t, dir)
			if len(res.Entries) != len(all) || len(all) <= len(kept) {
				t.Errorf("results.json holds %d entries, the directory %d records (the first part %d)", len(res.Entries), len(all), len(kept))
			}
			if len(res.Environment.Parts) != 1 || res.Environment.Parts[0].Measured != len(kept) {
				t.Errorf("the environment's parts: %+v; want the first, with its %d records", res.Environment.Parts, len(kept))
			}
			if c.name == "SIGKILL" && !res.Environment.Parts[0].Finished.IsZero() {
				t.Errorf("a killed part is recorded as ended at %v", res.Environment.Parts[0].Finished)
			}
			md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
			if !strings.Contains(string(md), "| resumed | resumed: the run was made in 2 parts (-resume); part 1: started ") {
				t.Errorf("report.md does not say the run was resumed")
			}
			judged, err := junit.Check(filepath.Join(dir, "junit.xml"))
			if err != nil || judged != len(all) {
				t.Errorf("junit.xml judges %d specs (%v), want %d", judged, err, len(all))
			}
			if run, err := resume.Open(dir); err != nil || len(run.Parts) != 2 {
				t.Errorf("run.json: %v, %+v", err, run)
			}
		})
	}
}

// measuredFiles maps each measured record of a results directory to its
// content's digest.
func measuredFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range strings.Fields(dirSnapshot(t, filepath.Join(dir, "measured"))) {
		name, digest, _ := strings.Cut(f, "=")
		out[name] = digest
	}
	return out
}
