package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meshclaims/meshclaims/framework/verdict"
)

// SummaryText is a run's verdict counts for a person: "3 reproduced, 1 not
// reproduced, 2 inconclusive", the verdicts in their usual order, those
// with no entry left out; "no entries" when there are none.
func SummaryText(summary map[verdict.Result]int) string {
	var parts []string
	for _, r := range verdict.Results {
		if n := summary[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	for _, r := range slices.Sorted(maps.Keys(summary)) {
		if n := summary[r]; n > 0 && !slices.Contains(verdict.Results, r) {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	if len(parts) == 0 {
		return "no entries"
	}
	return strings.Join(parts, ", ")
}
