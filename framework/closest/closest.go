// Package closest suggests, for a name nobody knows, the known names it was
// most likely meant to be (edit distance), so an error can say "did you mean".
package closest

import (
	"sort"
	"strings"
)

// Names returns up to n of among closest to want, nearest first (ties in
// among's order). A name further than half of want's length (at least 3
// edits) is no suggestion; a known name containing want, or contained in it,
// always is (a prefix such as "rollout" for "rollout.baseline").
func Names(want string, among []string, n int) []string {
	type scored struct {
		name string
		d    int
		i    int
	}
	limit := max(3, len(want)/2)
	var hits []scored
	for i, a := range among {
		d := Distance(strings.ToLower(want), strings.ToLower(a))
		if want != "" && (strings.Contains(a, want) || strings.Contains(want, a)) {
			d = min(d, limit)
		}
		if d <= limit {
			hits = append(hits, scored{a, d, i})
		}
	}
	sort.SliceStable(hits, func(x, y int) bool {
		if hits[x].d != hits[y].d {
			return hits[x].d < hits[y].d
		}
		return hits[x].i < hits[y].i
	})
	var out []string
	for _, h := range hits {
		if len(out) == n {
			break
		}
		out = append(out, h.name)
	}
	return out
}

// Distance is the Levenshtein distance between a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
