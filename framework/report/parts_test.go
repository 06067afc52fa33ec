package report

import (
	"strings"
	"testing"
	"time"
)

// A run made in one part says nothing of parts; a resumed one names each
// part's start, and for a part that never ended cleanly, its last record.
func TestResumedNamesEachPart(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 21, 48, 0, 0, time.UTC)
	env := Environment{Started: t0.Add(3 * time.Hour), Finished: t0.Add(4 * time.Hour), Cluster: "https://127.0.0.1:6443"}
	if got := Resumed(env); got != "" {
		t.Fatalf("a run in one part: %q, want none", got)
	}
	env.Parts = []RunPart{{Started: t0, LastRecord: t0.Add(2 * time.Hour), Cluster: "https://127.0.0.1:6443", Measured: 7}}
	got := Resumed(env)
	for _, want := range []string{
		"the run was made in 2 parts (-resume)",
		"part 1: started 2026-11-29 21:48:00Z, killed (no clean end; its last record at 2026-11-29 23:48:00Z)",
		"7 specs measured",
		"part 2 (the last): started 2026-11-30 00:48:00Z, ended 2026-11-30 01:48:00Z",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q\ndoes not say %q", got, want)
		}
	}
}
