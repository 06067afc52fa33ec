package kubeproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"

	"github.com/meshclaims/meshclaims/fixtures"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/kubeproxymode"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// switchable is a loopback "Service" with one backend at a time: it
// answers with fortio's real debug page, its hostname replaced by the pod
// name of the version it points at, and applies each change after a delay
// of its own (kube-proxy's, here chosen by the test).
type switchable struct {
	mu      sync.Mutex
	version string
	delays  []time.Duration // the delay of each change, in order
	// gap: once a change's delay has passed, answer 503 to the next
	// gapRequests requests, then land the change. Counted in requests, not
	// time, so the watch meets every gap however the host schedules it.
	gap     bool
	pending string // the version the gap under way lands on
	left    int    // requests the gap under way still answers 503
}

const gapRequests = 2

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	v := s.version
	if s.left > 0 {
		v = ""
		if s.left--; s.left == 0 {
			s.version = s.pending
		}
	}
	s.mu.Unlock()
	if v == "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	rec := httptest.NewRecorder()
	fhttp.DebugHandler(rec, r)
	host, _ := os.Hostname()
	pod := map[string]string{fixtures.CanaryV1: fixtures.CanaryV1Name + "-6d4cf56db6-abcde", fixtures.CanaryV2: fixtures.CanaryV2Name + "-7f9b8c5d4-fghij"}[v]
	w.Write([]byte(strings.Replace(rec.Body.String(), " on "+host+" - ", " on "+pod+" - ", 1)))
}

func (s *switchable) point(_ context.Context, v string) error {
	s.mu.Lock()
	d := s.delays[0]
	s.delays = s.delays[1:]
	gap := s.gap
	s.mu.Unlock()
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if gap {
			s.pending, s.left = v, gapRequests
			return
		}
		s.version = v
	})
	return nil
}

// One trial against the real in-pod watch on loopback: a change applied
// after 30 ms and a revert held for 1 s (kind's minSyncPeriod) are read in
// that order, each no shorter than its delay less one request (the
// answering request may have started just before the change it saw: here
// the backend decides when it handles the request, kube-proxy when the SYN
// leaves, just after start), each with the resolution of the request
// before. Every bound is causal but one: the change must read shorter than
// the revert, which a host stalling the watch for most of a second could
// break; a change timed from before the settle (2 s) fails it.
func TestEndpointTrialTimesChangeAndRevert(t *testing.T) {
	const change, revert = 30 * time.Millisecond, time.Second
	svc := &switchable{version: fixtures.CanaryV1, delays: []time.Duration{change, revert}}
	backend := httptest.NewServer(svc)
	defer backend.Close()
	handler := httptest.NewServer(wp.Handler())
	defer handler.Close()
	rd, err := endpointTrial(context.Background(), handler.URL, backend.URL+"/debug", 10*time.Second, 0, svc.point)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rd)
	if rd.Change < change-endpointAttempt || rd.Revert < revert-endpointAttempt || rd.Revert <= rd.Change {
		t.Errorf("change %s (applied after %s), revert %s (after %s)", rd.Change, change, rd.Revert, revert)
	}
	// (Neither may count a request that ran out of its 20 ms on a busy host.)
	if rd.ChangeResolution <= 0 || rd.RevertResolution <= 0 {
		t.Errorf("reading %+v", rd)
	}
	// Answers from neither backend while a change lands (503 to the
	// requests just before each) are counted, and the trial still times
	// the change.
	svc = &switchable{version: fixtures.CanaryV1, delays: []time.Duration{change, revert}, gap: true}
	gapped := httptest.NewServer(svc)
	defer gapped.Close()
	rd, err = endpointTrial(context.Background(), handler.URL, gapped.URL+"/debug", 10*time.Second, 0, svc.point)
	t.Logf("with gaps: %+v", rd)
	if err != nil || rd.Neither < 2 || rd.Change < change-endpointAttempt || rd.Revert < revert-endpointAttempt || rd.Revert <= rd.Change {
		t.Errorf("with gaps: %+v, %v", rd, err)
	}
}

// The trial refuses readings it could not trust: a Service already on v2
// when the watch starts, and a change that never comes.
func TestEndpointTrialRefuses(t *testing.T) {
	handler := httptest.NewServer(wp.Handler())
	defer handler.Close()
	ctx := context.Background()
	for name, c := range map[string]struct {
		svc  *switchable
		want string
	}{
		"starts on v2":  {&switchable{version: fixtures.CanaryV2, delays: []time.Duration{0, 0}}, "not echo-v1"},
		"never changes": {&switchable{version: fixtures.CanaryV1, delays: []time.Duration{time.Hour, 0}}, "no change seen"},
	} {
		backend := httptest.NewServer(c.svc)
		_, err := endpointTrial(ctx, handler.URL, backend.URL+"/debug", 500*time.Millisecond, 0, c.svc.point)
		backend.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error naming %q", name, err, c.want)
		}
	}
}

// The judged value is the median of the trials' readings, and the
// registry's bands put a local-like reading (8 ms change, 1.03 s revert,
// iptables) in iptables' band and a change held for minSyncPeriod out of it.
func TestJudgeEndpointTiming(t *testing.T) {
	reg := claimstest.Registry(t)
	tm := endpointTiming{KubeProxy: kubeproxymode.Settings{Mode: claims.KubeProxyIPTables, MinSyncPeriod: time.Second}}
	for _, ms := range []int{9, 7, 8, 30, 6} {
		tm.Readings = append(tm.Readings, endpointReading{Change: time.Duration(ms) * time.Millisecond, ChangeResolution: time.Millisecond,
			Revert: time.Second + time.Duration(ms)*time.Millisecond, RevertResolution: 2 * time.Millisecond})
	}
	change := func(rd endpointReading) (time.Duration, time.Duration) { return rd.Change, rd.ChangeResolution }
	revert := func(rd endpointReading) (time.Duration, time.Duration) { return rd.Revert, rd.RevertResolution }
	for _, c := range []struct {
		claim string
		pick  func(endpointReading) (time.Duration, time.Duration)
		tm    endpointTiming
		want  verdict.Result
	}{
		{"kubeproxy.kind-endpoint-change", change, tm, verdict.Reproduced},
		{"kubeproxy.kind-endpoint-revert", revert, tm, verdict.Reproduced},
		// Negative controls: the change held for minSyncPeriod (what the
		// revert reads) fails the change's band; a revert applied at once
		// (minSyncPeriod 0) fails the revert's.
		{"kubeproxy.kind-endpoint-change", revert, tm, verdict.NotReproduced},
		{"kubeproxy.kind-endpoint-revert", change, tm, verdict.NotReproduced},
	} {
		cl := reg.MustGet(c.claim)
		r := spec.NewRun(cl, mode.None, &spec.Env{}, nil)
		m, err := judgeEndpointTiming(r, c.tm, "reading", c.pick)
		if err != nil {
			t.Fatal(err)
		}
		if got := verdict.Judge(cl, mode.None, m); got.Result != c.want {
			t.Errorf("%s: %+v judged %s (%s), want %s", c.claim, m.Value, got.Result, got.Reason, c.want)
		}
	}
	m, _ := judgeEndpointTiming(spec.NewRun(reg.MustGet("kubeproxy.kind-endpoint-change"), mode.None, &spec.Env{}, nil), tm, "change", change)
	if *m.Value != 0.008 || m.Extra["max_s"] != 0.030 || m.Extra["resolution_max_s"] != 0.001 || m.KubeProxyMode != claims.KubeProxyIPTables {
		t.Errorf("measurement %+v", m)
	}
	if _, err := judgeEndpointTiming(spec.NewRun(reg.MustGet("kubeproxy.kind-endpoint-change"), mode.None, &spec.Env{}, nil), endpointTiming{}, "change", change); err == nil {
		t.Error("no readings judged")
	}
}

// The growth at 10,000 Services: +0.05 ms is reproduced, no growth
// (Cilium's 'almost none') is not; a run creating fewer Services does not
// meet the spec's need, so it is not measured at all.
func TestJudgeNewConnectionGrowth(t *testing.T) {
	cl := claimstest.Claim(t, "kubeproxy.new-connection-growth")
	quiet := []float64{0.331, 0.334, 0.329, 0.336, 0.332, 0.333}
	grown := make([]float64, len(quiet))
	flat := make([]float64, len(quiet))
	for i, q := range quiet {
		grown[i] = q + 0.05 + float64(i%3-1)*0.004
		flat[i] = q + float64(i%3-1)*0.004
	}
	for _, c := range []struct {
		name   string
		loaded []float64
		n      int
		want   verdict.Result
	}{
		{"+0.05 ms at 10,000", grown, documentedServices, verdict.Reproduced},
		{"no growth at 10,000", flat, documentedServices, verdict.NotReproduced},
	} {
		m, err := judgeNewConnectionGrowth(quiet, c.loaded, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := verdict.Judge(cl, mode.None, m); got.Result != c.want {
			t.Errorf("%s: judged %s (%s), want %s", c.name, got.Result, got.Reason, c.want)
		}
	}
	if _, err := judgeNewConnectionGrowth(quiet, quiet[:2], documentedServices); err == nil {
		t.Error("unpaired batches judged")
	}
	if _, err := judgeNewConnectionGrowth(make([]float64, 6), make([]float64, 6), documentedServices); err == nil {
		t.Error("zero means (a broken timer) judged")
	}
}

func TestNeedDocumentedServices(t *testing.T) {
	for scale, met := range map[float64]bool{1: true, 2: true, 0.05: false, 0.5: false} {
		r := spec.NewRun(claimstest.Claim(t, "kubeproxy.new-connection-growth"), mode.None, &spec.Env{Config: &config.Config{DurationScale: scale}}, nil)
		err := needDocumentedServices.Check(context.Background(), r)
		if (err == nil) != met {
			t.Errorf("-duration-scale=%g: %v, want met=%v", scale, err, met)
		}
		if err != nil && !strings.Contains(err.Error(), "-duration-scale=1 creates 10000") {
			t.Errorf("-duration-scale=%g: %v does not say what to run", scale, err)
		}
	}
}
