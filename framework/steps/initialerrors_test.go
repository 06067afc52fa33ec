package steps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/rapi"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/rollout/loopback"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// loopbackEngine is the suite's load engine against fortio's REST API on
// 127.0.0.1, as a client pod serves it.
func loopbackEngine(t *testing.T) *load.Engine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	rapi.AddHandlers(mux, "", "/fortio/", t.TempDir())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Close() })
	eng, err := load.New(load.Config{BaseURL: "http://" + ln.Addr().String() + "/fortio/", Logs: load.CaptureFortioLog(nil), RawDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// The check run for real on loopback: the suite's engine starts loads
// (16 connections, fortio's warm-up emulated as the engine does) while the
// loopback pool is rolled again and again. With abrupt kills (a dead
// backend stays in the rotation, so new connections are reset) loads
// without the flag abort and loads with it run: verified. With graceful
// restarts nothing fails at warm-up: inconclusive, never verified.
func TestInitialErrorsDuringLoopbackRollouts(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := claims.Load(filepath.Join(root, "testdata", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := reg.MustGet("method.initial-errors-abort")
	eng := loopbackEngine(t)
	run := func(name string, d rollout.Driver, url string) verdict.Measurement {
		t.Helper()
		tally, cycles, _, err := StartsDuringRollout(context.Background(), d, 3*time.Second, 10*time.Second, func(ctx context.Context, i int, allow bool) error {
			_, err := eng.Run(ctx, fmt.Sprintf("%s-%d-%v", name, i, allow), load.Spec{URL: url, QPS: 100, Connections: 16, Duration: 200 * time.Millisecond, AllowInitialErrors: allow})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := restartsFailed(cycles); err != nil {
			t.Fatal(err)
		}
		got, err := JudgeInitialErrors(tally, len(cycles))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", name, got.Detail)
		return got
	}
	pool, err := loopback.Start(loopback.Config{Backends: 3, Termination: loopback.Abrupt, EndpointLag: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	abrupt := run("abrupt", pool, pool.URL())
	for _, m := range c.Modes {
		if v := verdict.Judge(c, m, abrupt); v.Result != verdict.Reproduced {
			t.Errorf("%s, abrupt rollouts: %s (%s)", m, v.Result, abrupt.Detail)
		}
	}
	// The same starts against a pool whose "rollouts" change nothing: no
	// warm-up meets an error, so never verified.
	still, err := loopback.Start(loopback.Config{Backends: 3, Termination: loopback.Graceful})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { still.Close() })
	quiet := run("no-churn", idleDriver{100 * time.Millisecond}, still.URL())
	if v := verdict.Judge(c, mode.Sidecar, quiet); v.Result != verdict.Inconclusive || *quiet.Count != 0 {
		t.Errorf("no churn: %s (%s)", v.Result, quiet.Detail)
	}

	// The control: a load with the flag that fails, or a load without it
	// failing for another reason, breaks the measurement.
	broken := errors.New("port-forward lost")
	for allowFails, want := range map[bool]string{true: "with -allow-initial-errors did not run", false: "without -allow-initial-errors: port-forward lost"} {
		_, _, _, err := StartsDuringRollout(context.Background(), idleDriver{10 * time.Millisecond}, 500*time.Millisecond, 10*time.Second, func(_ context.Context, _ int, allow bool) error {
			if allow == allowFails {
				return broken
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("failing start (allow %v): %v", allowFails, err)
		}
	}
	if _, err := JudgeInitialErrors(InitialErrorTally{Starts: 3, Aborted: 1, Ran: 2}, 1); err == nil {
		t.Error("a load with the flag that did not run judged")
	}
	if err := restartsFailed(nil); err == nil {
		t.Error("no rollout accepted")
	}
	now := time.Now()
	if err := restartsFailed([]rollout.Cycle{{Start: now, Restarted: now, End: now, Err: errors.New("cycle 0: restart: forbidden")}}); err == nil {
		t.Error("a failed restart accepted")
	}
}

// idleDriver is a rollout that changes nothing and takes d.
type idleDriver struct{ d time.Duration }

func (idleDriver) Restart(context.Context) error { return nil }
func (i idleDriver) WaitComplete(ctx context.Context, _ time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(i.d):
		return nil
	}
}
