// Package e2e is meshclaims' entry point:
//
//	go test ./e2e -mode=ambient-l4                     # kind cluster it creates
//	go test ./e2e -mode=all -provider=existing -context=eks-qual -timeout=6h
//	go test ./e2e -mode=sidecar -ginkgo.dry-run -ginkgo.v   # list the specs (and the plan)
//	go test ./e2e -mode=none,sidecar -plan                  # the plan: loads, durations, estimated total
//
// Flags are validated before anything touches a cluster; the run ends with
// junit.xml, results.json and report.md in the results directory.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/cleanup"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/evidence"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/setup"
	"github.com/meshclaims/meshclaims/framework/spec"
	_ "github.com/meshclaims/meshclaims/suites/all"
)

var (
	cfg   = config.Register(flag.CommandLine)
	reg   *claims.Registry
	suite *setup.Suite
)

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..")
}

// TestMain validates every flag before any test runs, so a bad -mode or
// -provider fails in well under a second with the accepted values.
func TestMain(m *testing.M) {
	flag.Parse()
	// go test passes -test.timeout=10m unless told otherwise, which would
	// kill a live run midway (and leave its cluster behind). Raise go's
	// default, and only its default, for runs that are not dry runs.
	if t := flag.Lookup("test.timeout"); t != nil && t.Value.String() == "10m0s" && !flagSet("ginkgo.dry-run") && !cfg.Plan {
		_ = flag.Set("test.timeout", liveTimeout.String())
		fmt.Fprintf(os.Stderr, "meshclaims: go test's default 10m timeout raised to %s for a live run; pass -timeout to choose another\n", liveTimeout)
	}
	if err := cfg.Validate(repoRoot(), time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "meshclaims:", err)
		os.Exit(2)
	}
	var err error
	if reg, err = claims.Load(cfg.ClaimsFile); err != nil {
		fmt.Fprintln(os.Stderr, "meshclaims:", err)
		os.Exit(2)
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

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	planned, err := spec.Plan(reg, spec.Defs(), cfg.Modes)
	if err != nil {
		t.Fatal(err)
	}
	// The plan, before any cluster work: -plan prints it and stops; a dry
	// run prints it beside the spec tree.
	if cfg.Plan || flagSet("ginkgo.dry-run") {
		if _, err := spec.WritePlan(context.Background(), os.Stdout, planned, &spec.Env{Config: cfg, Registry: reg}); err != nil {
			t.Fatal(err)
		}
		if cfg.Plan {
			return
		}
	}
	spec.Build(planned, func() *spec.Env {
		if suite == nil {
			return nil
		}
		return suite.Env
	})
	suiteCfg, repCfg := GinkgoConfiguration()
	if err := spec.RefuseParallel(suiteCfg.ParallelTotal); err != nil {
		t.Fatal(err)
	}
	if !flagSet("ginkgo.timeout") {
		// Ginkgo's default suite timeout is 1h; a full run of the documented
		// setups (600 s rollouts per mode and hardening) takes longer.
		suiteCfg.Timeout = liveTimeout
	}
	if repCfg.JUnitReport == "" && !suiteCfg.DryRun {
		repCfg.JUnitReport = filepath.Join(cfg.ResultsDir, "junit.xml")
	}
	RunSpecs(t, "meshclaims "+strings.Join(modeNames(cfg.Modes), ","), suiteCfg, repCfg)
}

// stopInterruptWatch ends the watch for Ctrl-C/SIGTERM set up before Up.
var stopInterruptWatch = func() {}

var _ = BeforeSuite(func(ctx SpecContext) {
	// Published before Up runs: Ginkgo runs the after-all after an interrupt
	// even when Up has not returned, and Down then finds the provider and
	// cleaner as soon as each exists.
	suite = setup.New(cfg, reg, GinkgoWriter)
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
	Expect(suite.Up(ctx)).To(Succeed(), "set-up failed; see %s", cfg.ResultsDir)
}, NodeTimeout(time.Hour))

var _ = AfterSuite(func(ctx SpecContext) {
	if suite == nil {
		return
	}
	defer stopInterruptWatch()
	Expect(suite.Down(ctx, anyFailed)).To(Succeed())
}, NodeTimeout(30*time.Minute))

// anyFailed makes the after-all export the cluster's logs.
var anyFailed bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		anyFailed = true
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
	want, why := evidence.Wanted(CurrentSpecReport().Failed(), r.Judged(), evidenceCollected, cfg.EvidenceMax)
	if !want {
		if why != "" {
			AddReportEntry("evidence skipped", why)
		}
		return
	}
	evidenceCollected++
	AddReportEntry("evidence reason", why)
	name := report.Name(r.Claim.ID, string(r.Mode))
	dir, err := suite.Results.EvidencePath(name)
	if err != nil {
		AddReportEntry("evidence error", err.Error())
		return
	}
	files, err := evidence.Collect(ctx, suite.Cluster.Kube, dir, suite.Results.Path, append(r.Namespaces(), fixtures.OutsideNamespace)...)
	for _, f := range files {
		r.AddEvidence(f)
	}
	AddReportEntry("evidence", strings.Join(files, "\n"))
	if err != nil {
		AddReportEntry("evidence gaps", err.Error())
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
