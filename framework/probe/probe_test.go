package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
)

// The host side against the real in-pod handler on loopback: each detector
// outcome fires for the behaviour it names.
func TestViaOutcomes(t *testing.T) {
	handler := httptest.NewServer(wp.Handler())
	defer handler.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close() // RST, like a sidecar refusing plaintext under STRICT
		}
	}()
	ctx := context.Background()
	r, err := Via(ctx, handler.URL, ok.URL, time.Second)
	if err != nil || r.Outcome != "http-200" {
		t.Fatalf("200: %+v %v", r, err)
	}
	r, err = Via(ctx, handler.URL, "http://"+ln.Addr().String()+"/", time.Second)
	if err != nil || r.Outcome != NoHTTPResponse {
		t.Fatalf("reset: %+v %v", r, err)
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := closed.Addr().String()
	closed.Close()
	r, err = Via(ctx, handler.URL, "http://"+addr+"/", time.Second)
	if err != nil || r.Outcome != Blocked {
		t.Fatalf("refused: %+v %v", r, err)
	}
	if _, err := Via(ctx, handler.URL, "ftp://nope", time.Second); err == nil {
		t.Fatal("bad target accepted")
	}
	many, err := ManyVia(ctx, handler.URL, ok.URL, 3, time.Second)
	if err != nil || len(many) != 3 || many[2].Outcome != "http-200" {
		t.Fatalf("many: %+v %v", many, err)
	}
	u, err := UntilVia(ctx, handler.URL, ok.URL, 200, time.Second, time.Second)
	if err != nil || u.Outcome != "http-200" || u.Attempts != 1 {
		t.Fatalf("until: %+v %v", u, err)
	}
}

func TestOutcomeMapping(t *testing.T) {
	cases := map[string]wp.Result{
		"http-403":     {Status: 403},
		NoHTTPResponse: {Cause: "eof", Connected: true},
		Blocked:        {Cause: "timeout", Connected: true},
		"error":        {Cause: "other"},
	}
	for want, in := range cases {
		if got, _ := Outcome(in); got != want {
			t.Errorf("%+v -> %s, want %s", in, got, want)
		}
	}
}
