package steps

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/probe"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"

	"github.com/meshclaims/meshclaims/fixtures"
)

// The split detector has three answers. A 90/10 route honoured gives ~10%
// v2; per-connection L4 balancing over one pod each gives ~50% and is "not
// honoured"; anything the interval cannot tell apart is inconclusive (empty
// outcome), never "not honoured", which is ambient-l4's documented value.
func TestJudgeSplit(t *testing.T) {
	cases := []struct {
		v1, v2       int64
		podsV1, pods int
		want         string
	}{
		{180, 20, 1, 1, SplitHonoured},     // 10% of 200
		{100, 100, 1, 1, SplitNotHonoured}, // the replica share: the route was ignored
		{2, 1, 1, 1, ""},                   // 3 answers: the interval holds 10% and 50%
		{200, 0, 1, 1, ""},                 // 0%: neither the weight nor the replica share
		{60, 140, 1, 1, ""},                // 70%: neither, by the wider interval too
		// 57% (a CI run's): the 95% interval [50.07%, 63.67%] misses the
		// replica share, which happens one time in twenty; the 99.9% one
		// holds it and not the weight.
		{86, 114, 1, 1, SplitNotHonoured},
		{186, 14, 1, 1, SplitHonoured},    // 7%: 95% [4.2%, 11.4%] holds 10% already
		{193, 7, 1, 1, SplitHonoured},     // 3.5%: the 95% interval misses 10%, the 99.9% one holds it
		{150, 50, 3, 1, SplitNotHonoured}, // 25% with 3:1 pods is that replica share
		{180, 20, 3, 1, SplitHonoured},    // 10% with 3:1 pods is still the weight
	}
	for _, c := range cases {
		got, err := JudgeSplit(c.v1, c.v2, fixtures.DefaultSplit, c.podsV1, c.pods)
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != c.want {
			t.Errorf("v1=%d v2=%d pods %d:%d: %q (%s), want %q", c.v1, c.v2, c.podsV1, c.pods, got.Outcome, got.Detail, c.want)
		}
		if c.want == "" && !strings.HasPrefix(got.Detail, "inconclusive") {
			t.Errorf("v1=%d v2=%d: inconclusive without saying so: %s", c.v1, c.v2, got.Detail)
		}
	}
	for _, bad := range []struct {
		v1, v2       int64
		podsV1, pods int
		split        fixtures.Split
	}{
		{0, 0, 1, 1, fixtures.DefaultSplit},
		{90, 10, 0, 1, fixtures.DefaultSplit},
		{50, 50, 1, 1, fixtures.Split{V1: 50, V2: 50}}, // weight = replica share
		{50, 50, 1, 1, fixtures.Split{}},
	} {
		if _, err := JudgeSplit(bad.v1, bad.v2, bad.split, bad.podsV1, bad.pods); err == nil {
			t.Errorf("%+v judged", bad)
		}
	}
}

// debugPage is fortio's /debug answer as fhttp.DebugHandler writes it.
func debugPage(host string) string {
	return fmt.Sprintf("Φορτίο version 1.75.3 h1:abc go1.26.0 amd64 linux echo debug server up for 41s on %s - request from 10.244.0.7:51234\n\n"+
		"GET /debug HTTP/1.1\n\nheaders:\n\nHost: echo-canary.meshclaims-sidecar:8080\nUser-Agent: Go-http-client/1.1\n\nbody:\n\n\n", host)
}

func answered(host string) probe.Result {
	r := wp.Result{Status: 200, Body: debugPage(host), Connected: true}
	o, d := probe.Outcome(r)
	return probe.Result{Result: r, Outcome: o, Detail: d}
}

func failedCall(cause, msg string) probe.Result {
	r := wp.Result{Cause: cause, Error: msg}
	o, d := probe.Outcome(r)
	return probe.Result{Result: r, Outcome: o, Detail: d}
}

// Failed calls are counted, not dropped: with 197 answers from v1 and three
// failures, judging the 197 would read as an honoured route to v1.
func TestCountSplit(t *testing.T) {
	many := func(v1, v2 int, extra ...probe.Result) []probe.Result {
		var out []probe.Result
		for i := 0; i < v1; i++ {
			out = append(out, answered("echo-v1-7d9f8b6c5-x2k4p"))
		}
		for i := 0; i < v2; i++ {
			out = append(out, answered("echo-v2-5c8d7f9b4-q7m2n"))
		}
		return append(out, extra...)
	}
	got, err := CountSplit(many(180, 20), 200)
	if err != nil || got.V1 != 180 || got.V2 != 20 {
		t.Fatalf("clean split: %+v, %v", got, err)
	}
	bad := []struct {
		name    string
		results []probe.Result
		want    string
	}{
		{"a reset", many(180, 19, failedCall("reset", "read: connection reset by peer")), "1 of 200 calls failed (first: no-http-response read: connection reset by peer)"},
		{"timeouts", many(180, 17, failedCall("timeout", "i/o timeout"), failedCall("timeout", "i/o timeout"), failedCall("timeout", "i/o timeout")), "3 of 200 calls failed"},
		{"a 503", many(180, 19, probe.Result{Result: wp.Result{Status: 503}, Outcome: "http-503"}), "1 of 200 calls failed (first: http-503)"},
		{"too few answers", many(2, 1), "3 of 200 calls made"},
		{"answer from another pod", many(180, 19, answered("echo-6b7c9d8f5-abcde")), "named neither"},
		// A header naming a version is not the answering pod.
		{"version only in a header", many(180, 19, probe.Result{Result: wp.Result{Status: 200, Body: "ok\nX-Forwarded-Host: echo-v2-x"}, Outcome: "http-200"}), "named neither"},
	}
	for _, c := range bad {
		if _, err := CountSplit(c.results, 200); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.name, err, c.want)
		}
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
