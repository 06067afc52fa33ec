package report_test

import (
	"testing"

	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func TestSummaryTextIsReadable(t *testing.T) {
	for want, m := range map[string]map[verdict.Result]int{
		"3 reproduced, 1 not reproduced, 2 inconclusive": {verdict.Inconclusive: 2, verdict.Reproduced: 3, verdict.NotReproduced: 1, verdict.Recorded: 0},
		"1 recorded": {verdict.Recorded: 1},
		"no entries": {},
	} {
		if got := report.SummaryText(m); got != want {
			t.Errorf("SummaryText(%v) = %q, want %q", m, got, want)
		}
	}
}
