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
// c, each on a fresh connection, and judges whether the observed share of v2
// honours the configured weight: its Wilson interval must contain the weight
// and exclude the replica share (50%, one pod each), which is what per-
// connection L4 balancing gives.
func Split(ctx context.Context, r *spec.Run, c probe.Client, url string, s fixtures.Split) (verdict.Measured, error) {
	var v1, v2, other int64
	for i := 0; i < SplitRequests; i++ {
		res, err := Probe(ctx, r, c, url)
		if err != nil {
			return verdict.Measured{}, err
		}
		switch {
		case strings.Contains(res.Body, fixtures.CanaryV2Name+"-"):
			v2++
		case strings.Contains(res.Body, fixtures.CanaryV1Name+"-"):
			v1++
		default:
			other++
		}
	}
	n := v1 + v2
	if n == 0 {
		return verdict.Measured{}, fmt.Errorf("none of %d calls to %s was answered by echo-v1 or echo-v2", SplitRequests, url)
	}
	share, err := stats.Wilson(v2, n, verdict.Confidence)
	if err != nil {
		return verdict.Measured{}, err
	}
	weight := float64(s.V2) / float64(s.V1+s.V2)
	detail := fmt.Sprintf("v2 share %s (configured %.0f%%, replica share 50%%); %d answers from neither", share, weight*100, other)
	out := "not-honoured"
	if share.CI.Contains(weight) && !share.CI.Contains(0.5) {
		out = "honoured"
	}
	return verdict.Measured{Outcome: out, Detail: detail, Count: verdict.Int64(v2), Total: verdict.Int64(n)}, nil
}

// IngressURL is the in-cluster URL of the mode's ingress Gateway Service
// (Istio names it <gateway>-istio), waiting until Istio has created it.
func IngressURL(ctx context.Context, r *spec.Run, path string) (string, error) {
	m, err := Of(r)
	if err != nil {
		return "", err
	}
	if err := m.K.WaitAvailable(ctx, r.Namespace(), r.Env.Config.Timeouts.WorkloadsReady, fixtures.IngressServiceName); err != nil {
		return "", err
	}
	svc, err := m.K.Client.CoreV1().Services(r.Namespace()).Get(ctx, fixtures.IngressServiceName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s.%s:%d%s", svc.Name, svc.Namespace, fixtures.IngressPort, path), nil
}
