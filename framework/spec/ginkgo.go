package spec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Build adds one Ginkgo container per area and one It per planned spec. It
// must run before RunSpecs. env returns the Env the before-all prepared (it
// is nil during tree construction and in dry runs, which never call it).
func Build(planned []Planned, env func() *Env) { build(planned, env, nil) }

func build(planned []Planned, env func() *Env, extra func(Planned) []string) {
	byArea := map[string][]Planned{}
	var areas []string
	for _, p := range planned {
		if _, ok := byArea[p.Def.Area]; !ok {
			areas = append(areas, p.Def.Area)
		}
		byArea[p.Def.Area] = append(byArea[p.Def.Area], p)
	}
	for _, area := range areas {
		ps := byArea[area]
		Describe(area, Label("area:"+area), func() {
			for _, p := range ps {
				p := p
				labels := p.Labels()
				if extra != nil {
					labels = append(labels, extra(p)...)
				}
				It(p.Name(), Label(labels...), declaredAt(p.Def), func(ctx SpecContext) {
					execute(ctx, p, env())
				})
			}
		})
	}
}

// declaredAt is the spec's code location for Ginkgo (and so JUnit): the
// suite file's spec.Declare, not this loop.
func declaredAt(d Def) types.CodeLocation {
	file, line := d.Declared, 0
	if i := strings.LastIndex(file, ":"); i > 0 {
		if n, err := strconv.Atoi(file[i+1:]); err == nil {
			file, line = file[:i], n
		}
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(repoRoot, file)
	}
	return types.CodeLocation{FileName: file, LineNumber: line}
}

func execute(ctx SpecContext, p Planned, env *Env) {
	Expect(env).NotTo(BeNil(), "the suite's set-up did not run")
	var out io.Writer = GinkgoWriter
	if env.Out != nil {
		out = env.Out
	}
	r := NewRun(p.Claim, p.Mode, env, out)
	r.onCleanup = func(f func(context.Context) error) {
		DeferCleanup(func(ctx SpecContext) error { return f(ctx) })
	}
	// For the JUnit report; the console has the verdict line instead.
	AddReportEntry("claim", p.Claim.ID, ReportEntryVisibilityNever)
	AddReportEntry("mode", string(p.Mode), ReportEntryVisibilityNever)
	AddReportEntry("scenario", p.Def.Scenario, ReportEntryVisibilityNever)
	AddReportEntry("declared", p.Def.Declared, ReportEntryVisibilityNever)
	DeferCleanup(func() { currentRun = nil })
	currentRun = r

	var got verdict.Measurement
	bySelection := false
	for _, need := range p.Def.Needs {
		if err := need.Check(ctx, r); err != nil {
			got.Unmet = fmt.Sprintf("%s: %v", need.Name, err)
			bySelection = need.Selection || need.Layer
			break
		}
	}
	if got.Unmet == "" {
		var err error
		got, err = p.Def.Measure(ctx, r)
		Expect(err).NotTo(HaveOccurred(), "%s [%s]: the measurement itself failed", p.Claim.ID, p.Mode)
		// The plan printed before the run came from Def.Loads: a run that
		// ran other loads than those would make the plan a second list.
		Expect(CheckPlanned(p.Def, r)).To(Succeed(), "%s [%s]", p.Claim.ID, p.Mode)
	}
	v := verdict.Judge(p.Claim, p.Mode, got)
	r.judged = &v
	if env.Results != nil {
		// Recorded at the very end of the spec (after the failure-evidence
		// hook), so the record lists the evidence too.
		DeferCleanup(func() error {
			return env.Results.Record(report.Record{Claim: p.Claim.ID, Mode: p.Mode, Measurement: got, Setup: r.Setup(), Raw: r.Raw(), Evidence: r.Evidence(), Waits: r.Waits(), Declared: p.Def.Declared, Where: r.Where(), Loads: r.Loads(), Took: tookOf(r)})
		})
	}
	r.Logf("%s: %s", v.Result, v.Reason)
	failOn := config.FailOnNotReproduced
	if env.Config != nil {
		failOn = env.Config.FailOn
	}
	err := Gate(p.Claim.Kind, v, got, bySelection, failOn)
	ReportVerdict(v, failOn, err == nil)
	if err != nil {
		Fail(err.Error())
	}
}

// ReportVerdict adds the spec's verdict to its report, for the console's
// verdict line and the JUnit report, and, for a verdict other than
// reproduced or recorded that does not fail the spec (passed, under
// failOn), says so. Ginkgo itself never prints either entry.
func ReportVerdict(v verdict.Verdict, failOn string, passed bool) {
	AddReportEntry(EntryVerdict, verdictEntry(v), ReportEntryVisibilityNever)
	if !v.Passed() && passed {
		AddReportEntry(EntryNotGating, fmt.Sprintf("not gating: -fail-on=%s reports %s, does not fail it", failOn, v.Result), ReportEntryVisibilityNever)
	}
}

// Gate decides whether a judged spec of a claim of kind fails. A missing
// precondition of the cluster always fails (a claim about NetworkPolicy on
// a CNI that does not enforce it must never pass); one of the run's mode
// selection or of the test layer (bySelection: Need.Selection, Need.Layer)
// fails only the qualification gate
// (FailOnNotReproduced), since its verdict is inconclusive. Otherwise failOn
// says whether a verdict other than reproduced or recorded fails the spec
// (FailOnNotReproduced), fails it only for a requirement
// (FailOnRequirement), or is only reported (FailOnError: the measurement
// itself was made).
func Gate(kind claims.Kind, v verdict.Verdict, got verdict.Measurement, bySelection bool, failOn string) error {
	msg := fmt.Sprintf("%s [%s] %s: %s\n  documented: %s\n  measured:   %s", v.Claim, v.Mode, v.Result, v.Reason, v.Documented, v.MeasuredText)
	switch {
	case got.Unmet != "" && bySelection && failOn != config.FailOnNotReproduced:
		return nil
	case got.Unmet != "":
		return errors.New(msg)
	case failOn == config.FailOnError:
		return nil
	case failOn == config.FailOnRequirement && kind != claims.Requirement:
		return nil
	case !v.Passed():
		return errors.New(msg)
	}
	return nil
}

// currentRun lets the failure-evidence hook find the running spec's Run.
var currentRun *Run

// Current returns the Run of the spec being executed, or nil.
func Current() *Run { return currentRun }

// RefuseParallel refuses Ginkgo's parallel mode (ginkgo -p / -procs=N):
// the suite keeps run-wide state in one process — the shared measurements
// several claims judge (one GUIDE load, one rollout run per mode), the
// NetworkPolicy preflight's result, the spec being executed for the
// evidence hook — and its specs change shared namespaces (policies applied
// and removed), so two processes would measure each other's policies.
func RefuseParallel(parallelTotal int) error {
	if parallelTotal > 1 {
		return fmt.Errorf("meshclaims runs its specs in one process: Ginkgo's parallel mode (-p / -procs=%d) is refused, "+
			"because specs share the mode namespaces (one spec's policy would be measured by another) and run-wide state "+
			"(shared measurements, the NetworkPolicy preflight, the current spec); run without -p", parallelTotal)
	}
	return nil
}

// tookOf is the spec's wall time for its record, in microseconds and never
// 0: a spec that only reads a shared measurement takes under a millisecond,
// and a record without a wall time gives a later plan no cost for it
// (report.Dir.Costs), so rounding such a spec to 0 ms made it "unknown".
func tookOf(r *Run) time.Duration {
	return max(time.Since(r.start).Round(time.Microsecond), time.Microsecond)
}
