package verdict

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// The cause of -1 judged against GUIDE's words: its own cause dominant
// reproduces, another cause dominant (the negative control) does not, and
// a run without any -1, or one whose -1s the log does not explain, says
// nothing either way.
func TestJudgeAttribution(t *testing.T) {
	c := claimstest.Registry(t).MustGet("rollout.no-response-cause")
	for _, tc := range []struct {
		name string
		m    mode.Mode
		got  map[string]int64
		want Result
		says string
	}{
		{"resets in ambient-l4", mode.AmbientL4, map[string]int64{"reset": 40, "eof": 3}, Reproduced, "dominant cause reset"},
		{"EOFs in sidecar (GUIDE: reset/EOF)", mode.Sidecar, map[string]int64{"eof": 12}, Reproduced, "dominant cause eof"},
		{"EOFs in ambient-l4 (GUIDE: resets)", mode.AmbientL4, map[string]int64{"eof": 40, "reset": 2}, NotReproduced, "dominant cause eof"},
		{"timeouts in sidecar", mode.Sidecar, map[string]int64{"timeout": 30, "reset": 1}, NotReproduced, "dominant cause timeout"},
		{"refused in ambient-l7", mode.AmbientL7, map[string]int64{"refused": 25}, NotReproduced, "dominant cause refused"},
		// A tie: GUIDE's cause has half (the band's "at least half").
		{"a tie", mode.Sidecar, map[string]int64{"timeout": 1, "reset": 1}, Reproduced, "dominant cause reset=timeout"},
		{"one timeout", mode.Sidecar, map[string]int64{"timeout": 1}, Inconclusive, "dominant cause timeout"},
		{"no -1 at all", mode.Sidecar, map[string]int64{}, Inconclusive, "no event to attribute"},
		{"no -1 at all (nil)", mode.AmbientL4, nil, Inconclusive, "no event to attribute"},
		{"log lost", mode.AmbientL4, map[string]int64{claims.Unattributed: 20, "timeout": 3}, Inconclusive, "only 3 of 23 events are explained"},
		{"timeouts dominate", mode.AmbientL4, map[string]int64{"timeout": 12, "reset": 2}, NotReproduced, "of 14 explained"},
		// The same with 10 -1s unexplained: they might all be resets.
		{"unexplained never disprove", mode.AmbientL4, map[string]int64{claims.Unattributed: 10, "timeout": 12, "reset": 2}, Inconclusive, "of 14 explained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(c, tc.m, Measurement{Attribution: tc.got})
			if v.Result != tc.want || !strings.Contains(v.Reason, tc.says) {
				t.Fatalf("%s: %s; want %s saying %q", v.Result, v.Reason, tc.want, tc.says)
			}
		})
	}
	// No mode documents none's -1s: recorded, whatever they were.
	if v := Judge(c, mode.None, Measurement{Attribution: map[string]int64{"timeout": 9}}); v.Result != Recorded {
		t.Fatalf("none: %s: %s", v.Result, v.Reason)
	}
}

func TestDominant(t *testing.T) {
	for want, counts := range map[string]map[string]int64{
		"reset":     {"reset": 3, "eof": 1, claims.Unattributed: 9},
		"eof=reset": {"reset": 2, "eof": 2},
		"":          {claims.Unattributed: 4},
	} {
		if got := Dominant(counts); got != want {
			t.Errorf("Dominant(%v) = %q, want %q", counts, got, want)
		}
	}
}
