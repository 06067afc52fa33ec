package method

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// GUIDE's method lesson: 'Without -allow-initial-errors, fortio aborts the
// entire run if its warmup request happens to land during a rollout and
// gets a 503.' A rollout's 503 lands on a warm-up only by chance (a first
// attempt saw none in 12 warm-ups), so the check provokes it: each load
// starts at the moment its target fails its first requests, as a pod the
// Service already points at while it is replaced. echo's StartingPath
// answers 503 through initialErrorsWindow after a key's first request, then
// 200; the two loads get two keys, so both meet the same condition from
// their first request. The loads run in the client pod as `fortio load`
// runs them (echo.LoadPath: fortio's RunHTTPTest, whose warm-up is one
// request per connection and fails on any code but 2xx or 418), so the
// abort, or its absence, is fortio's own.

// initialErrorsWindow is how long the starting target fails a key's first
// requests: well past fortio's warm-up (one request per connection, in
// parallel) and a sidecar's retries of a 503 (25 ms backoff, 2 retries).
const initialErrorsWindow = 2 * time.Second

// initialErrorsFloor is the shortest load: the load with the flag must
// outlast the window to show the target recover.
const initialErrorsFloor = 2 * initialErrorsWindow

// startingURL is base's StartingPath failing key's first requests for window.
func startingURL(base, key string, window time.Duration) string {
	return strings.TrimSuffix(base, "/") + echo.StartingPath + "?" + url.Values{"key": {key}, "for": {window.String()}}.Encode()
}

// judgeInitialErrors judges the two loads made against the same provoked
// condition: strict without -allow-initial-errors, allowed with it.
//
//   - allowed aborted: an error (the client broke; the lesson says nothing).
//   - allowed got no 503 or no 200: Unmet, inconclusive (the condition did
//     not reach the loads as provoked: no window, or a target that never
//     came up, whose 503s are not the window's).
//   - strict aborted on fortio's "warmup error" naming the 503: verified.
//   - strict aborted on something else: Unmet (another condition).
//   - strict ran to its end: not verified (fortio did not abort).
func judgeInitialErrors(strict, allowed *load.FortioLoad) (verdict.Measurement, error) {
	if strict == nil || allowed == nil || strict.Result == nil || allowed.Result == nil {
		return verdict.Measurement{}, errors.New("initial errors: both loads and their fortio results are needed")
	}
	if allowed.Aborted {
		return verdict.Measurement{}, fmt.Errorf("the load with -allow-initial-errors aborted (%s): the client broke, not the warm-up", allowed.Error)
	}
	codes := allowed.Result.RetCodes
	m := verdict.Measurement{Extra: map[string]float64{
		"allowed_requests": float64(allowed.Result.Requests()),
		"allowed_503":      float64(codes[503]),
		"allowed_200":      float64(codes[200]),
	}}
	if codes[503] == 0 || codes[200] == 0 {
		m.Unmet = fmt.Sprintf("the load with -allow-initial-errors got codes %v: the provoked condition (503s, then 200s once the target is up) did not reach it", codes)
		return m, nil
	}
	ranWith := fmt.Sprintf("with it the same condition was loaded to the end (%d requests: %d x 503, then %d x 200)", allowed.Result.Requests(), codes[503], codes[200])
	if !strict.Aborted {
		m.Outcome = "not verified"
		m.Extra["strict_aborted"] = 0
		m.Detail = fmt.Sprintf("without -allow-initial-errors fortio did not abort: it ran %d requests (codes %v) although its warm-up met the target's 503; %s", strict.Result.Requests(), strict.Result.RetCodes, ranWith)
		return m, nil
	}
	m.Extra["strict_aborted"] = 1
	if strict.Result.Message != "warmup error" || !strings.Contains(strict.Error, "error 503 ") {
		m.Unmet = fmt.Sprintf("the load without -allow-initial-errors aborted on %q (%s), not on its warm-up's 503", strict.Error, strict.Result.Message)
		return m, nil
	}
	m.Outcome = "verified"
	m.Detail = fmt.Sprintf("without -allow-initial-errors fortio aborted: %s: %s; %s", strict.Result.Message, strict.Error, ranWith)
	return m, nil
}

// initialErrorsAbort runs the check in r's mode: the registry's load
// (qps, connections, duration scaled, never below initialErrorsFloor) from
// the in-mesh client to echo's starting target through the echo Service,
// once without -allow-initial-errors and once with it, each on a fresh key.
func initialErrorsAbort(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	s, err := steps.SetupLoad(r, scenario.EchoURL(r), initialErrorsFloor)
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.SetSetup("%g qps x %d connections for %s from the in-mesh client to echo's %s (503 for %s after each load's first request), once without and once with -allow-initial-errors, as fortio load runs",
		s.QPS, s.Connections, s.Duration, echo.StartingPath, initialErrorsWindow)
	if err := scenario.Quiesce(ctx, r, r.Mode); err != nil {
		return verdict.Measurement{}, err
	}
	// Keys name this run's windows: echo pods outlive a run.
	nonce := time.Now().UnixNano()
	run := func(name string, allow bool) (*load.FortioLoad, error) {
		q := echo.LoadRequest{URL: startingURL(scenario.EchoURL(r), fmt.Sprintf("%s-%d", name, nonce), initialErrorsWindow),
			QPS: s.QPS, Connections: s.Connections, Duration: s.Duration, AllowInitialErrors: allow}
		return fortioLoad(ctx, r, scenario.InMesh(r), name, q)
	}
	strict, err := run("initial-errors-strict", false)
	if err != nil {
		return verdict.Measurement{}, err
	}
	allowed, err := run("initial-errors-allowed", true)
	if err != nil {
		return verdict.Measurement{}, err
	}
	got, err := judgeInitialErrors(strict, allowed)
	if err != nil {
		return verdict.Measurement{}, err
	}
	r.Logf("initial errors: %s%s", got.Detail, got.Unmet)
	return got, nil
}

// fortioLoad runs q from client c as `fortio load` runs it (echo.LoadPath)
// and keeps fortio's reply as the raw result name.
func fortioLoad(ctx context.Context, r *spec.Run, c probe.Client, name string, q echo.LoadRequest) (*load.FortioLoad, error) {
	eng, _, done, err := steps.ClientEngine(ctx, r, c, "meshclaims-fortio-load-")
	if err != nil {
		return nil, err
	}
	defer done()
	r.Logf("fortio load %s: %s, %g qps, %d connections, %s, -allow-initial-errors=%v", name, q.URL, q.QPS, q.Connections, q.Duration, q.AllowInitialErrors)
	fl, err := eng.RunFortioLoad(ctx, name, q)
	if fl != nil && fl.Raw != nil {
		if serr := r.SaveRaw(name, fl.Raw, q); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("fortio load %s: %w", name, err)
	}
	r.Logf("fortio load %s done: aborted %v %s", name, fl.Aborted, fl.Error)
	return fl, nil
}
