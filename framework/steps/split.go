package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
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
// v2 (JudgeSplit) against the configured weight and the replica share of the
// ready canary pods. Every call must be answered by v1 or v2: a failed call,
// an answer from neither, or fewer answers than calls is a broken
// measurement, not a share, since dropping them would bias it.
func Split(ctx context.Context, r *spec.Run, c probe.Client, url string, s fixtures.Split) (verdict.Measurement, error) {
	tally, pods, err := SplitCalls(ctx, r, c, url)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := JudgeSplit(tally.V1, tally.V2, s, pods.V1, pods.V2)
	if err != nil {
		return verdict.Measurement{}, fmt.Errorf("%d calls to %s: %w", tally.V1+tally.V2, url, err)
	}
	r.Logf("split: %s", got.Detail)
	return got, nil
}

// SplitCalls makes SplitRequests calls to url from client c, each with the
// given request headers ("Name:value"), and counts the answers by version,
// with the ready pods of each version at the start (as pod counts).
func SplitCalls(ctx context.Context, r *spec.Run, c probe.Client, url string, headers ...string) (tally, pods SplitTally, err error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return tally, pods, err
	}
	for _, v := range []string{fixtures.CanaryV1, fixtures.CanaryV2} {
		ready, err := m.Kube.ReadyPods(ctx, r.Namespace(), fixtures.LabelApp+"="+fixtures.CanaryName+","+fixtures.LabelVersion+"="+v)
		if err != nil {
			return tally, pods, err
		}
		if v == fixtures.CanaryV1 {
			pods.V1 = int64(len(ready))
		} else {
			pods.V2 = int64(len(ready))
		}
	}
	var results []probe.Result
	err = probe.Forward(ctx, m.Kube, c, func(base string) (err error) {
		results, err = probe.ManyVia(ctx, base, url, SplitRequests, r.Env.Config.Timeouts.Probe, headers...)
		if err != nil {
			return err
		}
		kept, unconnected := WithoutUnconnected(results)
		if unconnected == 0 || unconnected > SplitRemakeLimit {
			return nil // none to make again, or too many: CountSplit reports them
		}
		// A call that never connected reached no version: made again, so
		// the share is of SplitRequests answers. Real runs saw one
		// "connect: no route to host" in 200 calls to a gateway that had
		// answered several times in a row just before.
		more, err := probe.ManyVia(ctx, base, url, unconnected, r.Env.Config.Timeouts.Probe, headers...)
		if err != nil {
			return err
		}
		r.Logf("split: %d of %d calls to %s never connected (first: %s); made again", unconnected, len(results), url, firstUnconnected(results))
		results = append(kept, more...)
		return nil
	})
	if err != nil {
		return tally, pods, err
	}
	tally, err = CountSplit(results, SplitRequests)
	if err != nil {
		return tally, pods, fmt.Errorf("split calls to %s (headers %v): %w", url, headers, err)
	}
	return tally, pods, nil
}

// SplitTally counts the answers of a split's calls by version.
type SplitTally struct {
	V1, V2 int64
}

// SplitRemakeLimit bounds the calls a split makes again after they failed to
// connect: a connect failure in the no-mesh path happens after kube-proxy
// chose a pod, so making it again could shift the share by one call in
// SplitRequests each; two (1%) stay far inside the interval's width, and
// more is a broken path that CountSplit reports.
const SplitRemakeLimit = 2

// WithoutUnconnected splits results into the calls that connected and the
// count of those whose TCP connect failed (no HTTP exchange at all).
func WithoutUnconnected(results []probe.Result) (connected []probe.Result, unconnected int) {
	for _, res := range results {
		if !res.Connected && res.Status == 0 {
			unconnected++
			continue
		}
		connected = append(connected, res)
	}
	return connected, unconnected
}

func firstUnconnected(results []probe.Result) string {
	for _, res := range results {
		if !res.Connected && res.Status == 0 {
			return strings.TrimSpace(res.Outcome + " " + res.Detail)
		}
	}
	return ""
}

// CountSplit counts results by the answering version. It fails when fewer
// than want calls were made, when any call got no 200, or when a 200 came
// from neither echo-v1 nor echo-v2, naming how many and the first such.
func CountSplit(results []probe.Result, want int) (SplitTally, error) {
	var t SplitTally
	if len(results) < want {
		return t, fmt.Errorf("%d of %d calls made", len(results), want)
	}
	var failed, neither int
	var firstFailed, firstNeither string
	for _, res := range results {
		switch {
		case res.Outcome != "http-200":
			failed++
			if firstFailed == "" {
				firstFailed = strings.TrimSpace(res.Outcome + " " + res.Detail)
			}
		case strings.HasPrefix(wp.DebugHost(res.Body), fixtures.CanaryV2Name+"-"):
			t.V2++
		case strings.HasPrefix(wp.DebugHost(res.Body), fixtures.CanaryV1Name+"-"):
			t.V1++
		default:
			neither++
			if firstNeither == "" {
				firstNeither = firstLine(res.Body)
			}
		}
	}
	var errs []string
	if failed > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d calls failed (first: %s)", failed, len(results), firstFailed))
	}
	if neither > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d answers named neither %s nor %s (first: %q)", neither, len(results), fixtures.CanaryV1Name, fixtures.CanaryV2Name, firstNeither))
	}
	if len(errs) > 0 {
		return t, fmt.Errorf("%s: the share of v2 would be judged on the rest only", strings.Join(errs, "; "))
	}
	return t, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// Split outcomes. Inconclusive has no registry outcome: it is left empty so
// the verdict is inconclusive, with the numbers in Detail.
const (
	SplitHonoured    = "honoured"
	SplitNotHonoured = "not-honoured"
)

// JudgeSplit decides whether v1/v2 answer counts honour split s, given the
// ready pods of each version (per-connection L4 balancing, which is what
// happens when no L7 proxy applies the route, gives v2 its replica share).
// With the 95% Wilson interval of v2's share:
//   - honoured: it contains the configured weight and excludes the replica share;
//   - not honoured: it contains the replica share and excludes the weight;
//   - inconclusive (empty Outcome): it contains both (too few answers).
//
// When it excludes both, the wider verdict.Consistency interval decides: the
// one hypothesis it contains, as above; inconclusive when it contains neither
// (something else decided the share) or both.
func JudgeSplit[N int | int64](v1, v2 int64, s fixtures.Split, podsV1, podsV2 N) (verdict.Measurement, error) {
	if err := s.Validate(); err != nil {
		return verdict.Measurement{}, err
	}
	if podsV1 < 1 || podsV2 < 1 {
		return verdict.Measurement{}, fmt.Errorf("ready canary pods v1=%d v2=%d; a split needs at least one of each", podsV1, podsV2)
	}
	weight := float64(s.V2) / float64(s.V1+s.V2)
	replica := float64(podsV2) / float64(podsV1+podsV2)
	if weight == replica {
		return verdict.Measurement{}, fmt.Errorf("configured weight %.0f%% equals the replica share (%d:%d pods): honoured and ignored look the same", weight*100, podsV1, podsV2)
	}
	n := v1 + v2
	if n == 0 {
		return verdict.Measurement{}, fmt.Errorf("no answer came from %s or %s", fixtures.CanaryV1Name, fixtures.CanaryV2Name)
	}
	share, err := stats.Wilson(v2, n, verdict.Confidence)
	if err != nil {
		return verdict.Measurement{}, err
	}
	out, why := "", ""
	hasW, hasR := share.CI.Contains(weight), share.CI.Contains(replica)
	switch {
	case hasW && !hasR:
		out = SplitHonoured
	case hasR && !hasW:
		out = SplitNotHonoured
	case hasW && hasR:
		why = "inconclusive: the interval contains both the weight and the replica share (too few answers); "
	default:
		wide, err := stats.Wilson(v2, n, verdict.Consistency)
		if err != nil {
			return verdict.Measurement{}, err
		}
		wideW, wideR := wide.CI.Contains(weight), wide.CI.Contains(replica)
		switch {
		case wideW && !wideR:
			out, why = SplitHonoured, fmt.Sprintf("the weight by the wider %s; ", wide.CIText())
		case wideR && !wideW:
			out, why = SplitNotHonoured, fmt.Sprintf("the replica share by the wider %s; ", wide.CIText())
		default:
			why = fmt.Sprintf("inconclusive: the interval contains neither the weight nor the replica share, and the wider %s not one of them alone; ", wide.CIText())
		}
	}
	return verdict.Measurement{Outcome: out, Count: verdict.Int64(v2), Total: verdict.Int64(n),
		Detail: fmt.Sprintf("%sv2 share %s (configured %.0f%%, replica share %.0f%% of %d:%d pods)", why, share, weight*100, replica*100, podsV1, podsV2)}, nil
}

// IngressURL is the in-cluster URL of the mode's ingress Gateway Service
// (Istio names it <gateway>-istio), waiting until istiod has created its
// Deployment and that has rolled out. The Deployment appears some time after
// the Gateway is applied, so a first NotFound is waited through.
func IngressURL(ctx context.Context, r *spec.Run, path string) (string, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return "", err
	}
	if err := m.Kube.WaitCreatedAvailable(ctx, r.Namespace(), r.Env.Config.Timeouts.GatewayReady, fixtures.IngressServiceName); err != nil {
		return "", err
	}
	svc, err := m.Kube.Client.CoreV1().Services(r.Namespace()).Get(ctx, fixtures.IngressServiceName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s.%s:%d%s", svc.Name, svc.Namespace, fixtures.IngressPort, path), nil
}

// IngressReachedBy is IngressURL once client c reaches it: a gateway pod
// Ready a moment ago is not yet behind its ClusterIP everywhere
// (EndpointSlice, then the node's service proxy: a real run's first call got
// "connect: no route to host"), so the wait ends only when c's calls get an
// HTTP answer, any status, several in a row. Which version answers is not
// looked at: that is what the spec measures.
func IngressReachedBy(ctx context.Context, r *spec.Run, c probe.Client, path string) (string, error) {
	url, err := IngressURL(ctx, r, path)
	if err != nil {
		return "", err
	}
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return "", err
	}
	err = probe.Forward(ctx, m.Kube, c, func(base string) error {
		w, err := converge.Until(ctx, scenario.PushPolicy(r), "client "+c.Namespace+"/"+c.Selector+" answered through "+url, Answered(base, url, r.Env.Config.Timeouts.Probe))
		r.AddWait(w)
		return err
	})
	if err != nil {
		return "", err
	}
	return url, nil
}

// Answered is the condition "a call to target through the probe client at
// base gets an HTTP response" (any status: reachability, not the answer).
func Answered(base, target string, timeout time.Duration) converge.Condition {
	return func(ctx context.Context) (bool, string, error) {
		res, err := probe.Via(ctx, base, target, timeout)
		if err != nil {
			return false, "", err
		}
		if res.Status == 0 {
			return false, res.Outcome + " " + res.Detail, nil
		}
		return true, fmt.Sprintf("HTTP %d", res.Status), nil
	}
}
