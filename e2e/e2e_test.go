// Package e2e is meshclaims' entry point:
//
//	go test ./e2e -mode=ambient-l4                     # kind cluster it creates
//	go test ./e2e -mode=all -provider=existing -context=eks-qual -timeout=6h
//	go test ./e2e -mode=sidecar -ginkgo.dry-run -ginkgo.v   # list the specs (and the plan)
//	go test ./e2e -mode=none,sidecar -plan                  # the plan: loads, durations, estimated total
//	go test ./e2e -mode=all -resume=results/20261129-214800   # continue that run where it died
//
// Flags are validated before anything touches a cluster; the run prints its
// progress as it goes (set-up phases, "spec N of M", one verdict line per
// spec, the time left by the plan) and ends with junit.xml, results.json
// and report.md in the results directory.
package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	"golang.org/x/term"

	"github.com/meshclaims/meshclaims"
	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/cleanup"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/decision"
	"github.com/meshclaims/meshclaims/framework/evidence"
	"github.com/meshclaims/meshclaims/framework/junit"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/progress"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/setup"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/suiteflags"
	_ "github.com/meshclaims/meshclaims/suites/all"
	"github.com/meshclaims/meshclaims/suites/netpol"
)

var (
	suiteFlags = flag.NewFlagSet("meshclaims", flag.ContinueOnError)
	cfg        = config.Register(suiteFlags)
	reg        *claims.Registry
	suite      *setup.Suite
)

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..")
}

// TestMain validates every flag before any test runs, so a bad -mode or
// -provider fails in well under a second with the accepted values.
func TestMain(m *testing.M) {
	// The suite's flags, Ginkgo's and go test's only: libraries' flags
	// registered at init (fortio's -timeout, -k, ...) are refused.
	cl := suiteflags.Isolate(flag.CommandLine, suiteFlags)
	flag.CommandLine = cl.FlagSet
	if err := cl.Parse(os.Args[1:], os.Stdout); errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	} else if err != nil {
		usageError(err)
	}
	if flag.NArg() > 0 {
		// The flag package stops at the first argument that is not a
		// flag; what follows it would be ignored without a word.
		usageError(fmt.Errorf("unexpected argument %q: the suite takes flags only, and every flag after it would be ignored (%s)", flag.Arg(0), strings.Join(flag.Args(), " ")))
	}
	if err := cfg.Validate(repoRoot(), time.Now()); err != nil {
		usageError(err)
	}
	var err error
	if reg, err = claims.Load(cfg.ClaimsFile); err != nil {
		usageError(err)
	}
	if !flagSet("claims") {
		// Named as in the repository, as meshclaims names its built-in
		// copy, so runs made in different checkouts compare (diff).
		reg.File = meshclaims.ClaimsFile
	}
	if planned, err = spec.Plan(reg, spec.Defs(), cfg.Modes); err != nil {
		usageError(err)
	}
	suiteCfg, _ := GinkgoConfiguration()
	selection := spec.Selection{
		Description: description(), LabelFilter: suiteCfg.LabelFilter, Focus: suiteCfg.FocusStrings, Skip: suiteCfg.SkipStrings,
	}
	if err := spec.CheckSelection(reg, planned, cfg.Modes, selection); err != nil {
		usageError(err)
	}
	if chosen, err := spec.Selected(planned, selection); err != nil {
		usageError(err)
	} else {
		netPolSpecs = spec.Needing(chosen, netpol.NeedNetPol.Name)
		selected = chosen
	}
	if cfg.Resume != "" {
		// Before anything is written: a refused resume leaves the
		// directory as it found it.
		if err := openResume(selection, !suiteCfg.DryRun && !cfg.Plan); err != nil {
			usageError(err)
		}
	}
	if !suiteCfg.DryRun && !cfg.Plan {
		if cfg.Resume == "" {
			if err := cfg.ClaimResultsDir(); err != nil {
				usageError(err)
			}
			if err := beginRun(selection); err != nil {
				usageError(fmt.Errorf("results directory %s: %w", cfg.ResultsDir, err))
			}
		}
		if cfg.Requirements != nil {
			// Kept beside the results, so every rebuild of the report
			// (the run's own, meshclaims report later) sets the run
			// against the same tiers.
			d, err := report.Create(cfg.ResultsDir)
			if err == nil {
				err = d.SaveRequirements(cfg.Requirements)
			}
			if err != nil {
				usageError(fmt.Errorf("-requirements: %w", err))
			}
		}
	}
	// go test passes -test.timeout=10m unless told otherwise, which would
	// kill a live run midway (and leave its cluster behind). Raise go's
	// default, and only its default, for runs that are not dry runs.
	if t := flag.Lookup("test.timeout"); t != nil && !suiteCfg.DryRun && !cfg.Plan {
		switch t.Value.String() {
		case "10m0s":
			_ = flag.Set("test.timeout", liveTimeout.String())
			fmt.Fprintf(os.Stderr, "meshclaims: go test's default 10m timeout raised to %s for a live run; pass -timeout to choose another\n", liveTimeout)
		case "0s":
		default:
			fmt.Fprintf(os.Stderr, "meshclaims: the run's time limit is %s (-timeout)\n", t.Value)
		}
	}
	code := m.Run()
	// An interrupt's clean-up runs beside Ginkgo; a second Ctrl-C makes
	// Ginkgo skip the after-all, and exiting now would cut the clean-up
	// short and leave the run's objects (or its cluster) behind.
	if suite != nil {
		suite.Wait()
	}
	os.Exit(code)
}

// usageError ends a run whose flags or selection are wrong, before anything
// touches a cluster or the results directory: exit code 2.
func usageError(err error) {
	fmt.Fprintln(os.Stderr, "meshclaims:", err)
	os.Exit(2)
}

// planned are the (claim, mode) specs of the selected modes.
var planned []spec.Planned

// netPolSpecs are the selected specs that need NetworkPolicy enforcement.
var netPolSpecs []string

// selected are the planned specs the selection runs.
var selected []spec.Planned

func description() string { return "meshclaims " + strings.Join(modeNames(cfg.Modes), ",") }

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// The plan, before any cluster work: -plan prints it and stops; a dry
	// run prints it beside the spec tree.
	if cfg.Plan || flagSet("ginkgo.dry-run") {
		toPlan := planned
		if resumed != nil {
			toPlan = resumed.left(planned)
			fmt.Fprintln(os.Stdout, resumed.planNote(len(toPlan)))
		}
		if _, err := spec.WritePlan(context.Background(), os.Stdout, toPlan, &spec.Env{Config: cfg, Registry: reg}); err != nil {
			t.Fatal(err)
		}
		if cfg.Plan {
			return
		}
	}
	env := func() *spec.Env {
		if suite == nil {
			return nil
		}
		return suite.Env
	}
	suiteCfg, repCfg := GinkgoConfiguration()
	if resumed != nil {
		spec.BuildResumed(planned, env, resumed.measuredKeys())
		suiteCfg.LabelFilter = spec.ExcludeMeasured(suiteCfg.LabelFilter)
	} else {
		spec.Build(planned, env)
	}
	if err := spec.RefuseParallel(suiteCfg.ParallelTotal); err != nil {
		t.Fatal(err)
	}
	if !flagSet("ginkgo.timeout") {
		// Ginkgo's default suite timeout is 1h; a full run of the documented
		// setups (600 s rollouts per mode and hardening) takes longer.
		suiteCfg.Timeout = liveTimeout
	}
	// The JUnit report is written by junit.Write (each spec's verdict
	// readable), where -ginkgo.junit-report says or in the results.
	junitPath = repCfg.JUnitReport
	if junitPath == "" && !suiteCfg.DryRun {
		junitPath = filepath.Join(cfg.ResultsDir, "junit.xml")
	}
	repCfg.JUnitReport = ""
	plainOutput(&repCfg)
	budget, err := spec.Budget(context.Background(), selected, &spec.Env{Config: cfg, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	console = progress.New(progressOut(repCfg), time.Now, budget)
	if resumed != nil && !suiteCfg.DryRun {
		resumed.announce(console)
	}
	RunSpecs(t, description(), suiteCfg, repCfg)
}

// console prints the run's progress as it happens (framework/progress).
var console *progress.Printer

// junitPath is where the run's JUnit report goes ("" in a dry run).
var junitPath string

// plainOutput keeps colour codes out of logs and files: Ginkgo colours its
// output unless -ginkgo.no-color, also where stdout is a pipe (go test's
// own, a CI log, a file). Unless the flag is given, colour stays on only
// for a terminal without NO_COLOR. Without -ginkgo.v, each spec's dot
// gets a line of its own, so the progress lines never start after one,
// and the specs a selection leaves out print nothing (an "S" line each).
func plainOutput(c *types.ReporterConfig) {
	if !flagSet("ginkgo.no-color") && (os.Getenv("NO_COLOR") != "" || !term.IsTerminal(int(os.Stdout.Fd()))) {
		c.NoColor = true
	}
	if !flagSet("ginkgo.force-newlines") && !c.Verbosity().GTE(types.VerbosityLevelVerbose) {
		c.ForceNewlines = true
	}
	if !flagSet("ginkgo.silence-skips") {
		c.SilenceSkips = true
	}
}

// progressOut is where progress lines go: straight to stdout, since
// Ginkgo holds GinkgoWriter's output back to the end of each node unless
// -ginkgo.v, and also to GinkgoWriter, so the JUnit report keeps them
// with their spec. Under -ginkgo.v GinkgoWriter writes to stdout itself.
func progressOut(c types.ReporterConfig) io.Writer {
	if c.Verbosity().GTE(types.VerbosityLevelVerbose) {
		return GinkgoWriter
	}
	return io.MultiWriter(os.Stdout, GinkgoWriter)
}

// stopInterruptWatch ends the watch for Ctrl-C/SIGTERM set up before Up.
var stopInterruptWatch = func() {}

var _ = BeforeSuite(func(ctx SpecContext) {
	// Published before Up runs: Ginkgo runs the after-all after an interrupt
	// even when Up has not returned, and Down then finds the provider and
	// cleaner as soon as each exists.
	suite = setup.New(cfg, reg, console)
	suite.Phase = console.Phase
	suite.NetPolSpecs = netPolSpecs
	suite.Selected = selected
	if resumed != nil {
		suite.EarlierParts = resumed.run.Earlier()
	}
	// Ginkgo's own interrupt handling waits out its grace period for Up and
	// skips the after-all on a second Ctrl-C; this starts deleting at once
	// and once, and the after-all's Down waits for it.
	sigs, unsubscribe := cleanup.Interrupts()
	stop := suite.TearDownOn(sigs, func(sig os.Signal, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "meshclaims: %v: clean-up failed: %v\n", sig, err)
			return
		}
		fmt.Fprintf(os.Stderr, "meshclaims: %v: deleted what this run created\n", sig)
	})
	stopInterruptWatch = func() { unsubscribe(); stop() }
	// Fail, not Gomega's Succeed: that prints the error three times (its
	// message, its type's dump and the wrapped errors' fields).
	err := suite.Up(ctx)
	console.SetUpDone(err)
	if err != nil {
		Fail(fmt.Sprintf("set-up failed (the report in %s says so too): %v", cfg.ResultsDir, err))
	}
	if err := checkImages(); err != nil {
		Fail(err.Error())
	}
}, NodeTimeout(time.Hour))

// A selection CheckSelection did not foresee (-ginkgo.focus-file, say) that
// runs nothing fails the run rather than passing with nothing measured.
var _ = ReportAfterSuite("something was selected", func(r Report) {
	if !r.SuiteConfig.DryRun && r.PreRunStats.SpecsThatWillRun == 0 {
		Fail(fmt.Sprintf("no spec of the %d planned for -mode=%s was selected, so nothing was measured", r.PreRunStats.TotalSpecs, strings.Join(modeNames(cfg.Modes), ",")))
	}
})

var _ = AfterSuite(func(ctx SpecContext) {
	if suite == nil {
		return
	}
	defer stopInterruptWatch()
	if err := suite.Down(ctx, anyFailed); err != nil {
		Fail(fmt.Sprintf("tear-down: %v", err))
	}
	if err := requirementsGate(); err != nil {
		Fail(err.Error())
	}
	if err := earlierFailures(); err != nil {
		Fail(err.Error())
	}
}, NodeTimeout(30*time.Minute))

// requirementsGate fails the run when -requirements names a tier that no
// measured mode meets, as the report's recommendation says.
func requirementsGate() error {
	if cfg.Requirements == nil {
		return nil
	}
	res, err := report.LoadResults(filepath.Join(cfg.ResultsDir, "results.json"))
	if err != nil {
		return fmt.Errorf("-requirements: %w", err)
	}
	if res.Requirements == nil {
		return fmt.Errorf("-requirements: the report holds no recommendation (%s missing from %s)", report.RequirementsFile, cfg.ResultsDir)
	}
	return decision.Gate(res.Requirements.Tiers)
}

// anyFailed makes the after-all export the cluster's logs.
var anyFailed bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		anyFailed = true
	}
	if r.State.Is(types.SpecStateSkipped|types.SpecStatePending) || r.LeafNodeType != types.NodeTypeIt || flagSet("ginkgo.dry-run") {
		return
	}
	console.SpecEnded(spec.EndedOf(r))
})

// "spec N of M" as each spec starts; M counts the specs the run will run.
var _ = ReportBeforeSuite(func(r Report) {
	console.Total(r.PreRunStats.SpecsThatWillRun)
})

var _ = ReportBeforeEach(func(r SpecReport) {
	if r.State.Is(types.SpecStateSkipped | types.SpecStatePending) {
		return
	}
	if key, title, ok := spec.KeyOf(r); ok {
		console.SpecStarted(key, title)
	}
})

// evidenceCollected counts the specs that collected evidence, for -evidence-max.
var evidenceCollected int

// On a failed spec, and on any verdict other than reproduced or recorded
// (a "not reproduced" under -fail-on=error passes), save events, pod YAML,
// logs, proxy state and istiod's debug views before anything is cleaned
// up, from every namespace the spec touched, and list the files in the
// JUnit report.
var _ = JustAfterEach(func(ctx SpecContext) {
	r := spec.Current()
	if suite == nil || suite.Cluster == nil || r == nil {
		return
	}
	// The entries are for the JUnit report; the console gets one line.
	want, why := evidence.Wanted(CurrentSpecReport().Failed(), r.Judged(), evidenceCollected, cfg.EvidenceMax)
	if !want {
		if why != "" {
			AddReportEntry("evidence skipped", why, ReportEntryVisibilityNever)
			r.Logf("evidence skipped: %s", why)
		}
		return
	}
	evidenceCollected++
	AddReportEntry("evidence reason", why, ReportEntryVisibilityNever)
	name := report.Name(r.Claim.ID, string(r.Mode))
	dir, err := suite.Results.EvidencePath(name)
	if err != nil {
		AddReportEntry("evidence error", err.Error(), ReportEntryVisibilityNever)
		r.Logf("evidence (%s) not collected: %v", why, err)
		return
	}
	files, err := evidence.Collect(ctx, suite.Cluster.Kube, dir, suite.Results.Path, append(r.Namespaces(), fixtures.OutsideNamespace)...)
	for _, f := range files {
		r.AddEvidence(f)
	}
	AddReportEntry("evidence", strings.Join(files, "\n"), ReportEntryVisibilityNever)
	r.Logf("evidence (%s): %d files in %s", why, len(files), dir)
	if err != nil {
		AddReportEntry("evidence gaps", err.Error(), ReportEntryVisibilityNever)
		r.Logf("evidence gaps: %v", err)
	}
}, NodeTimeout(5*time.Minute))

// liveTimeout bounds a live run when the user did not choose a timeout.
const liveTimeout = 12 * time.Hour

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func modeNames(ms []mode.Mode) []string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return s
}

// The end of the run on the console: the verdict counts and where the
// report is. This and the JUnit report are declared after every other
// node, so the report includes a failure of the "something was selected"
// check.
var _ = ReportAfterSuite("progress", func(r Report) {
	if r.SuiteConfig.DryRun {
		return
	}
	where := ""
	if suite != nil && suite.Results != nil {
		where = filepath.Join(suite.Results.Path, "report.md") + " (and report.html beside it)"
	}
	console.Finished(where)
})

// The JUnit report, with each judged spec's verdict readable (junit.Write).
var _ = ReportAfterSuite("junit", func(r Report) {
	if junitPath == "" {
		return
	}
	if err := junit.Write(withEarlier(r), junitPath); err != nil {
		Fail(fmt.Sprintf("JUnit report %s: %v", junitPath, err))
	}
})
