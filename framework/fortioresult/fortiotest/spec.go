package fortiotest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/rapi"

	"github.com/meshclaims/meshclaims/framework/load"
)

// RunSpec runs a load the suite issues (a load.Spec, as built by the suite's
// steps) through the suite's own engine (load.Engine, fortio's REST API)
// against what a client pod runs, all in-process on 127.0.0.1: fortio's
// REST handlers and echo. The spec's URL is replaced by the loopback echo
// with echoQuery (e.g. "delay=200us", fortio's echo syntax; "" for none), so
// the spec's other options (qps, connections, duration, resolution,
// percentiles) are what reaches fortio. Any failure fails t.
func RunSpec(t testing.TB, name string, s load.Spec, echoQuery string) *load.Run {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fortiotest: listening on 127.0.0.1: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo/", fhttp.EchoHandler)
	rapi.AddHandlers(mux, "", "/fortio/", t.TempDir())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("fortiotest: serve %s: %v", ln.Addr(), err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()
	u, err := url.Parse(base + "/echo/")
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = echoQuery
	s.URL = u.String()

	eng, err := load.New(load.Config{BaseURL: base + "/fortio/", Logs: load.CaptureFortioLog(nil), RawDir: t.TempDir()})
	if err != nil {
		t.Fatalf("fortiotest: %v", err)
	}
	run, err := eng.Run(context.Background(), name, s)
	if err != nil {
		t.Fatalf("fortiotest: load %s: %v", name, err)
	}
	return run
}
