package load_test

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/rapi"

	"github.com/meshclaims/meshclaims/framework/load"
)

// fortioLog is fortio's in-process logger, captured once for the test binary.
var fortioLog = load.CaptureFortioLog(nil)

// serve runs h on a fresh 127.0.0.1 port until the test ends.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve %s: %v", ln.Addr(), err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// startClient starts what the client pod runs: fortio's REST API
// (rapi.AddHandlers under /fortio/), and returns its base URL.
func startClient(t testing.TB) string {
	t.Helper()
	mux := http.NewServeMux()
	rapi.AddHandlers(mux, "", "/fortio/", t.TempDir())
	return "http://" + serve(t, mux) + "/fortio/"
}

// startEcho starts fortio's echo handler (what `fortio server` serves on /).
func startEcho(t testing.TB) string {
	t.Helper()
	return "http://" + serve(t, http.HandlerFunc(fhttp.EchoHandler)) + "/"
}

// newEngine returns an engine on a fresh loopback client.
func newEngine(t testing.TB) (*load.Engine, string) {
	t.Helper()
	raw := t.TempDir()
	e, err := load.New(load.Config{BaseURL: startClient(t), Logs: fortioLog, RawDir: raw})
	if err != nil {
		t.Fatal(err)
	}
	return e, raw
}
