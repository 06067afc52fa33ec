// Package fortiotest produces REAL fortio HTTP and gRPC results for tests:
// it starts fortio's own echo handler (or gRPC ping server) on 127.0.0.1,
// drives it with fortio's own runner (fhttp.RunHTTPTest, fgrpc.RunGRPCTest),
// and writes the result as `fortio load -json` does. Tests of anything that reads fortio files (fortioresult, reports, the
// analyze command) use it instead of hand-written JSON, so they break if
// fortio's format or numbers change.
//
// All traffic stays on loopback. Runs are short (1 s by default). Run changes
// fortio's global log level for its duration, so do not call it from parallel
// tests.
package fortiotest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"
)

// DefaultPercentiles are the percentiles the claims are stated in.
var DefaultPercentiles = []float64{50, 75, 90, 99, 99.9}

// Config is what a Run does; build it with Options.
type Config struct {
	QPS         float64       // requested qps; 0 = fortio "max" (no limit)
	Duration    time.Duration // length of the run
	Connections int           // fortio -c
	Resolution  float64       // histogram resolution in seconds (fortio -r)
	Percentiles []float64     // empty (non-nil) = fortio computes none
	// Status is the echo server's status query, e.g. "503:20" for 20% 503s.
	Status string
	// Delay is the echo server's delay query, e.g. "2ms".
	Delay string
	// KillBackendAfter, if > 0, closes the backend's listener and drops all
	// its connections that long into the run: later calls get no HTTP
	// response (-1) and every retry opens a new socket.
	KillBackendAfter time.Duration
	Labels           string
	// Dir is where the JSON file goes; default t.TempDir().
	Dir string
	// Quiet lowers fortio's log level to Critical during the run, so expected
	// connection errors do not flood the test output.
	Quiet bool
	// Streams is the gRPC streams per connection (fortio -s); 0 means 1.
	Streams int
	// GRPCHealth, if set, makes a gRPC run call the standard health service
	// with this service name instead of fortio's ping.
	GRPCHealth string
}

// Option changes a Config.
type Option func(*Config)

// WithQPS sets the requested qps (0 = max).
func WithQPS(qps float64) Option { return func(c *Config) { c.QPS = qps } }

// WithDuration sets the run length.
func WithDuration(d time.Duration) Option { return func(c *Config) { c.Duration = d } }

// WithConnections sets the number of connections (fortio -c).
func WithConnections(n int) Option { return func(c *Config) { c.Connections = n } }

// WithResolution sets the histogram resolution in seconds (fortio -r).
func WithResolution(r float64) Option { return func(c *Config) { c.Resolution = r } }

// WithPercentiles sets the percentiles fortio computes; none at all with no arguments.
func WithPercentiles(p ...float64) Option {
	return func(c *Config) { c.Percentiles = append([]float64{}, p...) }
}

// WithStatus makes the echo server answer per fortio's status syntax ("503:20").
func WithStatus(s string) Option { return func(c *Config) { c.Status = s } }

// WithDelay makes the echo server delay each answer per fortio's delay syntax ("2ms").
func WithDelay(d string) Option { return func(c *Config) { c.Delay = d } }

// WithKillBackendAfter kills the backend d into the run.
func WithKillBackendAfter(d time.Duration) Option {
	return func(c *Config) { c.KillBackendAfter = d; c.Quiet = true }
}

// WithLabels sets fortio's Labels (also used for the file name).
func WithLabels(l string) Option { return func(c *Config) { c.Labels = l } }

// WithDir writes the result file into dir instead of t.TempDir().
func WithDir(dir string) Option { return func(c *Config) { c.Dir = dir } }

// WithStreams sets the gRPC streams per connection (fortio -s).
func WithStreams(n int) Option { return func(c *Config) { c.Streams = n } }

// WithGRPCHealth makes a gRPC run a health check of service (e.g.
// GRPCHealthDown for NOT_SERVING answers) instead of ping.
func WithGRPCHealth(service string) Option { return func(c *Config) { c.GRPCHealth = service } }

// WithQuiet lowers fortio's log level during the run.
func WithQuiet() Option { return func(c *Config) { c.Quiet = true } }

func defaults() Config {
	return Config{
		QPS:         200,
		Duration:    time.Second,
		Connections: 4,
		Resolution:  0.0001,
		Percentiles: DefaultPercentiles,
		Labels:      "fortiotest",
	}
}

// Run performs one real fortio run against a fresh echo backend on
// 127.0.0.1 and writes the result, indented as `fortio load -json` writes it,
// to a file whose path it returns alongside fortio's in-memory result. Any
// failure fails t.
func Run(t testing.TB, opts ...Option) (path string, res *fhttp.HTTPRunnerResults) {
	t.Helper()
	return runAndWrite(t, opts, RunConfig)
}

// runAndWrite applies opts, performs one run with do and writes its result
// (Run and RunGRPC differ only in the runner). Any failure fails t.
func runAndWrite[R periodic.HasRunnerResult](t testing.TB, opts []Option, do func(Config) (R, error)) (string, R) {
	t.Helper()
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	res, err := do(cfg)
	if err != nil {
		t.Fatalf("fortiotest: %v", err)
	}
	dir := cfg.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	path, err := WriteResult(dir, cfg.Labels, res)
	if err != nil {
		t.Fatalf("fortiotest: %v", err)
	}
	return path, res
}

// RunConfig is Run without testing.TB, for benchmarks and examples: it
// returns fortio's result and writes nothing.
func RunConfig(cfg Config) (*fhttp.HTTPRunnerResults, error) {
	if cfg.Connections < 1 {
		return nil, fmt.Errorf("connections %d: must be >= 1", cfg.Connections)
	}
	if cfg.Duration <= 0 {
		return nil, fmt.Errorf("duration %v: must be > 0", cfg.Duration)
	}
	if cfg.QPS < 0 {
		return nil, fmt.Errorf("qps %v: must be >= 0 (0 = max)", cfg.QPS)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo/", fhttp.EchoHandler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Errf("fortiotest: echo server: %v", err)
		}
	}()

	url := fmt.Sprintf("http://%s/echo/", ln.Addr())
	query := ""
	if cfg.Status != "" {
		query += "status=" + cfg.Status
	}
	if cfg.Delay != "" {
		if query != "" {
			query += "&"
		}
		query += "delay=" + cfg.Delay
	}
	if query != "" {
		url += "?" + query
	}

	if cfg.Quiet {
		prev := log.SetLogLevelQuiet(log.Critical)
		defer log.SetLogLevelQuiet(prev)
	}
	o := fhttp.HTTPRunnerOptions{}
	o.URL = url
	o.QPS = cfg.QPS
	if cfg.QPS == 0 {
		o.QPS = -1 // fortio: negative = max speed (0 would mean its default 8 qps)
	}
	o.Duration = cfg.Duration
	o.NumThreads = cfg.Connections
	o.RunnerOptions.Resolution = cfg.Resolution // as the CLI -r flag does; fortio copies it to HTTPOptions
	o.Percentiles = cfg.Percentiles
	if o.Percentiles == nil {
		o.Percentiles = DefaultPercentiles
	}
	o.Labels = cfg.Labels
	o.Out = io.Discard // fortio's text report; the JSON is what we keep
	// Injected errors and the kill make early calls fail too; that is the point.
	o.AllowInitialErrors = true
	if cfg.KillBackendAfter > 0 {
		// Connect attempts to a closed port fail at once; a short timeout
		// bounds the run if the kernel ever drops them instead.
		o.HTTPReqTimeOut = 500 * time.Millisecond
		kill := time.AfterFunc(cfg.KillBackendAfter, func() { _ = srv.Close() })
		defer kill.Stop()
	}
	res, err := fhttp.RunHTTPTest(&o)
	if err != nil {
		return nil, fmt.Errorf("fortio run against %s: %w", url, err)
	}
	return res, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WriteResult writes res (an HTTP or gRPC result) into dir as fortio's CLI
// does (json.MarshalIndent, two spaces) and returns the file's path.
func WriteResult(dir, labels string, res periodic.HasRunnerResult) (string, error) {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return "", fmt.Errorf("marshalling fortio result: %w", err)
	}
	name := unsafeName.ReplaceAllString(labels, "_")
	if name == "" {
		name = "fortio"
	}
	f, err := os.CreateTemp(dir, name+"-*.json")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return filepath.Clean(f.Name()), nil
}

// ensure the runner type is the one fortio's CLI uses.
var _ periodic.HasRunnerResult = (*fhttp.HTTPRunnerResults)(nil)

// GRPCHealthDown is the health service fortio's ping server reports as
// NOT_SERVING (fgrpc.PingServer registers "<name>_down" so).
const GRPCHealthDown = fgrpc.DefaultHealthServiceName + "_down"

// pingServer is fortio's own gRPC ping and health server (fgrpc.PingServer)
// on 127.0.0.1, started once per test binary: fgrpc gives no handle to stop
// it, and it is stateless, so every gRPC run shares it.
var pingServer = sync.OnceValues(func() (string, error) {
	addr := fgrpc.PingServer("127.0.0.1:0", fgrpc.DefaultHealthServiceName, 0, &fhttp.TLSOptions{})
	if addr == nil {
		return "", errors.New("fgrpc.PingServer could not listen on 127.0.0.1 (see fortio's log)")
	}
	return addr.String(), nil
})

// RunGRPC performs one real fortio gRPC run (fgrpc.RunGRPCTest, what
// `fortio load -grpc` and the REST API's runner=grpc do) against fortio's
// ping server on 127.0.0.1 and writes the result as `fortio load -json`
// does. With WithGRPCHealth it calls the standard health service instead of
// ping. Status and KillBackendAfter do not apply to gRPC and are refused.
func RunGRPC(t testing.TB, opts ...Option) (path string, res *fgrpc.GRPCRunnerResults) {
	t.Helper()
	return runAndWrite(t, opts, RunGRPCConfig)
}

// RunGRPCConfig is RunGRPC without testing.TB: it returns fortio's result
// and writes nothing.
func RunGRPCConfig(cfg Config) (*fgrpc.GRPCRunnerResults, error) {
	switch {
	case cfg.Connections < 1:
		return nil, fmt.Errorf("connections %d: must be >= 1", cfg.Connections)
	case cfg.Duration <= 0:
		return nil, fmt.Errorf("duration %v: must be > 0", cfg.Duration)
	case cfg.QPS < 0:
		return nil, fmt.Errorf("qps %v: must be >= 0 (0 = max)", cfg.QPS)
	case cfg.Status != "":
		return nil, fmt.Errorf("status %q: the gRPC ping server has no status injection (use WithGRPCHealth(%q) for NOT_SERVING)", cfg.Status, GRPCHealthDown)
	case cfg.KillBackendAfter > 0:
		return nil, errors.New("kill-backend-after: not supported for gRPC runs (fortio's ping server cannot be stopped)")
	}
	var delay time.Duration
	if cfg.Delay != "" {
		d, err := time.ParseDuration(cfg.Delay)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("delay %q: accepted: a Go duration >= 0 such as \"2ms\" (sent as the ping's delay)", cfg.Delay)
		}
		if cfg.GRPCHealth != "" && d > 0 {
			return nil, fmt.Errorf("delay %q: only the ping service delays; a health check (%q) cannot", cfg.Delay, cfg.GRPCHealth)
		}
		delay = d
	}
	addr, err := pingServer()
	if err != nil {
		return nil, err
	}
	if cfg.Quiet {
		prev := log.SetLogLevelQuiet(log.Critical)
		defer log.SetLogLevelQuiet(prev)
	}
	o := fgrpc.GRPCRunnerOptions{}
	o.Destination = addr
	o.UsePing = cfg.GRPCHealth == ""
	o.Service = cfg.GRPCHealth
	o.Delay = delay
	o.Streams = cfg.Streams
	o.QPS = cfg.QPS
	if cfg.QPS == 0 {
		o.QPS = -1 // fortio: negative = max speed
	}
	o.Duration = cfg.Duration
	o.NumThreads = cfg.Connections
	o.Resolution = cfg.Resolution
	o.Percentiles = cfg.Percentiles
	if o.Percentiles == nil {
		o.Percentiles = DefaultPercentiles
	}
	o.Labels = cfg.Labels
	o.Out = io.Discard
	o.AllowInitialErrors = true // a NOT_SERVING health check is the point of that run
	res, err := fgrpc.RunGRPCTest(&o)
	if err != nil {
		return nil, fmt.Errorf("fortio gRPC run against %s: %w", addr, err)
	}
	return res, nil
}

// ensure the gRPC runner's result is one fortio's CLI writes.
var _ periodic.HasRunnerResult = (*fgrpc.GRPCRunnerResults)(nil)
