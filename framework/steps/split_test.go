package steps

import (
	"testing"

	"github.com/meshclaims/meshclaims/framework/load"

	"github.com/meshclaims/meshclaims/fixtures"
)

// The split detector: a 90/10 route honoured gives ~10% v2; per-connection
// L4 balancing over one pod each gives ~50% and must be called not honoured.
func TestJudgeSplit(t *testing.T) {
	cases := []struct {
		v1, v2 int64
		want   string
	}{
		{180, 20, "honoured"},      // 10% of 200
		{100, 100, "not-honoured"}, // the replica share: the route was ignored
		{200, 0, "not-honoured"},   // 0% is not 10% (interval excludes it at n=200)
		{2, 1, "not-honoured"},     // 3 answers cannot exclude 50%
	}
	for _, c := range cases {
		got, err := JudgeSplit(c.v1, c.v2, fixtures.DefaultSplit)
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != c.want {
			t.Errorf("v1=%d v2=%d: %s (%s), want %s", c.v1, c.v2, got.Outcome, got.Detail, c.want)
		}
	}
	if _, err := JudgeSplit(0, 0, fixtures.DefaultSplit); err == nil {
		t.Fatal("no answers judged")
	}
}

func TestHardeningName(t *testing.T) {
	for want, h := range map[string]fixtures.Hardening{
		"baseline":      {},
		"prestop-grace": {PreStopSleep: true, GracePeriod: true},
		"drain":         {SidecarDrain: true},
	} {
		if got := hardeningName(h); got != want {
			t.Errorf("%+v: %s, want %s", h, got, want)
		}
	}
}

// Every hardening's name is a valid load run name (the first local CI run
// failed on "prestop+grace").
func TestHardeningNamesAreRunNames(t *testing.T) {
	for _, h := range []fixtures.Hardening{{}, {PreStopSleep: true, GracePeriod: true, SidecarDrain: true}, {GracePeriod: true}} {
		if err := load.ValidateName("rollout-none-" + hardeningName(h)); err != nil {
			t.Errorf("%+v: %v", h, err)
		}
	}
}
