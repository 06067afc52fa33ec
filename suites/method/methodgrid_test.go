package method

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// readyAfter is a server that, until d has passed since start, holds every
// request unanswered (an attempt lasts its whole bound, as one whose SYN
// kube-proxy's missing rules drop), then answers 200.
func readyAfter(t *testing.T, d time.Duration) string {
	t.Helper()
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Until(start.Add(d))):
		case <-r.Context().Done():
			return
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// The grid check on readings the suite's in-pod probe makes (wp.Until, as
// /probe?until=200 runs it), against a Service that answers 1.5 s after
// creation: with HYBRID's 0.2 s attempt limit the readings sit on a
// 220 ms grid, 15% of the reading (not verified); with its 20 ms
// re-measurement the grid is about 3%, with room for a loaded host.
func TestAttemptGridOnProbeReadings(t *testing.T) {
	c := claimstest.Claim(t, "method.service-ready-off-attempt-grid")
	readings := func(attempt time.Duration) []steps.ServiceReading {
		var rs []steps.ServiceReading
		for i := 0; i < 2; i++ {
			url := readyAfter(t, 1500*time.Millisecond)
			res := wp.Until(context.Background(), http.MethodGet, url, nil, attempt, 200, 10*time.Second)
			if res.Status != 200 {
				t.Fatalf("never ready: %+v", res)
			}
			rs = append(rs, steps.ServiceReading{Seconds: res.WaitedMs / 1000, Attempts: res.Attempts, WaitedMs: res.WaitedMs, LastMs: res.Millis})
		}
		return rs
	}
	coarse, err := judgeAttemptGrid(readings(200 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(c, mode.None, coarse); v.Result != verdict.NotReproduced || !strings.Contains(coarse.Detail, "retry grid") {
		t.Errorf("0.2 s attempts: %s (%s)", v.Result, coarse.Detail)
	}
	fine, err := judgeAttemptGrid(readings(steps.ReadinessAttempt))
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(c, mode.None, fine); v.Result != verdict.Reproduced {
		t.Errorf("%s attempts: %s (%s)", steps.ReadinessAttempt, v.Result, fine.Detail)
	}
	if got, err := judgeAttemptGrid([]steps.ServiceReading{{Seconds: 0.9, Attempts: 1, WaitedMs: 2, LastMs: 2}}); err != nil || got.Outcome != "verified" {
		t.Errorf("first-attempt readings: %+v %v", got, err)
	}
	if _, err := judgeAttemptGrid(nil); err == nil {
		t.Error("no readings judged")
	}
	if _, err := judgeAttemptGrid([]steps.ServiceReading{{Seconds: 1}}); err == nil {
		t.Error("a reading without attempts judged")
	}
}
