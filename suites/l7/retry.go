package l7

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// retryPolicyRequests is how many flaky calls judge a retry policy: at 200,
// the no-retry share (50%) and the share with three retries (0.5^4 = 6.25%)
// have 95% intervals of about [43%, 57%] and [3.5%, 11%].
const retryPolicyRequests = 200

// Outcomes of the retry-policy detector: the registry's honoured and
// not-honoured (the policy was applied, or was not).
const (
	retryApplied    = steps.SplitHonoured
	RetryNotApplied = steps.SplitNotHonoured
)

// RetryPolicy calls echo with fixtures.FlakyQuery (half the answers a 500)
// retryPolicyRequests times from client c and judges the share of 500s the
// client saw (judgeRetryPolicy). An answer other than 200 or the flaky
// status is a broken measurement.
func RetryPolicy(ctx context.Context, r *spec.Run, c probe.Client, url string) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	var results []probe.Result
	err = probe.Forward(ctx, m.Kube, c, func(base string) (err error) {
		results, err = probe.ManyVia(ctx, base, url, retryPolicyRequests, r.Env.Config.Timeouts.Probe)
		return err
	})
	if err != nil {
		return verdict.Measurement{}, err
	}
	failed, total, err := countFlaky(results, retryPolicyRequests)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("flaky calls to %s: %w", url, err)
	}
	got, err := judgeRetryPolicy(failed, total)
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("retry policy: %s", got.Detail)
	return got, nil
}

// countFlaky counts the flaky status among results; every result must be
// 200 or that status, and want results must be there.
func countFlaky(results []probe.Result, want int) (failed, total int64, err error) {
	if len(results) < want {
		return 0, 0, fmt.Errorf("%d of %d calls made", len(results), want)
	}
	flaky := fmt.Sprintf("http-%d", fixtures.FlakyStatus)
	other, first := 0, ""
	for _, res := range results {
		switch res.Outcome {
		case flaky:
			failed++
		case "http-200":
		default:
			other++
			if first == "" {
				first = res.Outcome + " " + res.Detail
			}
		}
	}
	if other > 0 {
		return 0, 0, fmt.Errorf("%d of %d answers were neither 200 nor %d (first: %s): the share would be judged on the rest only", other, len(results), fixtures.FlakyStatus, first)
	}
	return failed, int64(len(results)), nil
}

// judgeRetryPolicy places the 95% Wilson interval of the flaky share the
// client saw: entirely below what a single retry leaves (0.5^2 = 25%), the
// policy's retries were applied; containing the server's own share (50%),
// nothing retried (or above one retry's share, with the server's share in the
// wider verdict.Consistency interval); anything else is inconclusive (empty
// Outcome).
func judgeRetryPolicy(failed, total int64) (verdict.Measurement, error) {
	if total == 0 {
		return verdict.Measurement{}, fmt.Errorf("no flaky call was answered")
	}
	server := float64(fixtures.FlakyPercent) / 100
	oneRetry := server * server
	withPolicy := oneRetry * oneRetry // attempts 3: four tries
	share, err := stats.Wilson(failed, total, verdict.Confidence)
	if err != nil {
		return verdict.Measurement{}, err
	}
	wide, err := stats.Wilson(failed, total, verdict.Consistency)
	if err != nil {
		return verdict.Measurement{}, err
	}
	out, why := "", ""
	switch {
	case share.CI.High < oneRetry:
		out = retryApplied
	case share.CI.Contains(server):
		out = RetryNotApplied
	case share.CI.Low > oneRetry && wide.CI.Contains(server):
		// Above one retry's share and the server's by the wider interval:
		// the 95% one misses a true 50% one time in twenty.
		out, why = RetryNotApplied, fmt.Sprintf("the server's share by the wider %s; ", wide.CIText())
	default:
		why = "inconclusive: the interval is neither below one retry's share nor contains the server's; "
	}
	return verdict.Measurement{Outcome: out, Count: verdict.Int64(failed), Total: verdict.Int64(total),
		Detail: fmt.Sprintf("%s%d share seen by the client %s (server %.0f%%, one retry %.1f%%, the policy's %d retries %.2f%%)",
			why, fixtures.FlakyStatus, share, server*100, oneRetry*100, fixtures.EchoRetryAttempts, withPolicy*100)}, nil
}
