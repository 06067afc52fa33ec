package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// clientGet GETs a path of client c's workload over a port-forward, keeps
// the answer as a raw result and decodes its JSON.
func clientGet(ctx context.Context, r *spec.Run, c probe.Client, path string, q url.Values, timeout time.Duration, out any) error {
	return podCall(ctx, r, c, http.MethodGet, path, q, timeout, true, out)
}

// podCall calls a workload's HTTP API (fortio REST, /download, collector,
// order-client) over a port-forward; out may be nil. With keep, the answer
// is saved among the run's raw results.
func podCall(ctx context.Context, r *spec.Run, c probe.Client, method, path string, q url.Values, timeout time.Duration, keep bool, out any) error {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return err
	}
	return probe.Forward(ctx, m.Kube, c, func(base string) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		u := base + path
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s on %s (%s): %s: %s", method, path, c.Namespace, c.Selector, resp.Status, body)
		}
		if keep {
			if err := r.SaveRaw(strings.TrimPrefix(strings.ReplaceAll(path, "/", "_"), "_"), body, q); err != nil {
				return err
			}
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(body, out)
	})
}

// Download has client c read one response to its end and report MB/s.
func Download(ctx context.Context, r *spec.Run, c probe.Client, target string) (wp.Download, error) {
	var d wp.Download
	err := clientGet(ctx, r, c, wp.DownloadPath, url.Values{"url": {target}, "timeout": {"5m"}}, 6*time.Minute, &d)
	if err == nil && (d.Error != "" || d.Status != 200) {
		err = fmt.Errorf("download of %s from %s: status %d: %s", target, c.Namespace, d.Status, d.Error)
	}
	if err == nil {
		r.Logf("download %s: %d bytes in %.3fs = %.0f MB/s", target, d.Bytes, d.Seconds, d.MBps)
	}
	return d, err
}

// SSEIntervals has client c read an event stream and returns the arrival
// intervals in ms.
func SSEIntervals(ctx context.Context, r *spec.Run, c probe.Client, target string) ([]float64, error) {
	var s wp.SSEIntervals
	if err := clientGet(ctx, r, c, wp.SSEIntervalsPath, url.Values{"url": {target}, "timeout": {"2m"}}, 3*time.Minute, &s); err != nil {
		return nil, err
	}
	if s.Error != "" {
		return nil, fmt.Errorf("event stream %s: %s", target, s.Error)
	}
	if len(s.IntervalsMs) == 0 {
		return nil, fmt.Errorf("event stream %s delivered %d events", target, s.Events)
	}
	return s.IntervalsMs, nil
}

// grpcLoadQuery is the REST query of a gRPC ping load, recorded at
// load.LatencyResolution (its mean and percentiles are the claim).
func grpcLoadQuery(name, target string, qps float64, conns int, d time.Duration) url.Values {
	return url.Values{
		"runner": {"grpc"}, "url": {target}, "ping": {"on"}, "qps": {fmt.Sprint(qps)},
		"c": {fmt.Sprint(conns)}, "t": {d.String()}, "labels": {name},
		"r": {strconv.FormatFloat(load.LatencyResolution, 'g', -1, 64)},
	}
}

// GRPCLoad runs fortio's gRPC ping runner from client c against target
// (host:port) and returns the mean latency in ms. It calls the REST API
// directly: the load engine speaks the HTTP runner's result format only.
func GRPCLoad(ctx context.Context, r *spec.Run, c probe.Client, name, target string, qps float64, conns int, d time.Duration) (float64, error) {
	q := grpcLoadQuery(name, target, qps, conns, d)
	var raw json.RawMessage
	if err := clientGet(ctx, r, c, "/fortio/rest/run", q, d+2*time.Minute, &raw); err != nil {
		return 0, err
	}
	return grpcMeanMs(r, name, raw)
}

// grpcMeanMs reads a gRPC load's reply with the analyzer's checks (the same
// as `meshclaims analyze` applies to the kept raw result) and returns its
// mean latency in ms; calls that were not SERVING and the analyzer's
// warnings are logged.
func grpcMeanMs(r *spec.Run, name string, raw []byte) (float64, error) {
	res, err := fortioresult.Parse("gRPC load "+name, raw)
	if err != nil {
		return 0, err
	}
	if res.Protocol() != fortioresult.ProtocolGRPC {
		return 0, fmt.Errorf("gRPC load %s: fortio answered with a %q run, want a gRPC one", name, res.RunType)
	}
	s := fortioresult.Summarize(res)
	if s.Requests == 0 {
		return 0, fmt.Errorf("gRPC load %s made no calls (codes %v)", name, s.Codes)
	}
	if bad := s.Requests - s.Codes[fortioresult.GRPCServing]; bad > 0 {
		r.Logf("gRPC load %s: %d of %d calls not %s (%v)", name, bad, s.Requests, fortioresult.GRPCServing, s.Codes)
	}
	for _, w := range s.Warnings {
		r.Logf("gRPC load %s: %s", name, w)
	}
	r.Logf("gRPC load %s: Little's law %s: %s", name, s.Little.Verdict, s.Little.Reason)
	return s.MeanMs, nil
}
