package resume

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Judged is a spec an earlier part measured, judged again from its record
// as the report judges it, and gated as the spec itself gates (spec.Gate).
type Judged struct {
	Earlier
	Planned spec.Planned
	Verdict verdict.Verdict
	// Gate is why the spec fails under -fail-on; nil when it passes.
	Gate error
}

// Judge judges every spec of done from its earlier record.
func Judge(done []spec.Planned, measured map[string]Earlier, failOn string) map[string]Judged {
	out := map[string]Judged{}
	for _, p := range done {
		key := loadplan.Key(p.Claim.ID, p.Mode)
		e, ok := measured[key]
		if !ok {
			continue
		}
		got := e.Record.Measurement
		v := verdict.Judge(p.Claim, p.Mode, got)
		out[key] = Judged{Earlier: e, Planned: p, Verdict: v, Gate: spec.Gate(p.Claim.Kind, v, got, bySelection(p, got.Unmet), failOn)}
	}
	return out
}

// bySelection says whether unmet names a need of p's that only the
// selection or the test layer leaves unmet (spec.Need.Selection, Layer).
func bySelection(p spec.Planned, unmet string) bool {
	for _, n := range p.Def.Needs {
		if unmet != "" && strings.HasPrefix(unmet, n.Name+":") {
			return n.Selection || n.Layer
		}
	}
	return false
}

// MeasuredIn says where and when an earlier part measured a spec.
func (j Judged) MeasuredIn() string {
	return fmt.Sprintf("measured in part %d of this run (record %s written %s)", j.Part+1, j.File, j.At.UTC().Format("2006-01-02 15:04:05Z"))
}

// Failures lists the earlier specs whose recorded verdicts fail under the
// run's -fail-on, one line each, so a resumed run fails as the whole run
// would have.
func Failures(judged map[string]Judged) []string {
	var out []string
	for _, key := range sortedKeys(judged) {
		if j := judged[key]; j.Gate != nil {
			first, _, _ := strings.Cut(j.Gate.Error(), "\n")
			out = append(out, fmt.Sprintf("%s (%s)", first, j.MeasuredIn()))
		}
	}
	return out
}

// WithEarlier returns r with each spec an earlier part measured made into
// what that part reported: passed or failed by its recorded verdict under
// -fail-on, with the verdict entry the JUnit report reads (junit.Write) and
// a line saying where and when it was measured. Such a spec is in r as
// skipped (spec.LabelMeasured) when the specs ran, and is added when they
// did not (a failed set-up reports none). The other specs are r's own; r
// itself is not changed.
func WithEarlier(r types.Report, judged map[string]Judged, failOn string) types.Report {
	out := r
	out.SpecReports = make(types.SpecReports, len(r.SpecReports))
	copy(out.SpecReports, r.SpecReports)
	found := map[string]bool{}
	for i, sr := range out.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt || !sr.State.Is(types.SpecStateSkipped) {
			continue
		}
		key, _, ok := spec.KeyOf(sr)
		if j, known := judged[key]; ok && known {
			out.SpecReports[i] = earlierReport(sr, j, failOn)
			found[key] = true
		}
	}
	for _, key := range sortedKeys(judged) {
		if found[key] {
			continue
		}
		j := judged[key]
		sr := types.SpecReport{
			ContainerHierarchyTexts:  []string{j.Planned.Def.Area},
			ContainerHierarchyLabels: [][]string{{"area:" + j.Planned.Def.Area}},
			LeafNodeType:             types.NodeTypeIt,
			LeafNodeText:             j.Planned.Name(),
			LeafNodeLabels:           append(j.Planned.Labels(), spec.LabelMeasured),
			StartTime:                j.At,
			EndTime:                  j.At,
		}
		out.SpecReports = append(out.SpecReports, earlierReport(sr, j, failOn))
	}
	return out
}

func earlierReport(sr types.SpecReport, j Judged, failOn string) types.SpecReport {
	sr.ReportEntries = append(append(types.ReportEntries(nil), sr.ReportEntries...),
		entry(j, "claim", j.Planned.Claim.ID),
		entry(j, "mode", string(j.Planned.Mode)),
		entry(j, "scenario", j.Planned.Def.Scenario),
		entry(j, "declared", j.Planned.Def.Declared),
		entry(j, "measured in", j.MeasuredIn()),
		entry(j, spec.EntryVerdict, j.Verdict))
	if !j.Verdict.Passed() && j.Gate == nil {
		sr.ReportEntries = append(sr.ReportEntries, entry(j, spec.EntryNotGating, fmt.Sprintf("not gating: -fail-on=%s reports %s, does not fail it", failOn, j.Verdict.Result)))
	}
	sr.CapturedStdOutErr = j.MeasuredIn() + "; this part of the run did not run it again\n"
	sr.RunTime = j.Record.Took
	sr.Failure = types.Failure{}
	sr.State = types.SpecStatePassed
	if j.Gate != nil {
		sr.State = types.SpecStateFailed
		sr.Failure = types.Failure{Message: j.Gate.Error() + "\n(" + j.MeasuredIn() + ")", Location: sr.LeafNodeLocation, FailureNodeType: types.NodeTypeIt, FailureNodeLocation: sr.LeafNodeLocation}
	}
	return sr
}

func entry(j Judged, name string, v any) types.ReportEntry {
	return types.ReportEntry{Name: name, Time: j.At, Value: types.WrapEntryValue(v), Visibility: types.ReportEntryVisibilityNever}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
