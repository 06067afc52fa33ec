package loopback_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/rollout/loopback"
)

var _ rollout.Driver = (*loopback.Pool)(nil)

// whoami answers with the backend's own address, to see the rotation.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, r.Context().Value(http.LocalAddrContextKey).(net.Addr).String())
})

func start(t *testing.T, cfg loopback.Config) *loopback.Pool {
	t.Helper()
	p, err := loopback.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// backendsSeen asks n times on fresh connections which backend answered.
func backendsSeen(t *testing.T, p *loopback.Pool, n int) map[string]int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	seen := map[string]int{}
	for range n {
		resp, err := c.Get(p.URL())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen[string(b)]++
	}
	return seen
}

func TestStartValidates(t *testing.T) {
	for _, c := range []struct {
		cfg  loopback.Config
		want string
	}{
		{loopback.Config{Backends: 0}, "Backends = 0: accepted: 1..64"},
		{loopback.Config{Backends: 1, Termination: 7}, "Termination = 7"},
		{loopback.Config{Backends: 1, Drain: -time.Second}, "Drain = -1s"},
	} {
		if _, err := loopback.Start(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestRoundRobinAndRestartReplacesEveryBackend(t *testing.T) {
	p := start(t, loopback.Config{Backends: 3, Handler: whoami, Termination: loopback.Graceful})
	before := backendsSeen(t, p, 6)
	if len(before) != 3 {
		t.Fatalf("round robin over 3 backends saw %v", before)
	}
	if err := p.WaitComplete(context.Background(), time.Second); err == nil {
		t.Error("WaitComplete before any Restart must fail")
	}
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitComplete(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	after := backendsSeen(t, p, 6)
	if len(after) != 3 {
		t.Fatalf("after restart saw %v", after)
	}
	for a := range after {
		if before[a] > 0 {
			t.Errorf("backend %s survived the restart", a)
		}
	}
	if s := p.Stats(); s.Rollouts != 1 || s.Replaced != 3 {
		t.Errorf("stats %+v", s)
	}
}

func TestWaitCompleteTimesOutAndRestartRefusesOverlap(t *testing.T) {
	p := start(t, loopback.Config{Backends: 2, Termination: loopback.Graceful, Drain: 2 * time.Second})
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := p.WaitComplete(context.Background(), 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "0 of 2 backends replaced") {
		t.Errorf("WaitComplete = %v, want a timeout saying 0 of 2 replaced", err)
	}
	if err := p.Restart(context.Background()); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Errorf("overlapping Restart = %v, want 'in progress'", err)
	}
}

// openKeepAlive sends one request on a raw connection through the balancer
// and reads the whole response, leaving the connection open and idle.
func openKeepAlive(t *testing.T, p *loopback.Pool) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, r
}

// The two terminations differ exactly where the claims need them to: an
// abrupt kill resets open connections, a graceful one closes them cleanly.
func TestAbruptResetsOpenConnections(t *testing.T) {
	p := start(t, loopback.Config{Backends: 1, Termination: loopback.Abrupt})
	c, r := openKeepAlive(t, p)
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := r.ReadByte()
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after abrupt kill: %v, want connection reset", err)
	}
	if err := p.WaitComplete(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.ConnsReset < 1 || s.ResetsPropagated < 1 {
		t.Errorf("stats %+v: the reset was not counted", s)
	}
}

func TestGracefulClosesOpenConnectionsCleanly(t *testing.T) {
	p := start(t, loopback.Config{Backends: 1, Termination: loopback.Graceful, Drain: 50 * time.Millisecond})
	c, r := openKeepAlive(t, p)
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := r.ReadByte()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("read after graceful shutdown: %v, want EOF", err)
	}
	if err := p.WaitComplete(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.ConnsReset != 0 || s.ResetsPropagated != 0 || s.RefusedAtDial != 0 {
		t.Errorf("graceful restart reset something: %+v", s)
	}
}

// During an abrupt kill's EndpointLag, new connections to the dead backend
// are reset by the balancer.
func TestAbruptEndpointLagRefusesNewConnections(t *testing.T) {
	p := start(t, loopback.Config{Backends: 1, Termination: loopback.Abrupt, EndpointLag: time.Second})
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	failed := 0
	for range 4 { // rotation: new, dead, new, dead
		resp, err := c.Get(p.URL())
		if err != nil {
			failed++
			continue
		}
		resp.Body.Close()
	}
	if failed == 0 || p.Stats().RefusedAtDial == 0 {
		t.Errorf("no connection hit the dead backend during EndpointLag: failed %d, stats %+v", failed, p.Stats())
	}
	if err := p.WaitComplete(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
