package verdict

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// A compound claim's verdict is its parts' verdicts folded: each part
// judged on its own, the claim's verdict the worst part's and named by it;
// a documented count no run of its size can tell from zero is labelled
// so, judged as an upper bound, and can fail the claim but not hold it
// undecided.
func TestParts(t *testing.T) {
	reg := claimstest.Registry(t)
	type part struct {
		name          string
		result        Result
		unconfirmable bool
	}
	cases := []struct {
		name    string
		claim   string
		mode    mode.Mode
		got     Measurement
		want    Result
		decided string
		parts   []part
	}{
		{"scale 1 sidecar rollout: the 503 part decides, the -1 part cannot confirm GUIDE's 2", "rollout.baseline", mode.Sidecar,
			Measurement{Count: Int64(396), Total: Int64(60000), NoResponse: Int64(0)}, Reproduced, "503 rate",
			[]part{{"503 rate", Reproduced, false}, {"no-response (-1) rate", Reproduced, true}}},
		{"the unconfirmable part still fails a claim whose -1s lie above its bound", "rollout.baseline", mode.Sidecar,
			Measurement{Count: Int64(396), Total: Int64(60000), NoResponse: Int64(300)}, NotReproduced, "no-response (-1) rate",
			[]part{{"503 rate", Reproduced, false}, {"no-response (-1) rate", NotReproduced, true}}},
		{"too few requests for the unconfirmable part's bound: it does not hold the 503 part's verdict", "rollout.baseline", mode.Sidecar,
			Measurement{Count: Int64(21), Total: Int64(3000), NoResponse: Int64(0)}, Reproduced, "503 rate",
			[]part{{"503 rate", Reproduced, false}, {"no-response (-1) rate", Inconclusive, true}}},
		{"an undecided 503 part leaves the claim undecided, and says so", "rollout.baseline", mode.Sidecar,
			Measurement{Count: Int64(3), Total: Int64(3000), NoResponse: Int64(0)}, Inconclusive, "503 rate",
			[]part{{"503 rate", Inconclusive, false}, {"no-response (-1) rate", Inconclusive, true}}},
		{"a 503 rate out of band fails whatever the -1s", "rollout.baseline", mode.Sidecar,
			Measurement{Count: Int64(0), Total: Int64(60000), NoResponse: Int64(0)}, NotReproduced, "503 rate",
			[]part{{"503 rate", NotReproduced, false}, {"no-response (-1) rate", Reproduced, true}}},
		{"ambient-l4's 195 -1s are confirmable: missing them fails, decided by the -1 part", "rollout.baseline", mode.AmbientL4,
			Measurement{Count: Int64(0), Total: Int64(60000), NoResponse: Int64(0)}, NotReproduced, "no-response (-1) rate",
			[]part{{"503 rate", Reproduced, false}, {"no-response (-1) rate", NotReproduced, false}}},
		{"the hardened waypoint: rate and reduction are parts", "rollout.hardened", mode.AmbientL7,
			Measurement{Count: Int64(648), Total: Int64(60000), NoResponse: Int64(0), Reference: &Measurement{Count: Int64(1528), Total: Int64(59913)}}, Reproduced, "503 rate",
			[]part{{"503 rate", Reproduced, false}, {"no-response (-1) rate", Reproduced, false}, {"ratio to rollout.baseline", Reproduced, false}}},
		{"a footprint whose CPU is out is decided by CPU", "resources.proxy-footprint", mode.Sidecar,
			Measurement{Value: Float64(48), VCPU: Float64(0.06), AchievedQPS: Float64(998)}, NotReproduced, "CPU",
			[]part{{"working set", Reproduced, false}, {"CPU", NotReproduced, false}, {"load", Reproduced, false}}},
		{"a short load decides a footprint whatever its numbers", "resources.proxy-footprint", mode.AmbientL4,
			Measurement{Value: Float64(60), VCPU: Float64(0.036), AchievedQPS: Float64(600)}, Inconclusive, "load",
			[]part{{"working set", NotReproduced, false}, {"CPU", Reproduced, false}, {"load", Inconclusive, false}}},
		{"percentiles: the first out of band decides", "latency.percentiles", mode.AmbientL4,
			Measurement{Percentiles: map[string]float64{"50": 0.9, "75": 1.2, "90": 1.9, "99": 2.5, "99.9": 9},
				Reference: &Measurement{Percentiles: map[string]float64{"50": 0.85, "75": 1.1, "90": 1.8, "99": 2.3, "99.9": 2.6}}}, NotReproduced, "P99.9",
			[]part{{"P50", Reproduced, false}, {"P75", Reproduced, false}, {"P90", Reproduced, false}, {"P99", Reproduced, false}, {"P99.9", NotReproduced, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(reg.MustGet(c.claim), c.mode, c.got)
			if v.Result != c.want || v.DecidedBy != c.decided {
				t.Errorf("got %s decided by %q, want %s decided by %q: %s", v.Result, v.DecidedBy, c.want, c.decided, v.Reason)
			}
			if len(v.Parts) != len(c.parts) {
				t.Fatalf("parts %+v, want %d", v.Parts, len(c.parts))
			}
			for i, p := range c.parts {
				g := v.Parts[i]
				if g.Name != p.name || g.Result != p.result || g.Unconfirmable != p.unconfirmable {
					t.Errorf("part %d: got %q %s unconfirmable=%v, want %q %s unconfirmable=%v (%s)", i, g.Name, g.Result, g.Unconfirmable, p.name, p.result, p.unconfirmable, g.Reason)
				}
				if g.Unconfirmable && !strings.Contains(g.Reason, "too small for a run of") {
					t.Errorf("an unconfirmable part must say so: %s", g.Reason)
				}
			}
		})
	}
	// One quantity is no compound: no parts, nothing named.
	v := Judge(reg.MustGet("latency.all-ok"), mode.Sidecar, Measurement{Count: Int64(0), Total: Int64(12000)})
	if len(v.Parts) != 0 || v.DecidedBy != "" {
		t.Errorf("latency.all-ok: parts %+v decided by %q", v.Parts, v.DecidedBy)
	}
}

// Of every documented count in the registry, only GUIDE's 2 -1s in
// 60,000 (sidecar, T1) are too small for a run of the documented size to
// confirm: judging each mode's documented numbers as if measured finds
// that one part and no other.
func TestUnconfirmableInRegistry(t *testing.T) {
	reg := claimstest.Registry(t)
	var found []string
	for _, c := range reg.Claims {
		for m, doc := range c.Documented {
			if doc.Count == nil || doc.Total == nil {
				continue
			}
			got := Measurement{Count: doc.Count, Total: doc.Total, NoResponse: doc.Unanswered}
			for _, p := range Judge(c, m, got).Parts {
				if p.Unconfirmable {
					found = append(found, c.ID+" ["+string(m)+"] "+p.Name)
				}
			}
		}
	}
	if len(found) != 1 || found[0] != "rollout.baseline [sidecar] no-response (-1) rate" {
		t.Errorf("unconfirmable documented counts: %q", found)
	}
}

// Bands say what the judge does: the sidecar's -1 part is an upper bound
// (the claim's max_rate), ambient-l7's 84 -1s keep their factor-2 band.
func TestBandsOfUnconfirmablePart(t *testing.T) {
	reg := claimstest.Registry(t)
	c := reg.MustGet("rollout.baseline")
	find := func(m mode.Mode) Band {
		for _, b := range Bands(c, m) {
			if b.Name == "no-response (-1) rate" {
				return b
			}
		}
		t.Fatalf("%s: no -1 band in %+v", m, Bands(c, m))
		return Band{}
	}
	if b := find(mode.Sidecar); b.Low != 0 || b.High != 0.001 {
		t.Errorf("sidecar -1 band %+v, want [0, 0.001]", b)
	}
	if b := find(mode.AmbientL7); b.Low <= 0 || b.High >= 0.003 {
		t.Errorf("ambient-l7 -1 band %+v, want GUIDE's 84/59913 within a factor of 2", b)
	}
}
