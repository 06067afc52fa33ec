package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/progress"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/resume"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/suites/netpol"
)

// resumed is what -resume found in the run's directory; nil for a run
// that is not resumed.
var resumed *resumeState

type resumeState struct {
	run *resume.Run
	// judged are the selected specs earlier parts measured, by
	// loadplan.Key; total is how many specs the selection holds.
	judged map[string]resume.Judged
	total  int
}

// beginRun writes the run record of a new live run into its claimed
// results directory (resume.Begin).
func beginRun(sel spec.Selection) error {
	return resume.Begin(cfg.ResultsDir, cfg.RunID, resume.Decides(cfg, sel, repoRoot()), time.Now())
}

// openResume checks -resume's directory against this invocation and
// narrows the selection to the specs without a measured record. Nothing is
// written unless live (a dry run or -plan only looks): then run.json gets
// the new part.
func openResume(sel spec.Selection, live bool) error {
	dir := cfg.Resume
	run, err := resume.Open(dir)
	if err != nil {
		return err
	}
	if diffs := resume.Differences(run.Decides, resume.Decides(cfg, sel, repoRoot())); len(diffs) > 0 {
		return resume.Refusal(dir, diffs)
	}
	measured, err := resume.Measured(dir, run.Parts)
	if err != nil {
		return err
	}
	measured = run.Uncut(measured)
	toRun, done := resume.Split(selected, measured)
	if len(toRun) == 0 {
		return fmt.Errorf("-resume=%q: each of the %d selected specs already has a measured record, so nothing is left to run; `meshclaims report %s` rebuilds its report", dir, len(selected), dir)
	}
	if live {
		var env *report.Environment
		if e, err := (&report.Dir{Path: dir}).LoadEnvironment(); err == nil {
			env = &e
		}
		run.Continue(env, measured, time.Now())
		if err := run.Save(dir); err != nil {
			return fmt.Errorf("-resume=%q: %w", dir, err)
		}
	}
	resumed = &resumeState{run: run, judged: resume.Judge(done, measured, cfg.FailOn), total: len(selected)}
	selected = toRun
	netPolSpecs = spec.Needing(toRun, netpol.NeedNetPol.Name)
	return nil
}

// measuredKeys are the specs earlier parts measured (spec.BuildResumed).
func (r *resumeState) measuredKeys() map[string]bool {
	out := map[string]bool{}
	for k := range r.judged {
		out[k] = true
	}
	return out
}

// left are the specs of ps no earlier part measured: what a resumed
// run's plan lists.
func (r *resumeState) left(ps []spec.Planned) []spec.Planned {
	var out []spec.Planned
	for _, p := range ps {
		if _, ok := r.judged[loadplan.Key(p.Claim.ID, p.Mode)]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// planNote heads a resumed run's plan: whose run it continues and what
// earlier parts measured, which the plan leaves out.
func (r *resumeState) planNote(left int) string {
	return fmt.Sprintf("resume: run %s (begun %s, %d part(s) so far): %d of the %d selected specs have a measured record and are not run again; the plan lists the %d planned specs without one",
		cfg.RunID, r.run.Parts[0].Started.UTC().Format("2006-01-02 15:04:05Z"), len(r.run.Parts), len(r.judged), r.total, left)
}

// announce says, before the first spec, that the run is resumed, how many
// specs earlier parts measured, and each of them with its verdict.
func (r *resumeState) announce(c *progress.Printer) {
	first := r.run.Parts[0].Started
	c.Linef("resume: part %d of run %s (begun %s): %d of the %d selected specs were measured in earlier parts and are not run again; %d to run",
		len(r.run.Parts), cfg.RunID, first.UTC().Format("2006-01-02 15:04:05Z"), len(r.judged), r.total, r.total-len(r.judged))
	for _, p := range planned {
		key := loadplan.Key(p.Claim.ID, p.Mode)
		if j, ok := r.judged[key]; ok {
			c.Linef("resume: %s %s, %s; skipped", key, j.Verdict.Result, j.MeasuredIn())
		}
	}
}

// checkImages compares the images this part's set-up used with the run's
// (the first part whose set-up finished records them in run.json), so a
// resumed run whose workload build or Istio images differ stops before
// any spec runs.
func checkImages() error {
	run, err := resume.Open(cfg.ResultsDir)
	if err != nil {
		return err
	}
	now := resume.Images(suite.Environment(), suite.Cluster.Options.Images.Workload)
	if len(run.Images) == 0 {
		run.Images = now
		return run.Save(cfg.ResultsDir)
	}
	if diffs := resume.ImageDifferences(run.Images, now); len(diffs) > 0 {
		return fmt.Errorf("-resume: this part's set-up ran other images than the run's earlier parts, so no spec runs:\n  %s\n(%s lists the run's)",
			strings.Join(diffs, "\n  "), resume.File)
	}
	return nil
}

// earlierFailures fails a resumed run whose earlier parts recorded
// verdicts that fail under -fail-on, as the run in one part would have.
func earlierFailures() error {
	if resumed == nil {
		return nil
	}
	if f := resume.Failures(resumed.judged); len(f) > 0 {
		return fmt.Errorf("%d spec(s) measured in earlier parts of this run fail under -fail-on=%s:\n  %s", len(f), cfg.FailOn, strings.Join(f, "\n  "))
	}
	return nil
}

// withEarlier is the run's report for JUnit: in a resumed run, the specs
// earlier parts measured carry their recorded verdicts (resume.WithEarlier).
func withEarlier(r Report) Report {
	if resumed == nil {
		return r
	}
	return resume.WithEarlier(r, resumed.judged, cfg.FailOn)
}

// The end of a resumed run on the console: what the report holds besides
// this part's specs.
var _ = ReportAfterSuite("resumed", func(r Report) {
	if resumed == nil || r.SuiteConfig.DryRun {
		return
	}
	counts := map[string]int{}
	for _, j := range resumed.judged {
		counts[string(j.Verdict.Result)]++
	}
	var parts []string
	for _, k := range progress.Order(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	console.Linef("resumed: the report and junit.xml also hold the %d specs measured in earlier parts (verdicts: %s)", len(resumed.judged), strings.Join(parts, ", "))
})

// A spec an interrupt cut short may still have written its record (a need
// that saw the cancelled context, say); run.json marks it, so a resumed
// run measures it again. A spec that timed out ended on its own: its
// record stands.
var _ = ReportAfterEach(func(r SpecReport) {
	if r.LeafNodeType != types.NodeTypeIt || !r.State.Is(types.SpecStateInterrupted|types.SpecStateAborted) || flagSet("ginkgo.dry-run") || cfg.Plan {
		return
	}
	if key, _, ok := spec.KeyOf(r); ok {
		if err := resume.MarkCut(cfg.ResultsDir, key, time.Now()); err != nil {
			console.Linef("resume: marking %s as cut short in %s: %v (a resumed run would keep its record)", key, resume.File, err)
		}
	}
})
