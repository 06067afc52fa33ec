package l7

import (
	"context"
	"fmt"
	"net/http"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Thresholds on the share of the failing pod's 500s among the calls: with
// one healthy and one failing endpoint the share without ejection is the
// failing pod's replica share, 50%; a detector ejecting after one 5xx lets
// about one through. "Ejected" asks the share's 95% interval to lie below
// outlierEjected, "not ejected" above outlierKept.
const (
	outlierEjected = 0.10
	outlierKept    = 0.25
)

// outlierDetection deploys echo-outlier (one healthy pod, one failing every
// plain call), checks that calls through the Service reach both before any
// rule (the positive control: the failing pod is in the rotation, so a
// later absence of its 500s is the rule's doing), applies
// fixtures.EchoOutlierDetection, and judges SplitRequests calls
// (judgeOutlier).
func outlierDetection(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	t := scenario.Target(r)
	img := m.Options.Images
	healthy, failing := fixtures.OutlierEcho(t, img, false), fixtures.OutlierEcho(t, img, true)
	if err := scenario.Apply(ctx, r, fixtures.OutlierService(t), healthy, failing); err != nil {
		return verdict.Measurement{}, err
	}
	if err := m.Kube.WaitAvailable(ctx, r.Namespace(), r.Env.Config.Timeouts.WorkloadsReady, healthy.Name, failing.Name); err != nil {
		return verdict.Measurement{}, err
	}
	url := fmt.Sprintf("http://%s.%s:%d/", fixtures.OutlierName, r.Namespace(), fixtures.EchoHTTPPort)
	calls := func(n int) (codes map[int]int64, err error) {
		var results []probe.Result
		err = probe.Forward(ctx, m.Kube, scenario.InMesh(r), func(base string) (err error) {
			results, err = probe.ManyVia(ctx, base, url, n, r.Env.Config.Timeouts.Probe)
			return err
		})
		if err != nil {
			return nil, err
		}
		return outlierCodes(results)
	}
	// Both endpoints must be answering through the proxies (a new Service's
	// endpoints reach them like a pushed config) before the rule.
	err = scenario.PollUntil(ctx, r.Env.Config.Timeouts.ConfigPushed, r.Env.Config.Timeouts.ConvergePoll, func(context.Context) (bool, string, error) {
		codes, err := calls(10)
		if err != nil {
			return false, err.Error(), nil
		}
		return codes[http.StatusOK] > 0 && codes[fixtures.OutlierFailStatus] > 0, fmt.Sprintf("codes %v of 10 calls", codes), nil
	})
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("positive control before the rule: calls to %s never reached both the healthy and the failing pod: %w", url, err)
	}
	rule := fixtures.EchoOutlierDetection(t)
	if err := scenario.ApplyAndAwait(ctx, r, rule); err != nil {
		return verdict.Measurement{}, err
	}
	codes, err := calls(steps.SplitRequests)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("calls to %s: %w", url, err)
	}
	got, err := judgeOutlier(codes)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("calls to %s: %w", url, err)
	}
	r.Logf("outlier detection: %s", got.Detail)
	return got, nil
}

// outlierCodes tallies the calls' status codes; a call without an HTTP
// status, or with a code neither pod answers, is an error naming it.
func outlierCodes(results []probe.Result) (map[int]int64, error) {
	codes := map[int]int64{}
	for i, res := range results {
		switch res.Status {
		case http.StatusOK, fixtures.OutlierFailStatus:
			codes[res.Status]++
		default:
			return nil, fmt.Errorf("call %d of %d got %s %s: only 200 (healthy pod) and %d (failing pod) are echo-outlier's", i+1, len(results), res.Outcome, res.Detail, fixtures.OutlierFailStatus)
		}
	}
	return codes, nil
}

// judgeOutlier: the failing pod's share of the answers, by its 95% Wilson
// interval: below outlierEjected honoured (ejected), above outlierKept
// not-honoured, between inconclusive.
func judgeOutlier(codes map[int]int64) (verdict.Measurement, error) {
	failed, total := codes[fixtures.OutlierFailStatus], codes[http.StatusOK]+codes[fixtures.OutlierFailStatus]
	if total == 0 {
		return verdict.Measurement{}, fmt.Errorf("no call answered (codes %v)", codes)
	}
	share, err := stats.Wilson(failed, total, verdict.Confidence)
	if err != nil {
		return verdict.Measurement{}, err
	}
	out, why := "", "inconclusive: "
	switch {
	case share.CI.High < outlierEjected:
		out, why = steps.SplitHonoured, ""
	case share.CI.Low > outlierKept:
		out, why = steps.SplitNotHonoured, ""
	}
	return verdict.Measurement{Outcome: out, Count: verdict.Int64(failed), Total: verdict.Int64(total),
		Detail: fmt.Sprintf("%sthe failing pod's %d share %s of %d calls (ejected below %.0f%%, kept above %.0f%%)", why, fixtures.OutlierFailStatus, share, total, outlierEjected*100, outlierKept*100)}, nil
}
