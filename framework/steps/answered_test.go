package steps

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/netfault"
	"github.com/meshclaims/meshclaims/framework/probe"
)

// Answered, through the real in-pod probe handler on loopback: any HTTP
// status holds (a 503 is an answer: reachability, not the outcome), and a
// port where nothing listens does not (the negative control, as a
// ClusterIP without a programmed endpoint refuses or is unreachable).
func TestAnsweredIsAnyHTTPResponse(t *testing.T) {
	handler := httptest.NewServer(wp.Handler())
	defer handler.Close()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()

	ctx := context.Background()
	held, seen, err := Answered(handler.URL, unavailable.URL, time.Second)(ctx)
	if err != nil || !held || seen != "HTTP 503" {
		t.Errorf("503 server: held %v, seen %q, %v; want held, HTTP 503", held, seen, err)
	}
	held, seen, err = Answered(handler.URL, closed, time.Second)(ctx)
	if err != nil || held || !strings.Contains(seen, "blocked") {
		t.Errorf("closed port: held %v, seen %q, %v; want not held, blocked", held, seen, err)
	}
	if _, _, err := Answered("http://"+ln.Addr().String(), unavailable.URL, time.Second)(ctx); err == nil {
		t.Error("no probe handler at base, yet no error")
	}
}

// WithoutUnconnected, on the real in-pod probe's results: a call to a port
// where nothing listens never connected and is counted; a reset after the
// connect (an answer-less call that reached a server) is kept, as is a 200.
func TestWithoutUnconnected(t *testing.T) {
	handler := httptest.NewServer(wp.Handler())
	defer handler.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	reset := "http://" + netfault.Reset(t) + "/"
	var results []probe.Result
	for _, target := range []string{ok.URL, closed, reset, closed} {
		res, err := probe.Via(context.Background(), handler.URL, target, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	kept, unconnected := WithoutUnconnected(results)
	if unconnected != 2 || len(kept) != 2 || kept[0].Status != http.StatusOK || kept[1].Status != 0 {
		t.Errorf("unconnected %d, kept %+v; want 2 unconnected, the 200 and the reset kept", unconnected, kept)
	}
	if SplitRemakeLimit*100 > SplitRequests*2 {
		t.Errorf("making %d of %d calls again could move the share by more than 2%%", SplitRemakeLimit, SplitRequests)
	}
}
