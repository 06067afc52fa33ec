package method

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
	"github.com/meshclaims/meshclaims/framework/load"
)

// The shapes are fortio 1.75.3's: an aborted warm-up is NewErrorResult(o,
// "warmup error", err) with err "error %d for %s (%d bytes)"; a run has
// RetCodes by status.
const startingTarget = "http://echo.meshclaims-sidecar:8080/starting?for=2s&key=initial-errors-strict-1"

func abortedOn(code string) *load.FortioLoad {
	msg := "error " + code + " for " + startingTarget + " (85 bytes)"
	return &load.FortioLoad{Aborted: true, Error: msg, Result: &load.Result{Error: true, Message: "warmup error", Exception: msg}}
}

func ran(codes map[int]int64) *load.FortioLoad {
	return &load.FortioLoad{Result: &load.Result{RunType: "HTTP", RetCodes: codes}}
}

var windowThenUp = map[int]int64{503: 3180, 200: 3220}

func TestJudgeInitialErrorsVerifiedOnFortiosWarmupAbort(t *testing.T) {
	m, err := judgeInitialErrors(abortedOn("503"), ran(windowThenUp))
	if err != nil {
		t.Fatal(err)
	}
	if m.Outcome != "verified" || m.Unmet != "" || !strings.Contains(m.Detail, "warmup error") {
		t.Fatalf("got %+v, want verified naming fortio's warm-up error", m)
	}
}

// Negative control: fortio not aborting without the flag fails the check.
func TestJudgeInitialErrorsNotVerifiedWhenStrictLoadRan(t *testing.T) {
	m, err := judgeInitialErrors(ran(windowThenUp), ran(windowThenUp))
	if err != nil {
		t.Fatal(err)
	}
	if m.Outcome != "not verified" || m.Extra["strict_aborted"] != 0 {
		t.Fatalf("got %+v, want not verified", m)
	}
}

// Positive control: the load with the flag must run, else nothing is judged.
func TestJudgeInitialErrorsErrorWhenAllowedLoadAborted(t *testing.T) {
	if _, err := judgeInitialErrors(abortedOn("503"), abortedOn("503")); err == nil || !strings.Contains(err.Error(), "-allow-initial-errors aborted") {
		t.Fatalf("got %v, want an error: the flagged load did not run", err)
	}
	if _, err := judgeInitialErrors(nil, ran(windowThenUp)); err == nil {
		t.Fatal("a missing load was judged")
	}
}

// The condition must reach the loads as provoked: 503s, then 200s.
func TestJudgeInitialErrorsUnmetWithoutTheProvokedCondition(t *testing.T) {
	for name, codes := range map[string]map[int]int64{
		"no window":        {200: 6400},
		"target never up":  {503: 6400},
		"no HTTP response": {-1: 6400},
	} {
		m, err := judgeInitialErrors(abortedOn("503"), ran(codes))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Unmet == "" || m.Outcome != "" {
			t.Errorf("%s: got %+v, want Unmet and no outcome", name, m)
		}
	}
	m, err := judgeInitialErrors(abortedOn("-1"), ran(windowThenUp))
	if err != nil {
		t.Fatal(err)
	}
	if m.Unmet == "" || m.Outcome != "" {
		t.Errorf("abort on -1: got %+v, want Unmet (not the provoked 503)", m)
	}
}

// noLogs is a LogSource for RunFortioLoad, which reads none.
type noLogs struct{}

func (noLogs) Logs(context.Context, time.Time, time.Time) (string, error) { return "", nil }

func TestStartingURL(t *testing.T) {
	got := startingURL("http://echo.ns:8080/", "k-1", 2*time.Second)
	if want := "http://echo.ns:8080" + echo.StartingPath + "?for=2s&key=k-1"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// The judge on real fortio: the workload client's own handler runs both
// loads against its starting target on loopback.
func TestJudgeInitialErrorsOnRealFortio(t *testing.T) {
	srv := httptest.NewServer(echo.Handler(""))
	defer srv.Close()
	e, err := load.New(load.Config{BaseURL: srv.URL + "/fortio/", Logs: noLogs{}, RawDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const window = time.Second
	q := echo.LoadRequest{QPS: 40, Connections: 4, Duration: 2 * window}
	q.URL = startingURL(srv.URL+"/", "strict", window)
	strict, err := e.RunFortioLoad(context.Background(), "strict", q)
	if err != nil {
		t.Fatal(err)
	}
	q.URL, q.AllowInitialErrors = startingURL(srv.URL+"/", "allowed", window), true
	allowed, err := e.RunFortioLoad(context.Background(), "allowed", q)
	if err != nil {
		t.Fatal(err)
	}
	m, err := judgeInitialErrors(strict, allowed)
	if err != nil {
		t.Fatal(err)
	}
	if m.Outcome != "verified" {
		t.Fatalf("got %+v, want verified", m)
	}
}
