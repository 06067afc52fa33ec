// Package junit writes the run's JUnit report so that a CI dashboard shows
// each spec's verdict. Ginkgo's own report lists a "not reproduced" that
// -fail-on lets pass as a plain pass, with the verdict only as escaped JSON
// in a property; here each judged test case starts its system-out with its
// verdict line and carries one plain property per field (claim, mode,
// verdict, measured, documented, reason, gating), and the suite a property
// counting the verdicts.
package junit

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/progress"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Properties of a judged test case, one per field of its verdict.
const (
	PropClaim      = "claim"
	PropMode       = "mode"
	PropVerdict    = "verdict"
	PropMeasured   = "measured"
	PropDocumented = "documented"
	PropReason     = "reason"
	PropGating     = "gating"
	// PropVerdicts is the suite's count of verdicts.
	PropVerdicts = "verdicts"
)

// VerdictPrefix starts the system-out of every judged test case.
const VerdictPrefix = "verdict: "

// Write writes r as JUnit XML to dst: Ginkgo's report (GenerateJUnitReport)
// with each judged spec's verdict made readable.
func Write(r types.Report, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".junit-*.xml")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := reporters.GenerateJUnitReport(r, tmp.Name()); err != nil {
		return err
	}
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		return err
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		return fmt.Errorf("reading Ginkgo's JUnit report: %w", err)
	}
	if len(suites.TestSuites) != 1 || len(suites.TestSuites[0].TestCases) != len(r.SpecReports) {
		return fmt.Errorf("Ginkgo's JUnit report has %d suites, not one with a test case per spec report (%d)", len(suites.TestSuites), len(r.SpecReports))
	}
	suite := &suites.TestSuites[0]
	counts := map[string]int{}
	for i, sr := range r.SpecReports {
		tc := &suite.TestCases[i]
		v := spec.VerdictOf(sr)
		tc.Properties = properties(sr, v)
		if v == nil {
			continue
		}
		counts[string(v.Result)]++
		line := VerdictPrefix + spec.VerdictLine(*v, spec.NoteOf(sr))
		tc.SystemOut = strings.TrimRight(line+"\n"+tc.SystemOut, "\n")
	}
	var parts []string
	for _, k := range progress.Order(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	suite.Properties.Properties = append(suite.Properties.Properties, reporters.JUnitProperty{Name: PropVerdicts, Value: strings.Join(parts, ", ")})
	var out bytes.Buffer
	out.WriteString(xml.Header)
	enc := xml.NewEncoder(&out)
	enc.Indent("  ", "    ")
	if err := enc.Encode(suites); err != nil {
		return err
	}
	out.WriteString("\n")
	return os.WriteFile(dst, out.Bytes(), 0o644)
}

// properties are a test case's: the verdict's fields when it has one,
// then its other report entries (scenario, declared, evidence), each as
// plain text rather than JSON.
func properties(sr types.SpecReport, v *verdict.Verdict) *reporters.JUnitProperties {
	var ps []reporters.JUnitProperty
	if v != nil {
		gating := "the verdict passes"
		if note := spec.NoteOf(sr); note != "" {
			gating = note
		} else if !v.Passed() {
			gating = "gating: the spec failed on it"
		}
		ps = append(ps,
			reporters.JUnitProperty{Name: PropClaim, Value: v.Claim},
			reporters.JUnitProperty{Name: PropMode, Value: string(v.Mode)},
			reporters.JUnitProperty{Name: PropVerdict, Value: string(v.Result)},
			reporters.JUnitProperty{Name: PropMeasured, Value: v.MeasuredText},
			reporters.JUnitProperty{Name: PropDocumented, Value: v.Documented},
			reporters.JUnitProperty{Name: PropReason, Value: v.Reason},
			reporters.JUnitProperty{Name: PropGating, Value: gating},
		)
	}
	for _, e := range sr.ReportEntries {
		switch e.Name {
		case spec.EntryVerdict, spec.EntryNotGating:
			continue
		case PropClaim, PropMode:
			if v != nil {
				continue
			}
		}
		ps = append(ps, reporters.JUnitProperty{Name: e.Name, Value: plain(e)})
	}
	if len(ps) == 0 {
		return nil
	}
	return &reporters.JUnitProperties{Properties: ps}
}

// plain is an entry's value as text: a string as itself, anything else as
// its JSON.
func plain(e types.ReportEntry) string {
	if s, ok := e.GetRawValue().(string); ok {
		return s
	}
	if e.GetRawValue() == nil && e.Value.AsJSON != "" {
		var s string
		if json.Unmarshal([]byte(e.Value.AsJSON), &s) == nil {
			return s
		}
		return e.Value.AsJSON
	}
	return e.StringRepresentation()
}

// Check reads the JUnit report at path as a CI dashboard would and
// returns what keeps a spec's verdict from showing: a spec test case
// ("[It]") without a verdict property or whose system-out does not start
// with its verdict line, a property value that is JSON, or a suite
// without its verdict counts. It returns how many test cases carry a
// verdict.
func Check(path string) (judged int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for _, s := range suites.TestSuites {
		if s.Properties.WithName(PropVerdicts) == "" && hasIt(s) {
			errs = append(errs, fmt.Errorf("suite %q: no %q property", s.Name, PropVerdicts))
		}
		for _, tc := range s.TestCases {
			if !strings.HasPrefix(tc.Name, "[It]") || tc.Skipped != nil {
				continue
			}
			var props reporters.JUnitProperties
			if tc.Properties != nil {
				props = *tc.Properties
			}
			for _, p := range props.Properties {
				if v := strings.TrimSpace(p.Value); strings.HasPrefix(v, "{") || strings.HasPrefix(v, `"`) {
					errs = append(errs, fmt.Errorf("%s: property %q is JSON, not text: %.80s", tc.Name, p.Name, v))
				}
			}
			result := props.WithName(PropVerdict)
			if result == "" {
				// A spec that failed before judging has no verdict; its
				// failure says why.
				if tc.Failure == nil && tc.Error == nil {
					errs = append(errs, fmt.Errorf("%s: passed with no %q property", tc.Name, PropVerdict))
				}
				continue
			}
			judged++
			first, _, _ := strings.Cut(tc.SystemOut, "\n")
			if !strings.HasPrefix(first, VerdictPrefix) || !strings.Contains(first, " "+result+": ") {
				errs = append(errs, fmt.Errorf("%s: system-out does not start with its verdict line (%s%s ...): %.120q", tc.Name, VerdictPrefix, result, first))
			}
			for _, name := range []string{PropClaim, PropMode, PropMeasured, PropDocumented, PropGating} {
				if props.WithName(name) == "" {
					errs = append(errs, fmt.Errorf("%s: no %q property", tc.Name, name))
				}
			}
		}
	}
	return judged, errors.Join(errs...)
}

func hasIt(s reporters.JUnitTestSuite) bool {
	for _, tc := range s.TestCases {
		if strings.HasPrefix(tc.Name, "[It]") && tc.Skipped == nil {
			return true
		}
	}
	return false
}
