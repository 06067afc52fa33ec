package junit_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/junit"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// A suite of the four ways a spec ends, each reported as execute reports
// it (spec.ReportVerdict): reproduced; not reproduced but passed under
// -fail-on=error; not reproduced and failed; failed before judging.
var _ = Describe("area", func() {
	judge := func(claim string, r verdict.Result, failOn string, passed bool) {
		v := verdict.Verdict{Claim: claim, Mode: mode.Sidecar, Result: r, Documented: "0", MeasuredText: "4 of 6000", Reason: "the interval excludes 0"}
		AddReportEntry("scenario", "a load of 6000 requests", ReportEntryVisibilityNever)
		spec.ReportVerdict(v, failOn, passed)
		if !passed {
			Fail(claim + " [sidecar] not reproduced")
		}
	}
	It("c.reproduced [sidecar] a title", Label("claim:c.reproduced", "mode:sidecar"), func() {
		judge("c.reproduced", verdict.Reproduced, "not-reproduced", true)
	})
	It("c.reported [sidecar] a title", Label("claim:c.reported", "mode:sidecar"), func() {
		judge("c.reported", verdict.NotReproduced, "error", true)
	})
	It("c.failed [sidecar] a title", Label("claim:c.failed", "mode:sidecar"), func() {
		judge("c.failed", verdict.NotReproduced, "not-reproduced", false)
	})
	It("c.broken [sidecar] a title", Label("claim:c.broken", "mode:sidecar"), func() {
		Fail("c.broken [sidecar]: the measurement itself failed")
	})
})

var suiteReport types.Report

var _ = ReportAfterSuite("keep the report", func(r Report) { suiteReport = r })

// failRecorder stands in for *testing.T: the inner suite fails on purpose.
type failRecorder struct{ failed bool }

func (f *failRecorder) Fail() { f.failed = true }

func TestWriteShowsEachVerdict(t *testing.T) {
	suiteCfg, repCfg := GinkgoConfiguration()
	repCfg.Succinct, repCfg.NoColor = true, true
	var ft failRecorder
	RunSpecs(&ft, "junit", suiteCfg, repCfg)
	if !ft.failed || len(suiteReport.SpecReports) == 0 {
		t.Fatalf("the inner suite did not run as planned (failed %v, %d reports)", ft.failed, len(suiteReport.SpecReports))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "junit.xml")
	if err := junit.Write(suiteReport, path); err != nil {
		t.Fatal(err)
	}
	judged, err := junit.Check(path)
	if err != nil || judged != 3 {
		t.Fatalf("Check = %d judged, %v; want 3 and no error", judged, err)
	}
	b, _ := os.ReadFile(path)
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatal(err)
	}
	s := suites.TestSuites[0]
	if got := s.Properties.WithName(junit.PropVerdicts); got != "1 reproduced, 2 not reproduced" {
		t.Errorf("suite verdicts = %q", got)
	}
	cases := map[string]reporters.JUnitTestCase{}
	for _, tc := range s.TestCases {
		for _, c := range []string{"c.reproduced", "c.reported", "c.failed", "c.broken"} {
			if strings.Contains(tc.Name, c+" [sidecar]") {
				cases[c] = tc
			}
		}
	}
	reported := cases["c.reported"]
	if reported.Failure != nil || reported.Status != "passed" {
		t.Errorf("the reported spec passed, yet: status %s, failure %v", reported.Status, reported.Failure)
	}
	want := "verdict: c.reported [sidecar] not reproduced: measured 4 of 6000; documented 0; the interval excludes 0 (not gating: -fail-on=error reports not reproduced, does not fail it)"
	if first, _, _ := strings.Cut(reported.SystemOut, "\n"); first != want {
		t.Errorf("system-out starts\n%q\nwant\n%q", first, want)
	}
	for name, want := range map[string]string{"claim": "c.reported", "mode": "sidecar", "verdict": "not reproduced", "measured": "4 of 6000",
		"documented": "0", "reason": "the interval excludes 0", "gating": "not gating: -fail-on=error reports not reproduced, does not fail it", "scenario": "a load of 6000 requests"} {
		if got := reported.Properties.WithName(name); got != want {
			t.Errorf("property %s = %q, want %q", name, got, want)
		}
	}
	if got := cases["c.failed"].Properties.WithName("gating"); got != "gating: the spec failed on it" || cases["c.failed"].Failure == nil {
		t.Errorf("the failed spec: gating %q, failure %v", got, cases["c.failed"].Failure)
	}
	if got := cases["c.broken"].Properties; got != nil && got.WithName("verdict") != "" {
		t.Errorf("a spec without a verdict shows one: %v", got)
	}
}

// Negative control: Ginkgo's own report of the same suite (the verdict as
// escaped JSON, no verdict line) fails the check.
func TestCheckRefusesGinkgosOwnReport(t *testing.T) {
	if len(suiteReport.SpecReports) == 0 {
		t.Skip("needs TestWriteShowsEachVerdict's suite")
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := reporters.GenerateJUnitReport(suiteReport, path); err != nil {
		t.Fatal(err)
	}
	_, err := junit.Check(path)
	if err == nil {
		t.Fatal("Check passed Ginkgo's own report")
	}
	for _, w := range []string{"is JSON", "system-out does not start with its verdict line", `no "verdicts" property`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Check's error does not say %q:\n%v", w, err)
		}
	}
	// And a report of ours with one verdict line removed fails too.
	ours := filepath.Join(t.TempDir(), "ours.xml")
	if err := junit.Write(suiteReport, ours); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ours)
	cut := strings.Replace(string(b), "<system-out>verdict: c.reported", "<system-out>c.reported", 1)
	if cut == string(b) {
		t.Fatal("the control found no verdict line to remove")
	}
	if err := os.WriteFile(ours, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := junit.Check(ours); err == nil || !strings.Contains(err.Error(), "c.reported") {
		t.Errorf("Check with c.reported's verdict line removed: %v", err)
	}
}
