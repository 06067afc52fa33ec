package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/scenario"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/progress"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Load runs a fortio load from client c (through its REST API over a
// port-forward), keeps the raw JSON and options in the results directory and
// returns the run with the causes of every -1 read from the client's log.
func Load(ctx context.Context, r *spec.Run, c probe.Client, name string, s load.Spec) (*load.Run, error) {
	run, err := runLoad(ctx, r, c, name, s, nil)
	if err != nil {
		return nil, err
	}
	r.Ran(loadplan.LoadRan{Load: Declared(modeOf(c), name, s), Took: run.Result.ActualDuration, Requests: run.Result.Requests(), Stopped: StoppedFull})
	return run, nil
}

// StoppedFull is the stopping reason of a load that ran its whole duration.
const StoppedFull = "full duration"

// modeOf is the mode whose namespace client c runs in ("" when none).
func modeOf(c probe.Client) mode.Mode {
	for _, m := range mode.All() {
		if m.Namespace() == c.Namespace {
			return m
		}
	}
	return ""
}

// runLoad is Load without recording it on the spec's loads: callers that
// record more (restart cycles, the stopping rule) record it themselves.
// Closing stop (when not nil) ends the load early with what ran so far.
func runLoad(ctx context.Context, r *spec.Run, c probe.Client, name string, s load.Spec, stop <-chan struct{}) (*load.Run, error) {
	eng, rawDir, done, err := ClientEngine(ctx, r, c, "meshclaims-load-")
	if err != nil {
		return nil, err
	}
	defer done()
	if stop != nil {
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			select {
			case <-stop:
				eng.Stop()
			case <-finished:
			}
		}()
	}
	r.Logf("load %s: %s, %g qps, %d connections, %s", name, s.URL, s.QPS, s.Connections, s.Duration)
	stopTicks := progress.Every(progress.LoadInterval(s.Duration), func(el time.Duration) {
		r.Logf("load %s: %s of %s", name, progress.Duration(el), s.Duration)
	})
	run, err := eng.Run(ctx, name, s)
	stopTicks()
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	opts, _ := os.ReadFile(filepath.Join(rawDir, name+".options.json"))
	if err := r.SaveRaw(name, run.Raw, jsonRaw(opts)); err != nil {
		return nil, err
	}
	r.Logf("load %s done: %d requests, codes %v, sockets %d, -1 causes %v, dead-socket retries %d",
		name, run.Result.Requests(), run.Result.RetCodes, run.Result.SocketCount, run.Causes, run.DeadSocketRetries)
	return run, nil
}

// ClientEngine is a load engine on client c's fortio, reached over a
// port-forward to one of its ready pods, writing its raw files into a
// temporary directory; done stops the forward and removes the directory.
func ClientEngine(ctx context.Context, r *spec.Run, c probe.Client, tmpPrefix string) (eng *load.Engine, rawDir string, done func(), err error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return nil, "", nil, err
	}
	pod, err := m.Kube.OneReadyPod(ctx, c.Namespace, c.Selector)
	if err != nil {
		return nil, "", nil, err
	}
	addr, stop, err := m.Kube.PortForward(ctx, c.Namespace, pod.Name, c.Port)
	if err != nil {
		return nil, "", nil, err
	}
	rawDir, err = os.MkdirTemp("", tmpPrefix)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	done = func() { stop(); os.RemoveAll(rawDir) }
	eng, err = load.New(load.Config{
		BaseURL: "http://" + addr + "/fortio/",
		Logs:    load.PodLogs{Client: m.Kube.Client, Namespace: c.Namespace, Pod: pod.Name},
		RawDir:  rawDir,
	})
	if err != nil {
		done()
		return nil, "", nil, err
	}
	return eng, rawDir, done, nil
}

// jsonRaw passes recorded options through unchanged.
type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// SteadyFloor is the shortest steady load: 25 s at 200 qps is 5,000
// requests, enough for zero errors to put the 95% upper bound of the error
// rate (3.84/n) under latency.all-ok's 0.1%. A shorter run could only ever
// be inconclusive.
const SteadyFloor = 25 * time.Second

// SetupLoad is the load the claim's registry setup states (qps, or no limit
// when saturate; connections; duration) against url, its duration scaled by
// -duration-scale and never below floor. The registry is the one place a
// load's numbers are written; a setup that lacks one is an error naming it.
func SetupLoad(r *spec.Run, url string, floor time.Duration) (load.Spec, error) {
	s := r.Claim.Setup
	var missing []string
	if s.QPS <= 0 && !s.Saturate {
		missing = append(missing, "qps (or saturate: true)")
	}
	if s.Connections <= 0 {
		missing = append(missing, "connections")
	}
	d, err := time.ParseDuration(s.Duration)
	if err != nil || d <= 0 {
		missing = append(missing, "duration")
	}
	if len(missing) > 0 {
		return load.Spec{}, fmt.Errorf("claim %s: its registry setup states no %s, so no load can be built from it", r.Claim.ID, strings.Join(missing, ", "))
	}
	qps := s.QPS
	if s.Saturate {
		qps = 0
	}
	return load.Spec{URL: url, QPS: qps, Connections: s.Connections, Duration: r.Env.Config.Scale(d, floor)}, nil
}

// LatencyLoad is SetupLoad recorded at load.LatencyResolution: for the
// loads whose percentiles are the claim (T5, HYBRID's latency and
// throughput), where 0.1 ms buckets would turn percentiles into bucket
// positions. Rollout and retry loads keep fortio's default, since their
// 10-100 ms calls would land in 10-25 ms buckets at 10 µs.
func LatencyLoad(r *spec.Run, url string, floor time.Duration) (load.Spec, error) {
	s, err := SetupLoad(r, url, floor)
	s.Resolution = load.LatencyResolution
	return s, err
}

// Steady is GUIDE T5's load as latency.percentiles' setup states it (200
// qps, 16 connections, 60 s), scaled (never below SteadyFloor), against the
// mode's echo Service, at load.LatencyResolution.
func Steady(r *spec.Run) (load.Spec, error) {
	return LatencyLoad(r, scenario.EchoURL(r), SteadyFloor)
}

// DescribeLoad says what a load ran beside what the claim documents, for
// the report's setup column.
func DescribeLoad(r *spec.Run, s load.Spec) string {
	rate := fmt.Sprintf("%g qps", s.QPS)
	if s.QPS == 0 {
		rate = "no qps limit"
	}
	doc := r.Claim.Setup
	return fmt.Sprintf("%s, %d connections, %s (documented: %s; -duration-scale=%g)", rate, s.Connections, s.Duration, documentedLoad(doc), r.Env.Config.DurationScale)
}

func documentedLoad(s claims.Setup) string {
	rate := fmt.Sprintf("%g qps", s.QPS)
	if s.Saturate {
		rate = "saturated"
	}
	return fmt.Sprintf("%s, %d connections, %s", rate, s.Connections, s.Duration)
}

// Percentiles returns fortio's percentiles of a run in ms, keyed "50", "99.9".
func Percentiles(run *load.Run) map[string]float64 {
	out := map[string]float64{}
	for _, p := range load.DefaultPercentiles {
		if v, ok := run.Result.Percentile(p); ok {
			out[strconv.FormatFloat(p, 'f', -1, 64)] = v * 1000
		}
	}
	return out
}

// MeanMs is the run's exact mean latency in ms.
func MeanMs(run *load.Run) float64 {
	if run.Result.DurationHistogram == nil {
		return 0
	}
	return run.Result.DurationHistogram.Avg * 1000
}

// Rates turns a run into a rate measurement: code's count (e.g. 503) and -1 of
// all requests, with sockets and the causes of -1 as extra numbers.
func Rates(run *load.Run, code int) verdict.Measurement {
	total := run.Result.Requests()
	m := verdict.Measurement{
		Count:      verdict.Int64(run.Result.RetCodes[code]),
		Total:      verdict.Int64(total),
		NoResponse: verdict.Int64(run.SocketErrors()),
		Extra: map[string]float64{
			"sockets":             float64(run.Result.SocketCount),
			"connections":         float64(run.Result.NumThreads),
			"mean_ms":             MeanMs(run),
			"dead_socket_retries": float64(run.DeadSocketRetries),
		},
	}
	for cause, n := range run.Causes {
		m.Extra["no_response_"+string(cause)] = float64(n)
	}
	return m
}

// NonOK counts every answer that is not 200 (the latency.all-ok claim).
func NonOK(run *load.Run) verdict.Measurement {
	var bad int64
	for code, n := range run.Result.RetCodes {
		if code != 200 {
			bad += n
		}
	}
	return verdict.Measurement{Count: verdict.Int64(bad), Total: verdict.Int64(run.Result.Requests())}
}
