package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
)

// Config says where the fortio client is and how to reach it.
type Config struct {
	// BaseURL is the client's fortio UI/REST base, e.g.
	// http://127.0.0.1:8080/fortio/ (a port-forward) or the loopback address
	// of an in-process client. A URL without a path gets "/fortio/".
	BaseURL string
	// Transport carries the REST calls; nil means plain TCP without proxies.
	Transport http.RoundTripper
	// Logs is the client's log; required, since the causes of -1 come from it.
	Logs LogSource
	// RawDir receives <name>.json and <name>.options.json for every run;
	// created if missing. Required.
	RawDir string
	// LogWait bounds how long Run waits for the run's "Run ended" line to
	// show up in Logs (a pod's log reaches the API a little later than the
	// REST reply). 0 means 10 s.
	LogWait time.Duration
}

// Engine runs loads through one fortio client's REST API.
type Engine struct {
	runURL  string
	stopURL string
	loadURL string // the workload client's echo.LoadPath
	client  *http.Client
	logs    LogSource
	rawDir  string
	logWait time.Duration
}

// New checks cfg and returns an Engine.
func New(cfg Config) (*Engine, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("load.Config.BaseURL = %q: accepted: an http(s) URL of the fortio client, e.g. http://127.0.0.1:8080/fortio/", cfg.BaseURL)
	}
	if cfg.Logs == nil {
		return nil, errors.New("load.Config.Logs = nil: a LogSource is required (PodLogs in a cluster, CaptureFortioLog on loopback); the causes of -1 come from it")
	}
	if cfg.RawDir == "" {
		return nil, errors.New(`load.Config.RawDir = "": a directory for the raw results is required`)
	}
	if err := os.MkdirAll(cfg.RawDir, 0o755); err != nil {
		return nil, fmt.Errorf("load.Config.RawDir = %q: %w", cfg.RawDir, err)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/fortio/"
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawQuery, u.Fragment = "", ""
	root := url.URL{Scheme: u.Scheme, Host: u.Host, Path: echo.LoadPath}
	rt := cfg.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil // a port-forward or loopback address must never go through a proxy
		rt = t
	}
	wait := cfg.LogWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	return &Engine{
		runURL:  u.String() + "rest/run",
		stopURL: u.String() + "rest/stop",
		loadURL: root.String(),
		client:  &http.Client{Transport: rt},
		logs:    cfg.Logs,
		rawDir:  cfg.RawDir,
		logWait: wait,
	}, nil
}

// Run is one load and everything known about it.
type Run struct {
	Name   string
	Spec   Spec   // normalized: what actually ran
	Raw    []byte // the client's reply, byte for byte (also <name>.json)
	Result *Result
	// Causes counts the measured phase's -1s by cause, from the client's
	// log. When the log explains fewer -1s than RetCodes[-1], the rest are
	// counted as CauseUnattributed, so the counts always sum to at least
	// RetCodes[-1].
	Causes map[Cause]int
	// Failures are the -1s the log explains, with their time (client clock).
	Failures []Event
	// NonOK are the non-2xx answers with their time and code, when the
	// spec set LogErrors (else empty).
	NonOK []Event
	// WarmupCauses counts -1s of fortio's warm-up calls (not in RetCodes).
	WarmupCauses map[Cause]int
	// DeadSocketRetries counts fortio's silent retries on dead keep-alive
	// sockets; DeadSocketCauses says what killed them.
	DeadSocketRetries int
	DeadSocketCauses  map[Cause]int
	Retries           []Event
	// LogsComplete is true when the client's "Run ended" line for this run
	// was found, i.e. the log covered the whole run.
	LogsComplete bool
	// Start and End bracket the REST call on the engine's clock.
	Start, End time.Time
}

// FailureTimes are the times of the explained -1s, for rollout.CountPerCycle.
func (r *Run) FailureTimes() []time.Time {
	ts := make([]time.Time, 0, len(r.Failures))
	for _, f := range r.Failures {
		if !f.Time.IsZero() {
			ts = append(ts, f.Time)
		}
	}
	return ts
}

// SocketErrors is RetCodes[-1]: requests that got no HTTP response.
func (r *Run) SocketErrors() int64 { return r.Result.RetCodes[-1] }

// recordedOptions is <name>.options.json: what produced <name>.json.
type recordedOptions struct {
	Name      string
	Endpoint  string         // the REST URL called
	Body      map[string]any // the exact JSON body sent
	Spec      Spec           // normalized
	Start     time.Time
	End       time.Time
	Preflight *preflightRecord `json:",omitempty"`
}

type preflightRecord struct {
	Body     map[string]any
	RetCodes map[int]int64
}

// Run validates spec, runs it and returns the result. The raw reply and the
// options are written to the raw directory even when the run fails, as long
// as the client replied; an existing <name>.json is never overwritten.
//
// When spec.AllowInitialErrors is false, Run first sends a preflight of
// exactly spec.Connections requests (fortio -n, one per connection as in
// fortio's own warm-up) and returns an error, without running the load,
// unless all of them are 2xx. fortio's REST API cannot do this itself: it
// always sets AllowInitialErrors. (RunFortioLoad gets fortio's own warm-up
// abort, through the workload client's echo.LoadPath.)
func (e *Engine) Run(ctx context.Context, name string, spec Spec) (*Run, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	rawPath := filepath.Join(e.rawDir, name+".json")
	optPath := filepath.Join(e.rawDir, name+".options.json")
	for _, p := range []string{rawPath, optPath} {
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("load: run %q: %s already exists; raw results are never overwritten, use a new name", name, p)
		}
	}
	spec = spec.Normalized()
	opts := recordedOptions{Name: name, Endpoint: e.runURL, Body: spec.restBody(), Spec: spec}

	if !spec.AllowInitialErrors {
		pf, err := e.preflight(ctx, spec)
		if pf != nil {
			opts.Preflight = pf
		}
		if err != nil {
			_ = writeJSONFile(optPath, opts)
			return nil, fmt.Errorf("load: run %q: %w", name, err)
		}
	}

	run := &Run{Name: name, Spec: spec}
	raw, start, end, err := e.post(ctx, opts.Body, spec.Duration)
	run.Raw, run.Start, run.End = raw, start, end
	opts.Start, opts.End = start, end
	if raw != nil {
		if werr := os.WriteFile(rawPath, raw, 0o644); werr != nil {
			return run, fmt.Errorf("load: run %q: keeping raw result: %w", name, werr)
		}
	}
	if werr := writeJSONFile(optPath, opts); werr != nil {
		return run, fmt.Errorf("load: run %q: keeping options: %w", name, werr)
	}
	if err != nil {
		return run, fmt.Errorf("load: run %q: %w", name, err)
	}
	res, err := decodeResult(raw)
	run.Result = res
	if err != nil {
		return run, fmt.Errorf("load: run %q: %w", name, err)
	}
	if err := e.attribute(ctx, run); err != nil {
		return run, fmt.Errorf("load: run %q: %w", name, err)
	}
	return run, nil
}

// attribute reads the client's log for the run and fills the cause fields.
func (e *Engine) attribute(ctx context.Context, run *Run) error {
	deadline := time.Now().Add(e.logWait)
	var a Attribution
	for {
		// The window is padded: the client's clock and ours may differ a
		// little; lines are matched by run id anyway.
		text, err := e.logs.Logs(ctx, run.Start.Add(-2*time.Second), time.Now().Add(2*time.Second))
		if err != nil {
			return fmt.Errorf("reading the client's log: %w", err)
		}
		a = Classify(text, run.Result.RunID, run.Result.StartTime)
		if a.RunEnded || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	run.LogsComplete = a.RunEnded
	run.Failures, run.Retries, run.NonOK = a.Failures, a.Retries, a.NonOK
	run.Causes = Count(a.Failures)
	if missing := int(run.Result.RetCodes[-1]) - len(a.Failures); missing > 0 {
		run.Causes[CauseUnattributed] += missing
	}
	run.WarmupCauses = Count(a.Warmup)
	run.DeadSocketRetries = len(a.Retries)
	run.DeadSocketCauses = Count(a.Retries)
	return nil
}

// preflight emulates fortio's abort-on-initial-error warm-up.
func (e *Engine) preflight(ctx context.Context, spec Spec) (*preflightRecord, error) {
	body := spec.restBody()
	body["n"] = fmt.Sprint(spec.Connections)
	delete(body, "t")
	body["qps"] = "-1"
	raw, _, _, err := e.post(ctx, body, 0)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	res, err := decodeResult(raw)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	pf := &preflightRecord{Body: body, RetCodes: res.RetCodes}
	var bad []string
	for code, n := range res.RetCodes {
		if !(code >= 200 && code <= 299) && code != http.StatusTeapot {
			bad = append(bad, fmt.Sprintf("%d x%d", code, n))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return pf, fmt.Errorf("preflight of %d requests to %s got non-2xx codes %v; set AllowInitialErrors to run anyway", spec.Connections, spec.URL, bad)
	}
	return pf, nil
}

// post calls /rest/run synchronously. The HTTP call may last the whole load,
// so it gets the load's duration plus a margin; if ctx ends first, every run
// on the client is stopped (the client is dedicated to the engine).
func (e *Engine) post(ctx context.Context, body map[string]any, dur time.Duration) ([]byte, time.Time, time.Time, error) {
	return e.postTo(ctx, e.runURL, body, dur)
}

// postTo is post to endpoint, which takes body as JSON.
func (e *Engine) postTo(ctx context.Context, endpoint string, body any, dur time.Duration) ([]byte, time.Time, time.Time, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, dur+dur/2+60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := e.client.Do(req)
	if err != nil {
		end := time.Now()
		if cctx.Err() != nil {
			e.stopAll()
		}
		return nil, start, end, fmt.Errorf("POST %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	end := time.Now()
	if err != nil {
		if cctx.Err() != nil {
			e.stopAll()
		}
		return raw, start, end, fmt.Errorf("POST %s: reading reply: %w", endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return raw, start, end, fmt.Errorf("POST %s: HTTP %d: %.300s", endpoint, resp.StatusCode, raw)
	}
	return raw, start, end, nil
}

// Stop ends the run in progress on the client early (fortio's rest/stop):
// its /rest/run call then returns the result of what ran so far, so a
// load whose verdict is already certain ends with its data kept.
func (e *Engine) Stop() { e.stopAll() }

func (e *Engine) stopAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.stopURL, nil)
	if err != nil {
		return
	}
	if resp, err := e.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
