// Package probe asks a client pod to make one request and turns the answer
// into a claim outcome. The request is made inside the pod (the workload's
// /probe handler, fixtures/workload/probe), reached from the test host over
// a port-forward, so what is observed is what the mesh does to that pod's
// traffic.
package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/kube"
)

// Outcome values, the registry's outcome vocabulary.
const (
	NoHTTPResponse = "no-http-response" // connected, then reset or EOF
	Blocked        = "blocked"          // refused, or no answer before the timeout
)

// Result is one probe's outcome with the in-pod details.
type Result struct {
	wp.Result
	Outcome string
	Detail  string
}

// Header returns a response header ("" if absent).
func (r Result) Header(k string) string {
	if v := http.Header(r.Headers).Get(k); v != "" {
		return v
	}
	return ""
}

// Outcome maps an in-pod result to the registry's outcome vocabulary.
// Timeouts count as blocked whether or not the connect succeeded: in ambient
// mode the local ztunnel accepts every connect, so a NetworkPolicy drop shows
// as a read timeout (GUIDE's "i/o timeout").
func Outcome(r wp.Result) (outcome, detail string) {
	switch {
	case r.Status > 0:
		return fmt.Sprintf("http-%d", r.Status), ""
	case r.Cause == "reset" || r.Cause == "eof":
		return NoHTTPResponse, r.Error
	case r.Cause == "timeout" || r.Cause == "refused":
		return Blocked, r.Error
	default:
		return "error", r.Error
	}
}

// Client is a pod that runs the probe handler.
type Client struct {
	Namespace string
	Selector  string // e.g. app=fortio-client
	Port      int    // the workload's HTTP port (8080)
}

// From probes target from a pod of client c.
func From(ctx context.Context, k *kube.Cluster, c Client, target string, timeout time.Duration) (Result, error) {
	var r Result
	err := Forward(ctx, k, c, func(base string) (err error) {
		r, err = Via(ctx, base, target, timeout)
		return err
	})
	return r, err
}

// Forward opens a port-forward to a ready pod of client c and calls f with
// the handler's base URL (http://127.0.0.1:PORT).
func Forward(ctx context.Context, k *kube.Cluster, c Client, f func(base string) error) error {
	pod, err := k.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return err
	}
	addr, stop, err := k.PortForward(ctx, c.Namespace, pod.Name, c.Port)
	if err != nil {
		return err
	}
	defer stop()
	return f("http://" + addr)
}

// Via asks the probe handler at base (e.g. http://127.0.0.1:PORT) to probe target.
func Via(ctx context.Context, base, target string, timeout time.Duration) (Result, error) {
	var r Result
	err := call(ctx, base, url.Values{"url": {target}, "timeout": {timeout.String()}}, timeout+10*time.Second, &r.Result)
	r.Outcome, r.Detail = Outcome(r.Result)
	return r, err
}

// ManyVia makes n requests to target from the handler at base, each on a
// fresh connection (so per-connection L4 balancing shows), each carrying
// the request headers given as "Name:value".
func ManyVia(ctx context.Context, base, target string, n int, timeout time.Duration, headers ...string) ([]Result, error) {
	var m wp.Many
	q := url.Values{"url": {target}, "timeout": {timeout.String()}, "n": {fmt.Sprint(n)}}
	if len(headers) > 0 {
		q["header"] = headers
	}
	if err := call(ctx, base, q, time.Duration(n)*(timeout+time.Second), &m); err != nil {
		return nil, err
	}
	out := make([]Result, len(m.Results))
	for i, r := range m.Results {
		out[i].Result = r
		out[i].Outcome, out[i].Detail = Outcome(r)
	}
	return out, nil
}

// UntilVia repeats requests from the handler at base until target answers
// with status want or wait passes; WaitedMs is measured in the pod.
func UntilVia(ctx context.Context, base, target string, want int, wait, timeout time.Duration) (Result, error) {
	var r Result
	q := url.Values{"url": {target}, "timeout": {timeout.String()}, "until": {fmt.Sprint(want)}, "wait": {wait.String()}}
	err := call(ctx, base, q, wait+timeout+10*time.Second, &r.Result)
	r.Outcome, r.Detail = Outcome(r.Result)
	return r, err
}

func call(ctx context.Context, base string, q url.Values, limit time.Duration, out any) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	resp, err := get(ctx, base, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("probe handler at %s: %w", base, err)
	}
	return nil
}

// get asks the probe handler at base with query q; an answer other than
// 200 is an error carrying the start of its body (the handler's reason).
func get(ctx context.Context, base string, q url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+wp.ProbePath+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe handler at %s: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("probe handler at %s answered %s: %s", base, resp.Status, b)
	}
	return resp, nil
}
