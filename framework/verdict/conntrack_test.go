package verdict

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
)

func failed(limit, count int64) Measurement {
	return Measurement{ConntrackMax: limit, Count: Int64(count), Total: Int64(4000)}
}

// conntrack.table-full judges one VM run per limit, each against its own
// limit's figure; the verdict is the worst.
func TestJudgeConntrackPerLimit(t *testing.T) {
	c := claimstest.Registry(t).MustGet("conntrack.table-full")
	for _, tc := range []struct {
		name string
		got  Measurement
		want Result
		says string
	}{
		// The VM's own reading: a near-empty table, so about limit connects succeed.
		{"the VM's run", Measurement{Each: []Measurement{failed(262144, 0), failed(2048, 1952), failed(1024, 2976)}}, Reproduced, "nf_conntrack_max 2048: reproduced"},
		// A kernel that tracks nothing: nothing fails at 1,024.
		{"conntrack not tracking", Measurement{Each: []Measurement{failed(262144, 0), failed(2048, 1952), failed(1024, 0)}}, NotReproduced, "nf_conntrack_max 1024: not reproduced"},
		// Failures at the default: the client, not the table.
		{"failures at the default", Measurement{Each: []Measurement{failed(262144, 400), failed(2048, 1952), failed(1024, 2976)}}, NotReproduced, "nf_conntrack_max 262144: not reproduced"},
		{"a limit not measured", Measurement{Each: []Measurement{failed(262144, 0), failed(1024, 2976)}}, Inconclusive, "nf_conntrack_max 2048: nothing measured"},
		{"one run naming no limit", failed(0, 2976), Inconclusive, "depends on nf_conntrack_max and the measurement names none"},
		{"one run at an undocumented limit", failed(4096, 10), Inconclusive, "nothing documented for nf_conntrack_max 4096 (documented: 262144, 2048, 1024)"},
		{"one run at 1,024", failed(1024, 2976), Reproduced, "within ±0.06"},
	} {
		v := Judge(c, mode.None, tc.got)
		if v.Result != tc.want || !strings.Contains(v.Reason, tc.says) {
			t.Errorf("%s: %s: %s; want %s saying %q", tc.name, v.Result, v.Reason, tc.want, tc.says)
		}
	}
}
