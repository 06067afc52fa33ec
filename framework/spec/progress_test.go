package spec_test

import (
	"encoding/json"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func itReport(labels ...string) types.SpecReport {
	return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "rollout.baseline [sidecar] no 503 during a rollout", LeafNodeLabels: labels, State: types.SpecStatePassed}
}

func TestKeyOfReadsTheLabels(t *testing.T) {
	key, title, ok := spec.KeyOf(itReport("claim:rollout.baseline", "mode:sidecar", "area:rollout"))
	if !ok || key != "rollout.baseline [sidecar]" || title != "no 503 during a rollout" {
		t.Errorf("KeyOf = %q, %q, %v", key, title, ok)
	}
	// Negative control: a node without the suite's labels has no key.
	if _, _, ok := spec.KeyOf(itReport("area:rollout")); ok {
		t.Error("a report without claim and mode labels has a key")
	}
}

// The verdict is found in a report read back from a file, as its JSON
// (within the run, as the value itself: framework/junit's test).
func TestEndedOfCarriesTheVerdict(t *testing.T) {
	v := verdict.Verdict{Claim: "rollout.baseline", Mode: mode.Sidecar, Result: verdict.NotReproduced, Documented: "0", MeasuredText: "4 of 6000"}
	b, _ := json.Marshal(v)
	read := types.ReportEntry{Name: spec.EntryVerdict}
	if err := json.Unmarshal([]byte(`{"AsJSON":`+string(mustJSON(string(b)))+`,"Representation":""}`), &read.Value); err != nil {
		t.Fatal(err)
	}
	r := itReport("claim:rollout.baseline", "mode:sidecar")
	r.ReportEntries = types.ReportEntries{read, {Name: spec.EntryNotGating, Value: types.WrapEntryValue("not gating: -fail-on=error reports not reproduced, does not fail it")}}
	e := spec.EndedOf(r)
	if e.Key != "rollout.baseline [sidecar]" || e.Verdict != "not reproduced" || e.Measured != "4 of 6000" || e.Documented != "0" || e.Note == "" || e.Failure != "" {
		t.Errorf("EndedOf = %+v", e)
	}
	// A failed spec without a verdict ends with its failure.
	r = itReport("claim:rollout.baseline", "mode:sidecar")
	r.State, r.Failure = types.SpecStateFailed, types.Failure{Message: "the measurement itself failed"}
	if e := spec.EndedOf(r); e.Verdict != "" || e.Failure != "the measurement itself failed" {
		t.Errorf("failed spec: EndedOf = %+v", e)
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
