package l7

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/probe/probetest"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// ejectingProxy stands in for Envoy's outlier detection with
// consecutive5xxErrors 1: round robin over the hosts, and a host that
// answered a 5xx is ejected for the rest of the test.
func ejectingProxy(t *testing.T, hosts ...string) string {
	t.Helper()
	var mu sync.Mutex
	ejected := map[string]bool{}
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		var host string
		for range hosts {
			h := hosts[next%len(hosts)]
			next++
			if !ejected[h] {
				host = h
				break
			}
		}
		mu.Unlock()
		u, _ := url.Parse(host)
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.ModifyResponse = func(resp *http.Response) error {
			if resp.StatusCode >= 500 {
				mu.Lock()
				ejected[host] = true
				mu.Unlock()
			}
			return nil
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Outlier detection judged on the suite's probe results from a real healthy
// and a real failing echo (-default-params=status=500): through an ejecting
// L7 proxy the failing pod's 500s stop (honoured), through an L4 balancer
// half the calls keep failing (not-honoured); l7.outlier-detection is
// judged in each mode, the wrong way round failing.
func TestOutlierJudgedOnEchoPods(t *testing.T) {
	c := claimstest.Claim(t, "l7.outlier-detection")
	start := func(params string) *echo.Server {
		s, err := echo.Start(echo.Config{HTTPAddr: "127.0.0.1:0", DefaultParams: params, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.Shutdown(ctx)
		})
		return s
	}
	healthy, failing := start(""), start("status=500")
	run := func(front string) verdict.Measurement {
		t.Helper()
		var results []probe.Result
		for i := 0; i < steps.SplitRequests; i++ {
			r := probe.Result{Result: wp.Do(context.Background(), http.MethodGet, front+"/", nil, 5*time.Second)}
			r.Outcome, r.Detail = probe.Outcome(r.Result)
			results = append(results, r)
		}
		codes, err := outlierCodes(results)
		if err != nil {
			t.Fatal(err)
		}
		got, err := judgeOutlier(codes)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	ejected := run(ejectingProxy(t, failing.URL(), healthy.URL()))
	if ejected.Outcome != steps.SplitHonoured {
		t.Fatalf("ejecting proxy: %s", ejected.Detail)
	}
	for _, m := range []mode.Mode{mode.Sidecar, mode.AmbientL7} {
		if v := verdict.Judge(c, m, ejected); v.Result != verdict.Reproduced {
			t.Errorf("%s: %s (%s)", m, v.Result, v.Reason)
		}
	}
	if v := verdict.Judge(c, mode.AmbientL4, ejected); v.Result != verdict.NotReproduced {
		t.Errorf("ztunnel ejecting: %s", v.Result)
	}
	kept := run(l4Balancer(t, failing.URL(), healthy.URL()))
	if kept.Outcome != steps.SplitNotHonoured {
		t.Fatalf("L4 balancer: %s", kept.Detail)
	}
	if v := verdict.Judge(c, mode.AmbientL4, kept); v.Result != verdict.Reproduced {
		t.Errorf("ambient-l4: %s (%s)", v.Result, v.Reason)
	}
	if v := verdict.Judge(c, mode.AmbientL7, kept); v.Result != verdict.NotReproduced {
		t.Errorf("a waypoint that never ejects: %s", v.Result)
	}
	// 15% failing decides nothing; a call without a status, or a code
	// neither pod answers, breaks the measurement.
	if got, _ := judgeOutlier(map[int]int64{200: 170, 500: 30}); got.Outcome != "" {
		t.Errorf("15%%: %q", got.Outcome)
	}
	cut := probe.Result{Result: wp.Do(context.Background(), http.MethodGet, probetest.CutConnections(t, true), nil, 5*time.Second)}
	cut.Outcome, cut.Detail = probe.Outcome(cut.Result)
	if _, err := outlierCodes([]probe.Result{cut}); err == nil || !strings.Contains(err.Error(), "no-http-response") {
		t.Errorf("cut call: %v", err)
	}
	if _, err := judgeOutlier(map[int]int64{}); err == nil {
		t.Error("no calls judged")
	}
}
