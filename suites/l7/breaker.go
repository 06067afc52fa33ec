package l7

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// breakerFloor is the shortest circuit-breaking load: 5 s at the setup's
// 200 qps is 1,000 requests, enough for zero 503s to put the 95% upper
// bound under breakerQuiet.
const breakerFloor = 5 * time.Second

// Thresholds of the breaker detector on the 503 share: a pool of one
// connection at 200 qps of 20 ms requests (4 in flight on average) overflows
// on most requests, so "tripped" asks only that the share's interval lie
// above breakerTripped; "not applied" that it lie below breakerQuiet (the
// unrestricted pool gives none).
const (
	breakerTripped = 0.05
	breakerQuiet   = 0.01
)

// circuitBreaking runs the claim's load (registry setup) from the in-mesh
// client against echo with ?delay=BreakerDelay, with fortio's
// -allow-initial-errors (the first requests are the ones a tripped breaker
// refuses), and judges the 503 share (judgeBreaker).
func circuitBreaking(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	s, err := steps.SetupLoad(r, scenario.EchoURL(r)+"?delay="+fixtures.BreakerDelay, breakerFloor)
	if err != nil {
		return verdict.Measurement{}, err
	}
	s.AllowInitialErrors = true
	r.SetSetup("%s, against echo ?delay=%s", steps.DescribeLoad(r, s), fixtures.BreakerDelay)
	run, err := steps.Load(ctx, r, scenario.InMesh(r), "breaker", s)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := judgeBreaker(run.Result.RetCodes)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("circuit-breaking load: %w", err)
	}
	r.Logf("circuit breaking: %s", got.Detail)
	return got, nil
}

// judgeBreaker judges fortio's RetCodes: every answer must be 200 or 503
// (a -1 or another code is a broken measurement, named); the 503 share's
// 95% Wilson interval above breakerTripped is honoured, below breakerQuiet
// not-honoured, anything else inconclusive (empty Outcome).
func judgeBreaker(codes map[int]int64) (verdict.Measurement, error) {
	var total, n503 int64
	for code, n := range codes {
		switch code {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			n503 += n
		default:
			return verdict.Measurement{}, fmt.Errorf("%d answers with code %d (fortio -1 = no HTTP response) among %v: only 200 and 503 are the breaker's", n, code, codes)
		}
		total += n
	}
	if total == 0 {
		return verdict.Measurement{}, fmt.Errorf("no request was answered (codes %v)", codes)
	}
	share, err := stats.Wilson(n503, total, verdict.Confidence)
	if err != nil {
		return verdict.Measurement{}, err
	}
	out, why := "", ""
	switch {
	case share.CI.Low > breakerTripped:
		out = steps.SplitHonoured
	case share.CI.High < breakerQuiet:
		out = steps.SplitNotHonoured
	default:
		why = "inconclusive: "
	}
	return verdict.Measurement{Outcome: out, Count: verdict.Int64(n503), Total: verdict.Int64(total),
		Detail: fmt.Sprintf("%s503 share %s (tripped above %.0f%%, not applied below %.0f%%)", why, share, breakerTripped*100, breakerQuiet*100)}, nil
}
