package l7

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Header routing is judged on two sets of calls to echo-canary: with
// fixtures.CanaryHeader: v2 (the route sends all to echo-v2) and without it
// (the default rule sends all to echo-v1). Both must go where the route
// says for "honoured": a route applied without its match (everything to
// one version) passes one set and fails the other. Without an L7 proxy both
// sets show the replica share, "not-honoured".
var (
	headerToV2   = fixtures.Split{V1: 0, V2: 100}
	noHeaderToV1 = fixtures.Split{V1: 100, V2: 0}
)

// HeaderRouting makes both sets of calls from client c to url.
func HeaderRouting(ctx context.Context, r *spec.Run, c probe.Client, url string) (verdict.Measurement, error) {
	with, pods, err := steps.SplitCalls(ctx, r, c, url, fixtures.CanaryHeader+":"+fixtures.CanaryV2)
	if err != nil {
		return verdict.Measurement{}, err
	}
	without, _, err := steps.SplitCalls(ctx, r, c, url)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := judgeHeaderRouting(with, without, pods)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("header routing on %s: %w", url, err)
	}
	r.Logf("header routing: %s", got.Detail)
	return got, nil
}

// judgeHeaderRouting judges the two tallies (answers by version) against
// the ready pods of each version: honoured when both sets are honoured,
// not-honoured when both show the replica share, otherwise no outcome
// (inconclusive) with both shares in Detail.
func judgeHeaderRouting(with, without, pods steps.SplitTally) (verdict.Measurement, error) {
	a, err := steps.JudgeSplit(with.V1, with.V2, headerToV2, pods.V1, pods.V2)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("calls with %s: %w", fixtures.CanaryHeader, err)
	}
	b, err := steps.JudgeSplit(without.V1, without.V2, noHeaderToV1, pods.V1, pods.V2)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("calls without %s: %w", fixtures.CanaryHeader, err)
	}
	out := ""
	if a.Outcome == b.Outcome {
		out = a.Outcome
	}
	return verdict.Measurement{
		Outcome: out,
		Count:   verdict.Int64(*a.Count + (*b.Total - *b.Count)), // calls that reached the version the route names
		Total:   verdict.Int64(*a.Total + *b.Total),
		Detail:  fmt.Sprintf("with %s: %s -> %s; without: %s -> %s", fixtures.CanaryHeader+": "+fixtures.CanaryV2, a.Detail, orInconclusive(a.Outcome), b.Detail, orInconclusive(b.Outcome)),
		Extra:   map[string]float64{"with_header_v2": float64(with.V2), "with_header_v1": float64(with.V1), "without_header_v2": float64(without.V2), "without_header_v1": float64(without.V1)},
	}, nil
}

func orInconclusive(outcome string) string {
	if outcome == "" {
		return "inconclusive"
	}
	return outcome
}

// pathToV2 is the path route's judged set: every call to /debug to echo-v2.
var pathToV2 = fixtures.Split{V1: 0, V2: 100}

// PathRouting calls echo-canary's debug path from client c (one set: only
// that page names the answering pod) and judges v2's share against the
// route's 100% and the replica share.
func PathRouting(ctx context.Context, r *spec.Run, c probe.Client, url string) (verdict.Measurement, error) {
	tally, pods, err := steps.SplitCalls(ctx, r, c, url)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := steps.JudgeSplit(tally.V1, tally.V2, pathToV2, pods.V1, pods.V2)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("path routing on %s: %w", url, err)
	}
	r.Logf("path routing: %s", got.Detail)
	return got, nil
}
