package l7

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures/workload/echo"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/echolog"
	"github.com/meshclaims/meshclaims/framework/echolog/echologtest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

func loggedEcho(t *testing.T, role string) (*echo.Server, *echologtest.Log) {
	t.Helper()
	log := &echologtest.Log{}
	s, err := echo.Start(echo.Config{HTTPAddr: "127.0.0.1:0", Logger: slog.New(slog.NewJSONHandler(log, nil)).With("role", role)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s, log
}

// mirrorProxy stands in for Envoy's RequestMirror: it answers from primary
// and fires a copy of each request at shadow (Envoy's copy goes out beside
// the primary and its answer is dropped).
func mirrorProxy(t *testing.T, primary, shadow string) string {
	t.Helper()
	p, _ := url.Parse(primary)
	rp := httputil.NewSingleHostReverseProxy(p)
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		copyURL := shadow + r.URL.RequestURI()
		wg.Go(func() {
			resp, err := http.Get(copyURL)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return srv.URL
}

// l4Balancer stands in for ztunnel in front of a Service of both versions:
// it relays each connection's bytes to one backend, alternately.
func l4Balancer(t *testing.T, backends ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var next atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, _ := url.Parse(backends[int(next.Add(1))%len(backends)])
			go func() {
				defer c.Close()
				b, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				defer b.Close()
				go io.Copy(b, c)
				io.Copy(c, b)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// Mirroring judged on real echo logs: two echo servers (v1, v2) log their
// error answers; the calls go through an L7 mirror (every call to v1, a copy
// to v2: honoured) or an L4 balancer (the calls spread, nothing copied:
// not-honoured), and l7.mirroring is judged in each mode, with the wrong
// way round failing.
func TestMirrorJudgedOnEchoLogs(t *testing.T) {
	c := claimstest.Claim(t, "l7.mirroring")
	v1, log1 := loggedEcho(t, "echo-v1")
	v2, log2 := loggedEcho(t, "echo-v2")
	run := func(front, mark string) verdict.Measurement {
		t.Helper()
		u := front + "/?status=418&" + echolog.MarkParam + "=" + mark
		for i := 0; i < steps.SplitRequests; i++ {
			if res := wp.Do(context.Background(), http.MethodGet, u, nil, 5*time.Second); res.Status != mirrorStatus {
				t.Fatalf("call %d: %+v", i, res)
			}
		}
		var a, b int64
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			a1, _ := echolog.ParseErrorAnswers(log1.String())
			a2, _ := echolog.ParseErrorAnswers(log2.String())
			a, b = countMarked(a1, mark), countMarked(a2, mark)
			if a+b >= 2*steps.SplitRequests || (strings.HasPrefix(mark, "l4") && a+b >= steps.SplitRequests) {
				break
			}
		}
		got, err := judgeMirror(steps.SplitRequests, a, b)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	mirrored := run(mirrorProxy(t, v1.URL(), v2.URL()), "l7-1")
	if mirrored.Outcome != steps.SplitHonoured {
		t.Fatalf("mirror: %s", mirrored.Detail)
	}
	for _, m := range []mode.Mode{mode.Sidecar, mode.AmbientL7} {
		if v := verdict.Judge(c, m, mirrored); v.Result != verdict.Reproduced {
			t.Errorf("%s mirroring: %s (%s)", m, v.Result, v.Reason)
		}
	}
	if v := verdict.Judge(c, mode.AmbientL4, mirrored); v.Result != verdict.NotReproduced {
		t.Errorf("ztunnel mirroring: %s", v.Result)
	}
	spread := run(l4Balancer(t, v1.URL(), v2.URL()), "l4-1")
	if spread.Outcome != steps.SplitNotHonoured || *spread.Count != 0 {
		t.Fatalf("L4 balancer: %s", spread.Detail)
	}
	if v := verdict.Judge(c, mode.AmbientL4, spread); v.Result != verdict.Reproduced {
		t.Errorf("ambient-l4: %s (%s)", v.Result, v.Reason)
	}
	if v := verdict.Judge(c, mode.Sidecar, spread); v.Result != verdict.NotReproduced {
		t.Errorf("a sidecar that copied nothing: %s", v.Result)
	}
	// Half the calls copied decides nothing; a log short of the calls,
	// or over two lines a call, is a broken measurement.
	if got, _ := judgeMirror(200, 200, 100); got.Outcome != "" {
		t.Errorf("half copied: %q", got.Outcome)
	}
	if _, err := judgeMirror(200, 120, 70); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("short log: %v", err)
	}
	if _, err := judgeMirror(200, 250, 200); err == nil {
		t.Error("three lines a call judged")
	}
}
