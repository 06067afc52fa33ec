package steps

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// SplitRequests is how many requests judge a split: enough that 10% and the
// 50% replica share have disjoint 95% intervals (at 200: [6.5%, 15%] vs
// [43%, 57%]).
const SplitRequests = 200

// Split calls url (echo's /debug, which names the answering pod) from client
// c SplitRequests times, each on a fresh connection, and judges the share of
// v2 (JudgeSplit).
func Split(ctx context.Context, r *spec.Run, c probe.Client, url string, s fixtures.Split) (verdict.Measured, error) {
	m, err := Of(r)
	if err != nil {
		return verdict.Measured{}, err
	}
	var results []probe.Result
	err = probe.Forward(ctx, m.K, c, func(base string) (err error) {
		results, err = probe.ManyVia(ctx, base, url, SplitRequests, r.Env.Config.Timeouts.Probe)
		return err
	})
	if err != nil {
		return verdict.Measured{}, err
	}
	var v1, v2, other int64
	for _, res := range results {
		switch {
		case strings.Contains(res.Body, fixtures.CanaryV2Name+"-"):
			v2++
		case strings.Contains(res.Body, fixtures.CanaryV1Name+"-"):
			v1++
		default:
			other++
		}
	}
	got, err := JudgeSplit(v1, v2, s)
	if err != nil {
		return verdict.Measured{}, fmt.Errorf("%d calls to %s: %w", len(results), url, err)
	}
	got.Detail += fmt.Sprintf("; %d answers from neither version", other)
	r.Logf("split: %s", got.Detail)
	return got, nil
}

// JudgeSplit decides whether v1/v2 answer counts honour split s: the 95%
// Wilson interval of v2's share must contain the configured weight and
// exclude the replica share (50%, one pod each), which is what per-connection
// L4 balancing gives when no L7 proxy applies the route.
func JudgeSplit(v1, v2 int64, s fixtures.Split) (verdict.Measured, error) {
	n := v1 + v2
	if n == 0 {
		return verdict.Measured{}, fmt.Errorf("no answer came from echo-v1 or echo-v2")
	}
	share, err := stats.Wilson(v2, n, verdict.Confidence)
	if err != nil {
		return verdict.Measured{}, err
	}
	weight := float64(s.V2) / float64(s.V1+s.V2)
	out := "not-honoured"
	if share.CI.Contains(weight) && !share.CI.Contains(0.5) {
		out = "honoured"
	}
	return verdict.Measured{Outcome: out, Count: verdict.Int64(v2), Total: verdict.Int64(n),
		Detail: fmt.Sprintf("v2 share %s (configured %.0f%%, replica share 50%%)", share, weight*100)}, nil
}

// IngressURL is the in-cluster URL of the mode's ingress Gateway Service
// (Istio names it <gateway>-istio), waiting until istiod has created its
// Deployment and that has rolled out. The Deployment appears some time after
// the Gateway is applied, so a first NotFound is waited through.
func IngressURL(ctx context.Context, r *spec.Run, path string) (string, error) {
	m, err := Of(r)
	if err != nil {
		return "", err
	}
	if err := m.K.WaitCreatedAvailable(ctx, r.Namespace(), r.Env.Config.Timeouts.GatewayReady, fixtures.IngressServiceName); err != nil {
		return "", err
	}
	svc, err := m.K.Client.CoreV1().Services(r.Namespace()).Get(ctx, fixtures.IngressServiceName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s.%s:%d%s", svc.Name, svc.Namespace, fixtures.IngressPort, path), nil
}
