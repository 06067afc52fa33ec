package l7

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/echolog"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Mirroring is counted where the copies land: in the servers' own logs.
// Each call asks echo for mirrorStatus, an error answer, so every echo that
// serves it (v1 the primary, v2 a copy) logs it (echo.ErrorAnswerMsg), with
// the spec's mark in the query. With the route applied, v1 logs every call
// and v2 a copy of each; without an L7 proxy the Service spreads the calls
// themselves over both versions and the two logs add up to the calls.
// copies = v1 + v2 - calls is what is judged.

// mirrorStatus is the status the mirrored calls ask echo for (fortio's
// ?status=): an error so echo logs it, and one no retry policy retries
// (Istio's default retries no status code; a 5xx could be).
const mirrorStatus = 418

// Thresholds on the copied share: Envoy mirrors every request at the
// filter's default, so "mirrored" asks the share's 95% interval to lie
// above mirrorCopied; "not mirrored" below mirrorNone (200 calls with no
// copy give an upper bound of 1.9%).
const (
	mirrorCopied = 0.9
	mirrorNone   = 0.05
)

// mirroring applies fixtures.CanaryMirrorRoute, makes SplitRequests calls
// from the in-mesh client to echo-canary, each marked and asking for
// mirrorStatus on a fresh connection, and counts the marked lines in the
// logs of echo-v1's and echo-v2's pods (judgeMirror).
func mirroring(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	route := fixtures.CanaryMirrorRoute(scenario.Target(r))
	if err := scenario.ApplyAndAwait(ctx, r, route); err != nil {
		return verdict.Measurement{}, err
	}
	mark := fmt.Sprintf("mirror-%s-%d", r.Env.Config.RunID, time.Now().UnixNano())
	url := fmt.Sprintf("http://%s.%s:%d/?status=%d&%s=%s", fixtures.CanaryName, r.Namespace(), fixtures.EchoHTTPPort, mirrorStatus, echolog.MarkParam, mark)
	since := time.Now().Add(-echolog.LogClockSlack)
	var results []probe.Result
	err = probe.Forward(ctx, m.Kube, scenario.InMesh(r), func(base string) (err error) {
		results, err = probe.ManyVia(ctx, base, url, steps.SplitRequests, r.Env.Config.Timeouts.Probe)
		return err
	})
	if err != nil {
		return verdict.Measurement{}, err
	}
	want := fmt.Sprintf("http-%d", mirrorStatus)
	for i, res := range results {
		if res.Outcome != want {
			return verdict.Measurement{}, fmt.Errorf("mirrored call %d of %d got %s %s, not the %s asked for: the calls themselves fail", i+1, len(results), res.Outcome, res.Detail, want)
		}
	}
	calls := int64(len(results))
	count := func() (v1, v2 int64, err error) {
		if v1, err = markedLines(ctx, r, fixtures.CanaryV1, mark, since); err != nil {
			return 0, 0, err
		}
		v2, err = markedLines(ctx, r, fixtures.CanaryV2, mark, since)
		return v1, v2, err
	}
	// The wait is for the primaries' lines (every call was answered, so
	// the logs must come to hold as many), never for the copies; a copy
	// is answered after its primary, so the count is read once more a
	// poll later.
	var v1, v2 int64
	err = scenario.PollUntil(ctx, r.Env.Config.Timeouts.LogFlush, r.Env.Config.Timeouts.ConvergePoll, func(ctx context.Context) (bool, string, error) {
		var err error
		v1, v2, err = count()
		return err == nil && v1+v2 >= calls, fmt.Sprintf("v1 %d + v2 %d marked lines of %d calls", v1, v2, calls), err
	})
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("echo-canary's logs: %w", err)
	}
	select {
	case <-ctx.Done():
		return verdict.Measurement{}, ctx.Err()
	case <-time.After(r.Env.Config.Timeouts.ConvergePoll):
	}
	if v1, v2, err = count(); err != nil {
		return verdict.Measurement{}, err
	}
	got, err := judgeMirror(calls, v1, v2)
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("mirroring: %s", got.Detail)
	return got, nil
}

// markedLines counts the error answers carrying mark in the logs of every
// pod of canary version v since since.
func markedLines(ctx context.Context, r *spec.Run, v, mark string, since time.Time) (int64, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return 0, err
	}
	pods, err := m.Kube.ReadyPods(ctx, r.Namespace(), fixtures.LabelApp+"="+fixtures.CanaryName+","+fixtures.LabelVersion+"="+v)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range pods {
		log, err := m.Kube.Logs(ctx, p.Namespace, p.Name, "echo-"+v, since)
		if err != nil {
			return 0, fmt.Errorf("pod %s's log: %w", p.Name, err)
		}
		answers, err := echolog.ParseErrorAnswers(log)
		if err != nil {
			return 0, fmt.Errorf("pod %s's log: %w", p.Name, err)
		}
		n += countMarked(answers, mark)
	}
	return n, nil
}

// countMarked counts the answers whose request carried mark.
func countMarked(answers []echolog.ErrorAnswer, mark string) int64 {
	var n int64
	for _, a := range answers {
		if strings.Contains(a.URI, echolog.MarkParam+"="+mark) {
			n++
		}
	}
	return n
}

// judgeMirror judges the marked lines of v1 and v2 against the calls:
// fewer lines than calls is an incomplete log, more than two per call is
// not what any route does (both errors); otherwise the copied share,
// (v1 + v2 - calls) / calls, is honoured above mirrorCopied, not-honoured
// below mirrorNone, inconclusive between.
func judgeMirror(calls, v1, v2 int64) (verdict.Measurement, error) {
	if calls <= 0 {
		return verdict.Measurement{}, fmt.Errorf("%d calls: nothing to judge", calls)
	}
	if v1+v2 < calls {
		return verdict.Measurement{}, fmt.Errorf("the logs hold %d (v1) + %d (v2) answers of %d calls that were all answered: the logs are incomplete", v1, v2, calls)
	}
	if v1+v2 > 2*calls {
		return verdict.Measurement{}, fmt.Errorf("the logs hold %d (v1) + %d (v2) answers of %d calls, more than one copy each", v1, v2, calls)
	}
	copies := v1 + v2 - calls
	share, err := stats.Wilson(copies, calls, verdict.Confidence)
	if err != nil {
		return verdict.Measurement{}, err
	}
	out, why := "", "inconclusive: "
	switch {
	case share.CI.Low > mirrorCopied:
		out, why = steps.SplitHonoured, ""
	case share.CI.High < mirrorNone:
		out, why = steps.SplitNotHonoured, ""
	}
	return verdict.Measurement{Outcome: out, Count: verdict.Int64(copies), Total: verdict.Int64(calls),
		Extra:  map[string]float64{"v1_answers": float64(v1), "v2_answers": float64(v2)},
		Detail: fmt.Sprintf("%s%d calls: echo-v1 logged %d, echo-v2 %d; copies %d, share %s (mirrored above %.0f%%, not below %.0f%%)", why, calls, v1, v2, copies, share, mirrorCopied*100, mirrorNone*100)}, nil
}
