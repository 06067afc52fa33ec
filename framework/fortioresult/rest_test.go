package fortioresult_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/rapi"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
)

// TestRESTAPIResult parses what fortio's REST API (/fortio/rest/run, the
// handler a `fortio server` load generator serves) returns, with fortio's own
// handler and echo server on loopback.
func TestRESTAPIResult(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo/", fhttp.EchoHandler)
	mux.HandleFunc("/fortio/rest/run", rapi.RESTRunHandler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()

	get := func(q url.Values) []byte {
		t.Helper()
		resp, err := http.Get(base + "/fortio/rest/run?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	q := url.Values{
		"url": {base + "/echo/?status=503:10"}, "qps": {"200"}, "t": {"500ms"}, "c": {"2"},
		"r": {"0.0001"}, "p": {"50,75,90,99,99.9"}, "labels": {"rest"},
	}
	r, err := fortioresult.Parse("rest-run", get(q))
	if err != nil {
		t.Fatalf("REST result not parsed: %v", err)
	}
	s := fortioresult.Summarize(r)
	if s.Requests == 0 || s.Codes["200"]+s.Codes["503"] != s.Requests || s.Labels != "rest" || s.Connections != 2 {
		t.Errorf("REST summary: %d requests, codes %v, labels %q, %d connections", s.Requests, s.Codes, s.Labels, s.Connections)
	}
	if s.PercentileSource != "fortio" || len(s.PercentilesMs) != 5 || s.ResolutionMs != 0.1 {
		t.Errorf("REST percentiles %v (%s), resolution %v ms", s.PercentilesMs, s.PercentileSource, s.ResolutionMs)
	}
	if len(s.Warnings) > 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}

	// An async start answers with a run id, not a result: a clear error.
	q.Set("async", "on")
	q.Set("t", "100ms")
	_, err = fortioresult.Parse("async-reply", get(q))
	if err == nil || !strings.Contains(err.Error(), "async-reply") || !strings.Contains(err.Error(), "missing RetCodes") {
		t.Errorf("async reply: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // let the async run end before the server closes
}
