package load_test

import (
	"errors"
	"net"
	"net/http"
	"sync"
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

// servedCodes counts the status codes a handler answered with, taken
// before the answer leaves: once a load's result is back, every request it
// made is counted here.
type servedCodes struct {
	mu    sync.Mutex
	codes map[int]int64
}

func (s *servedCodes) add(code int) {
	s.mu.Lock()
	s.codes[code]++
	s.mu.Unlock()
}

// Codes is a copy of the counts so far.
func (s *servedCodes) Codes() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int64, len(s.codes))
	for c, n := range s.codes {
		out[c] = n
	}
	return out
}

type countingWriter struct {
	http.ResponseWriter
	s       *servedCodes
	counted bool
}

func (w *countingWriter) WriteHeader(code int) {
	if !w.counted {
		w.counted = true
		w.s.add(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if !w.counted {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// startCountingEcho is startEcho with the codes it answered counted.
func startCountingEcho(t testing.TB) (string, *servedCodes) {
	t.Helper()
	s := &servedCodes{codes: map[int]int64{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w, s: s}
		fhttp.EchoHandler(cw, r)
		if !cw.counted {
			cw.WriteHeader(http.StatusOK)
		}
	})
	return "http://" + serve(t, h) + "/", s
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
