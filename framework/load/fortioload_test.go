package load_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
	"github.com/meshclaims/meshclaims/framework/load"
)

// startWorkloadClient starts the client pod's own handler (workload client
// = echo.Handler: fortio's REST API, echo.LoadPath and echo.StartingPath)
// and returns an engine on it and its base URL.
func startWorkloadClient(t *testing.T) (*load.Engine, string, string) {
	t.Helper()
	base := "http://" + serve(t, echo.Handler(""))
	raw := t.TempDir()
	e, err := load.New(load.Config{BaseURL: base + "/fortio/", Logs: fortioLog, RawDir: raw})
	if err != nil {
		t.Fatal(err)
	}
	return e, base, raw
}

// Real fortio, real starting target on loopback: the same provoked
// condition (a fresh key's 503 window) aborts the load without
// -allow-initial-errors on its warm-up and does not abort it with the flag.
func TestFortioLoadAbortsOnProvokedWarmupErrorOnlyWithoutFlag(t *testing.T) {
	e, base, raw := startWorkloadClient(t)
	const window = time.Second
	target := func(key string) string {
		return base + echo.StartingPath + "?" + url.Values{"key": {key}, "for": {window.String()}}.Encode()
	}
	q := echo.LoadRequest{QPS: 40, Connections: 4, Duration: 2 * window}

	q.URL = target("strict")
	strict, err := e.RunFortioLoad(context.Background(), "strict", q)
	if err != nil {
		t.Fatal(err)
	}
	if !strict.Aborted || !strings.Contains(strict.Error, "error 503") || strict.Result.Message != "warmup error" {
		t.Fatalf("without the flag: aborted %v error %q message %q, want fortio's warm-up abort on 503", strict.Aborted, strict.Error, strict.Result.Message)
	}

	q.URL, q.AllowInitialErrors = target("allowed"), true
	allowed, err := e.RunFortioLoad(context.Background(), "allowed", q)
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Aborted {
		t.Fatalf("with the flag: aborted on %q", allowed.Error)
	}
	if c := allowed.Result.RetCodes; c[503] == 0 || c[200] == 0 {
		t.Fatalf("with the flag: codes %v, want the window's 503s, then 200s (the load ran past the window)", c)
	}
	for _, n := range []string{"strict", "allowed"} {
		if _, err := os.Stat(filepath.Join(raw, n+".json")); err != nil {
			t.Errorf("raw reply of %s not kept: %v", n, err)
		}
	}
	if _, err := e.RunFortioLoad(context.Background(), "strict", q); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second run named strict: %v, want a refusal to overwrite", err)
	}
}

// Negative control of the condition: a target that is up from the first
// request never aborts the load without the flag.
func TestFortioLoadRunsWithoutFlagWhenWarmupSucceeds(t *testing.T) {
	e, base, _ := startWorkloadClient(t)
	got, err := e.RunFortioLoad(context.Background(), "up", echo.LoadRequest{URL: base + "/", QPS: 40, Connections: 4, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got.Aborted || got.Result.RetCodes[200] == 0 {
		t.Fatalf("aborted %v (%q), codes %v: want a run of 200s", got.Aborted, got.Error, got.Result.RetCodes)
	}
}

func TestFortioLoadRejectsBadRequest(t *testing.T) {
	e, _, _ := startWorkloadClient(t)
	if _, err := e.RunFortioLoad(context.Background(), "bad", echo.LoadRequest{URL: "ftp://x", QPS: 1, Connections: 1, Duration: time.Second}); err == nil || !strings.Contains(err.Error(), "accepted") {
		t.Errorf("ftp URL: %v, want an error naming what is accepted", err)
	}
}
