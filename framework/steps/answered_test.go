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
