package decision

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// rec is one measured claim of a test run.
type rec struct {
	claim string
	mode  mode.Mode
	got   verdict.Measurement
}

// summarize judges recs with the repository's registry, as a results
// directory is judged, and summarizes them.
func summarize(t *testing.T, reg *claims.Registry, modes []mode.Mode, notMeasured map[string]string, recs ...rec) *Summary {
	t.Helper()
	in := Input{Modes: modes, NotMeasured: notMeasured}
	for _, r := range recs {
		v := verdict.Judge(reg.MustGet(r.claim), r.mode, r.got)
		in.Entries = append(in.Entries, Judged{Verdict: v, Measurement: r.got})
	}
	s, ok := Summarize(in, reg)
	if !ok {
		t.Fatalf("no summary for modes %v", modes)
	}
	return s
}

func outcome(claim string, m mode.Mode, o string) rec {
	return rec{claim, m, verdict.Measurement{Outcome: o}}
}

func rollout(claim string, m mode.Mode, n503, n1, total int64) rec {
	return rec{claim, m, verdict.Measurement{Count: verdict.Int64(n503), NoResponse: verdict.Int64(n1), Total: verdict.Int64(total)}}
}

func overhead(m mode.Mode, v, lo, hi float64) rec {
	return rec{"latency.p50-overhead", m, verdict.Measurement{Value: verdict.Float64(v), Extra: map[string]float64{ExtraCILow: lo, ExtraCIHigh: hi}}}
}

func TestRules(t *testing.T) {
	reg := claimstest.Registry(t)
	all := []mode.Mode{mode.None, mode.Sidecar, mode.AmbientL4, mode.AmbientL7}
	mtlsAll := func(m mode.Mode) []rec {
		return []rec{outcome("mtls.plaintext-blocked", m, "no-http-response"), outcome("mtls.in-mesh-ok", m, "http-200"), outcome("mtls.spiffe-identity", m, "verified")}
	}
	cases := []struct {
		name     string
		req      Requirement
		mode     mode.Mode
		recs     []rec
		missing  map[string]string
		want     Mark
		contains string
	}{
		// mTLS: all three reproduced, or one not, or one undecided.
		{"mTLS: the three checks of GUIDE §1", MTLS, mode.AmbientL4, mtlsAll(mode.AmbientL4), nil, Pass, "STRICT verified"},
		{"mTLS: plaintext answered", MTLS, mode.Sidecar,
			append(mtlsAll(mode.Sidecar)[1:], outcome("mtls.plaintext-blocked", mode.Sidecar, "http-200")), nil, Fail, "mtls.plaintext-blocked: http-200"},
		{"mTLS: a check not measured says why", MTLS, mode.Sidecar, mtlsAll(mode.Sidecar)[1:],
			map[string]string{"mtls.plaintext-blocked|sidecar": "mode not selected (-mode)"}, Undecided, "mtls.plaintext-blocked not measured: mode not selected"},
		{"mTLS: an inconclusive check", MTLS, mode.Sidecar,
			append(mtlsAll(mode.Sidecar)[1:], rec{"mtls.plaintext-blocked", mode.Sidecar, verdict.Measurement{Detail: "probe timed out"}}), nil, Undecided, "inconclusive"},
		// NetworkPolicy: as-is, HBONE needed, blocked, undecided.
		{"NetworkPolicy: 8080-only answers", NetworkPolicy, mode.Sidecar, []rec{outcome("netpol.app-port-only", mode.Sidecar, "http-200")}, nil, Pass, "existing rules work as-is"},
		{"NetworkPolicy: 8080-only blocks, 15008 answers", NetworkPolicy, mode.AmbientL4,
			[]rec{outcome("netpol.app-port-only", mode.AmbientL4, "blocked"), outcome("netpol.hbone-allowed", mode.AmbientL4, "http-200"), outcome("netpol.hbone-opens-unlisted-ports", mode.AmbientL4, "blocked")}, nil, Caveat, "must allow 15008"},
		{"NetworkPolicy: 15008 then opens unlisted ports, said beside", NetworkPolicy, mode.AmbientL7,
			[]rec{outcome("netpol.app-port-only", mode.AmbientL7, "blocked"), outcome("netpol.hbone-allowed", mode.AmbientL7, "http-200"), outcome("netpol.hbone-opens-unlisted-ports", mode.AmbientL7, "http-200")}, nil, Caveat, "istio/istio#56659"},
		{"NetworkPolicy: blocked even with 15008", NetworkPolicy, mode.AmbientL4,
			[]rec{outcome("netpol.app-port-only", mode.AmbientL4, "blocked"), outcome("netpol.hbone-allowed", mode.AmbientL4, "blocked")}, nil, Fail, "with 15008 allowed: blocked"},
		{"NetworkPolicy: a sidecar blocked by an 8080-only policy", NetworkPolicy, mode.Sidecar, []rec{outcome("netpol.app-port-only", mode.Sidecar, "blocked")}, nil, Fail, "no HBONE variant"},
		{"NetworkPolicy: enforcement unproven", NetworkPolicy, mode.Sidecar,
			[]rec{{"netpol.app-port-only", mode.Sidecar, verdict.Measurement{Outcome: "http-200", Unmet: "networkpolicy-enforcement: the probe policy did not block"}}}, nil, Undecided, "precondition not met"},
		{"NetworkPolicy: blocked, the 15008 case not measured", NetworkPolicy, mode.AmbientL4, []rec{outcome("netpol.app-port-only", mode.AmbientL4, "blocked")}, nil, Undecided, "netpol.hbone-allowed not measured"},
		// Latency against the bands: +0.04±0.6 (negligible) and +1.86±0.6.
		{"latency: negligible", Latency, mode.AmbientL4, []rec{overhead(mode.AmbientL4, 0.05, -0.1, 0.2)}, nil, Pass, "negligible"},
		{"latency: a sidecar-sized overhead", Latency, mode.Sidecar, []rec{overhead(mode.Sidecar, 1.3, 1.1, 1.5)}, nil, Caveat, "not negligible"},
		{"latency: more than any mode in GUIDE", Latency, mode.Sidecar, []rec{overhead(mode.Sidecar, 6.8, 6.2, 7.3)}, nil, Fail, "more than any mode in GUIDE"},
		{"latency: straddling the negligible edge", Latency, mode.AmbientL4, []rec{overhead(mode.AmbientL4, 0.6, 0.4, 0.9)}, nil, Undecided, "cannot be told"},
		{"latency: a point without an interval is not judged", Latency, mode.AmbientL4,
			[]rec{{"latency.p50-overhead", mode.AmbientL4, verdict.Measurement{Value: verdict.Float64(0.05)}}}, nil, Undecided, "no interval"},
		{"latency: an old record's buckets bound it", Latency, mode.Sidecar,
			[]rec{{"latency.p50-overhead", mode.Sidecar, verdict.Measurement{Value: verdict.Float64(6.802), Extra: map[string]float64{
				ExtraP50: 7.557, ExtraP50Bucket: 1, ExtraBaselineP50: 0.755, ExtraBaselineBucket: 0.1}}}}, nil, Fail, "[+6.20 ms, +7.30 ms]"},
		{"latency: repeats give a t interval", Latency, mode.AmbientL4,
			[]rec{{"latency.p50-overhead", mode.AmbientL4, verdict.Measurement{Value: verdict.Float64(0.7), Runs: []float64{0.2, 1.2, 0.7}}}}, nil, Undecided, "t interval over 3 runs"},
		{"latency: not measured", Latency, mode.AmbientL7, nil, map[string]string{"latency.p50-overhead|ambient-l7": "no record: filtered out"}, Undecided, "not measured: no record"},
		// Rollout: zero as deployed, fixed by hardening, not fixed, undecided.
		{"rollout: no errors as deployed", Rollout, mode.Sidecar, []rec{rollout("rollout.baseline", mode.Sidecar, 0, 0, 60000)}, nil, Pass, "no errors as deployed"},
		{"rollout: sidecar's 503s, none hardened", Rollout, mode.Sidecar,
			[]rec{rollout("rollout.baseline", mode.Sidecar, 432, 0, 60000), rollout("rollout.hardened", mode.Sidecar, 0, 0, 28544)}, nil, Caveat, "none with GUIDE's hardening"},
		{"rollout: ambient-l4's -1s count as errors", Rollout, mode.AmbientL4,
			[]rec{rollout("rollout.baseline", mode.AmbientL4, 0, 195, 60000), rollout("rollout.hardened", mode.AmbientL4, 0, 0, 60000)}, nil, Caveat, "-1 195"},
		{"rollout: the waypoint's 503s survive hardening", Rollout, mode.AmbientL7,
			[]rec{rollout("rollout.baseline", mode.AmbientL7, 1528, 84, 59913), rollout("rollout.hardened", mode.AmbientL7, 648, 0, 60000)}, nil, Fail, "errors as deployed and with GUIDE's hardening"},
		{"rollout: errors and no hardened run", Rollout, mode.Sidecar, []rec{rollout("rollout.baseline", mode.Sidecar, 432, 0, 60000)},
			map[string]string{"rollout.hardened|sidecar": "no record: filtered out"}, Fail, "hardened: rollout.hardened not measured"},
		{"rollout: errors, the hardened run too short to show zero", Rollout, mode.Sidecar,
			[]rec{rollout("rollout.baseline", mode.Sidecar, 21, 0, 2992), rollout("rollout.hardened", mode.Sidecar, 0, 0, 2992)}, nil, Fail, "the hardened run's upper bounds are above 0.1% (too few requests to show zero)"},
		{"rollout: too few requests to show zero", Rollout, mode.Sidecar, []rec{rollout("rollout.baseline", mode.Sidecar, 0, 0, 500)}, nil, Undecided, "too few requests"},
		{"rollout: not measured", Rollout, mode.Sidecar, nil, map[string]string{"rollout.baseline|sidecar": "no record: filtered out"}, Undecided, "rollout.baseline not measured"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := summarize(t, reg, all, c.missing, c.recs...)
			got, ok := s.Cell(c.req, c.mode)
			if !ok {
				t.Fatalf("no cell %s / %s", c.req, c.mode)
			}
			text := got.Measured + " — " + got.Why
			if got.Mark != c.want || !strings.Contains(text, c.contains) {
				t.Errorf("got %s %q, want %s containing %q", got.Mark, text, c.want, c.contains)
			}
		})
	}
}

// GUIDE's own cells, by the same rules from its documented values: its
// Decision Summary's marks and the ranking of its conclusion.
func TestGuideColumn(t *testing.T) {
	reg := claimstest.Registry(t)
	s := summarize(t, reg, []mode.Mode{mode.Sidecar, mode.AmbientL4, mode.AmbientL7}, nil)
	want := map[Requirement][3]Mark{
		MTLS:          {Pass, Pass, Pass},
		NetworkPolicy: {Pass, Caveat, Caveat},
		Latency:       {Caveat, Pass, Caveat},
		Rollout:       {Caveat, Caveat, Fail},
	}
	for req, marks := range want {
		for i, m := range []mode.Mode{mode.Sidecar, mode.AmbientL4, mode.AmbientL7} {
			c, _ := s.Cell(req, m)
			if c.GuideMark != marks[i] {
				t.Errorf("%s / %s: GUIDE's mark %s (%s), want %s", req, m, c.GuideMark, c.Guide, marks[i])
			}
		}
	}
	if c, _ := s.Cell(NetworkPolicy, mode.AmbientL4); c.Guide != "must allow HBONE port 15008" {
		t.Errorf("GUIDE's ambient-l4 NetworkPolicy cell: %q", c.Guide)
	}
}

func TestRank(t *testing.T) {
	iv := func(est, lo, hi float64) Interval { return Interval{Estimate: est, Low: lo, High: hi} }
	cases := []struct {
		name string
		figs map[mode.Mode]Interval
		want string
	}{
		{"separated, two overlapping", map[mode.Mode]Interval{mode.AmbientL4: iv(0.05, 0, 0.2), mode.Sidecar: iv(1.3, 1.1, 1.5), mode.AmbientL7: iv(1.8, 1.4, 2.1)},
			"ambient-l4 | sidecar ambient-l7"},
		{"all apart", map[mode.Mode]Interval{mode.AmbientL4: iv(0.05, 0, 0.2), mode.Sidecar: iv(1.3, 1.1, 1.5), mode.AmbientL7: iv(1.9, 1.6, 2.1)},
			"ambient-l4 | sidecar | ambient-l7"},
		{"a wide interval joins what it touches", map[mode.Mode]Interval{mode.AmbientL4: iv(5, 0, 10), mode.Sidecar: iv(11.5, 11, 12), mode.AmbientL7: iv(17.5, 5, 30)},
			"ambient-l4 sidecar ambient-l7"},
	}
	for _, c := range cases {
		var gs []string
		for _, g := range Rank(c.figs) {
			gs = append(gs, mode.Join(g, " "))
		}
		if got := strings.Join(gs, " | "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestConclusion(t *testing.T) {
	reg := claimstest.Registry(t)
	modes := []mode.Mode{mode.None, mode.Sidecar, mode.AmbientL4, mode.AmbientL7}
	s := summarize(t, reg, modes, nil,
		overhead(mode.AmbientL4, 0.05, 0, 0.2), overhead(mode.Sidecar, 1.3, 1.1, 1.5), overhead(mode.AmbientL7, 1.8, 1.4, 2.1),
		rollout("rollout.baseline", mode.Sidecar, 324, 2, 60000), rollout("rollout.baseline", mode.AmbientL4, 0, 195, 60000), rollout("rollout.baseline", mode.AmbientL7, 1528, 84, 59913))
	for _, want := range []string{
		"ambient-l4 +0.05 ms [+0.00 ms, +0.20 ms] < sidecar +1.30 ms",
		"(sidecar and ambient-l7: intervals overlap, not told apart)",
		"ambient-l4 0.325% [", "< sidecar 0.543% [", "< ambient-l7 2.69% [",
		"No measured mode is ✅ on all four rows",
	} {
		if !strings.Contains(s.Conclusion, want) {
			t.Errorf("conclusion lacks %q:\n%s", want, s.Conclusion)
		}
	}
	one := summarize(t, reg, []mode.Mode{mode.None, mode.Sidecar}, nil, overhead(mode.Sidecar, 6.8, 6.2, 7.3))
	if !strings.Contains(one.Conclusion, "the only meshed mode measured, so nothing is ranked") || !strings.Contains(one.Conclusion, "Errors during rollouts as deployed (503 or -1): no mode measured") {
		t.Errorf("one mode: %s", one.Conclusion)
	}
	if len(one.Notes) == 0 || !strings.Contains(one.Notes[0], "ambient-l4 and ambient-l7: not in this run") {
		t.Errorf("notes: %q", one.Notes)
	}
	if _, ok := Summarize(Input{Modes: []mode.Mode{mode.None}}, reg); ok {
		t.Error("a run without a meshed mode has no decision to summarize")
	}
}
