// Package loopback is a rollout.Driver without a cluster: a pool of fortio
// echo backends on 127.0.0.1 behind a small round-robin TCP load balancer,
// restarted one backend at a time. It reproduces, on one machine, the two
// ways a rolling restart treats open keep-alive connections:
//
//   - Graceful: the old backend leaves the rotation first (like a pod leaving
//     the Service's endpoints during a preStop sleep), keeps serving its open
//     connections for Drain, then shuts down (finishes active requests,
//     closes idle connections with FIN).
//   - Abrupt: the old backend dies at once: its listener closes and every
//     open connection is reset (SO_LINGER 0, then close: RST). It stays in
//     the rotation for EndpointLag, as a dead pod stays in the endpoints
//     until the control plane notices, so new connections sent to it are
//     refused (the balancer resets them).
//
// The balancer is L4: a client connection is pinned to one backend for its
// life, and a reset on the backend side is passed on as a reset to the
// client (a clean close as a clean close).
package loopback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"fortio.org/fortio/fhttp"
)

// Termination is how an old backend is taken down.
type Termination int

const (
	// Graceful: out of rotation, drain, then shut down.
	Graceful Termination = iota
	// Abrupt: reset every connection now, out of rotation after EndpointLag.
	Abrupt
)

func (t Termination) String() string {
	switch t {
	case Graceful:
		return "graceful"
	case Abrupt:
		return "abrupt"
	}
	return fmt.Sprintf("Termination(%d)", int(t))
}

// MaxBackends bounds Config.Backends.
const MaxBackends = 64

// Config describes a pool.
type Config struct {
	Backends    int         // 1..MaxBackends
	Termination Termination // Graceful or Abrupt
	// Drain is how long a gracefully terminated backend keeps serving its
	// open connections after leaving the rotation (a preStop sleep); >= 0.
	Drain time.Duration
	// EndpointLag is how long an abruptly killed backend stays in the
	// rotation; >= 0.
	EndpointLag time.Duration
	// Handler serves each backend; nil means fortio's echo handler
	// (fhttp.EchoHandler: ?status=, ?delay=, ?size= as in `fortio server`).
	Handler http.Handler
}

// Stats counts what the pool did, for test diagnostics.
type Stats struct {
	Rollouts         int   // completed rolling restarts
	Replaced         int   // backends replaced
	ConnsReset       int64 // backend connections reset by abrupt kills
	RefusedAtDial    int64 // client connections the balancer reset because the backend refused
	ResetsPropagated int64 // client connections reset because their backend connection was reset
}

// Pool is the balancer and its backends. It implements rollout.Driver.
type Pool struct {
	cfg Config
	lb  *balancer

	mu       sync.Mutex
	backends []*backend
	rolling  chan struct{} // closed when the current rollout ends; nil when none ran
	progress int           // backends replaced in the current rollout
	stats    Stats
	closed   chan struct{}
	wg       sync.WaitGroup
}

// Start validates cfg, starts cfg.Backends backends and the balancer.
func Start(cfg Config) (*Pool, error) {
	if cfg.Backends < 1 || cfg.Backends > MaxBackends {
		return nil, fmt.Errorf("loopback.Config.Backends = %d: accepted: 1..%d", cfg.Backends, MaxBackends)
	}
	if cfg.Termination != Graceful && cfg.Termination != Abrupt {
		return nil, fmt.Errorf("loopback.Config.Termination = %d: accepted: Graceful (0) or Abrupt (1)", int(cfg.Termination))
	}
	if cfg.Drain < 0 || cfg.EndpointLag < 0 {
		return nil, fmt.Errorf("loopback.Config: Drain = %v, EndpointLag = %v: accepted: durations >= 0", cfg.Drain, cfg.EndpointLag)
	}
	if cfg.Handler == nil {
		cfg.Handler = http.HandlerFunc(fhttp.EchoHandler)
	}
	p := &Pool{cfg: cfg, closed: make(chan struct{})}
	for range cfg.Backends {
		b, err := startBackend(cfg.Handler)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.backends = append(p.backends, b)
	}
	lb, err := startBalancer()
	if err != nil {
		p.Close()
		return nil, err
	}
	p.lb = lb
	for _, b := range p.backends {
		lb.add(b.addr)
	}
	return p, nil
}

// Addr is the balancer's address, host:port on 127.0.0.1.
func (p *Pool) Addr() string { return p.lb.ln.Addr().String() }

// URL is http://<Addr>/.
func (p *Pool) URL() string { return "http://" + p.Addr() + "/" }

// Stats returns a snapshot of the counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.RefusedAtDial = p.lb.refused.Load()
	s.ResetsPropagated = p.lb.resets.Load()
	return s
}

// Restart starts replacing the backends one by one and returns at once. It
// fails if the previous rollout is still running.
func (p *Pool) Restart(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		return errors.New("loopback: pool is closed")
	default:
	}
	if p.rolling != nil {
		select {
		case <-p.rolling:
		default:
			return fmt.Errorf("loopback: a rollout is in progress (%d of %d backends replaced)", p.progress, len(p.backends))
		}
	}
	done := make(chan struct{})
	p.rolling, p.progress = done, 0
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		p.roll()
	}()
	return nil
}

// WaitComplete waits until the current rollout has replaced every backend.
func (p *Pool) WaitComplete(ctx context.Context, timeout time.Duration) error {
	p.mu.Lock()
	done := p.rolling
	p.mu.Unlock()
	if done == nil {
		return errors.New("loopback: no rollout was started")
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("loopback: rollout not complete after %v: %d of %d backends replaced", timeout, p.progress, len(p.backends))
	}
}

// roll replaces each backend in turn: the new one is listening and in the
// rotation before the old one is taken down (maxSurge 1, maxUnavailable 0).
func (p *Pool) roll() {
	for i := range p.cfg.Backends {
		nb, err := startBackend(p.cfg.Handler)
		if err != nil {
			return // the rollout stays incomplete; WaitComplete reports it
		}
		p.lb.add(nb.addr)
		p.mu.Lock()
		old := p.backends[i]
		p.backends[i] = nb
		p.mu.Unlock()
		switch p.cfg.Termination {
		case Graceful:
			p.lb.remove(old.addr)
			p.sleep(p.cfg.Drain)
			old.shutdown(10 * time.Second)
		case Abrupt:
			n := old.kill()
			p.mu.Lock()
			p.stats.ConnsReset += int64(n)
			p.mu.Unlock()
			p.sleep(p.cfg.EndpointLag)
			p.lb.remove(old.addr)
		}
		p.mu.Lock()
		p.progress++
		p.stats.Replaced++
		p.mu.Unlock()
		select {
		case <-p.closed:
			return
		default:
		}
	}
	p.mu.Lock()
	p.stats.Rollouts++
	p.mu.Unlock()
}

func (p *Pool) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.closed:
	}
}

// Close stops the balancer, any rollout, and every backend.
func (p *Pool) Close() error {
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		return nil
	default:
		close(p.closed)
	}
	p.mu.Unlock()
	if p.lb != nil {
		p.lb.close()
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.backends {
		b.kill()
	}
	return nil
}

// backend is one echo server whose connections can be reset.
type backend struct {
	addr string
	ln   net.Listener
	srv  *http.Server

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startBackend(h http.Handler) (*backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback: backend listen: %w", err)
	}
	b := &backend{addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	b.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, s http.ConnState) {
			b.mu.Lock()
			defer b.mu.Unlock()
			switch s {
			case http.StateNew:
				b.conns[c] = struct{}{}
			case http.StateClosed, http.StateHijacked:
				delete(b.conns, c)
			}
		},
	}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

// kill closes the listener (new connections are refused) and resets every
// open connection; it returns how many were reset.
func (b *backend) kill() int {
	_ = b.ln.Close()
	b.mu.Lock()
	n := 0
	for c := range b.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST, not FIN
		}
		_ = c.Close()
		n++
	}
	b.mu.Unlock()
	_ = b.srv.Close()
	return n
}

// shutdown finishes active requests and closes idle connections (FIN).
func (b *backend) shutdown(limit time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		b.kill()
	}
}

// balancer is a round-robin L4 proxy on 127.0.0.1.
type balancer struct {
	ln      net.Listener
	mu      sync.Mutex
	targets []string
	next    int
	conns   map[net.Conn]struct{}
	refused atomic.Int64
	resets  atomic.Int64
	wg      sync.WaitGroup
}

func startBalancer() (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback: balancer listen: %w", err)
	}
	lb := &balancer{ln: ln, conns: map[net.Conn]struct{}{}}
	lb.wg.Add(1)
	go lb.accept()
	return lb, nil
}

func (lb *balancer) add(addr string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.targets = append(lb.targets, addr)
}

func (lb *balancer) remove(addr string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for i, a := range lb.targets {
		if a == addr {
			lb.targets = append(lb.targets[:i], lb.targets[i+1:]...)
			return
		}
	}
}

func (lb *balancer) pick() (string, bool) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if len(lb.targets) == 0 {
		return "", false
	}
	a := lb.targets[lb.next%len(lb.targets)]
	lb.next++
	return a, true
}

func (lb *balancer) track(c net.Conn, on bool) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if on {
		if lb.conns == nil {
			return false // closed
		}
		lb.conns[c] = struct{}{}
	} else if lb.conns != nil {
		delete(lb.conns, c)
	}
	return true
}

func (lb *balancer) accept() {
	defer lb.wg.Done()
	for {
		c, err := lb.ln.Accept()
		if err != nil {
			return
		}
		lb.wg.Add(1)
		go func() {
			defer lb.wg.Done()
			lb.proxy(c.(*net.TCPConn))
		}()
	}
}

// reset closes c with RST.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

func (lb *balancer) proxy(client *net.TCPConn) {
	if !lb.track(client, true) {
		reset(client)
		return
	}
	defer lb.track(client, false)
	addr, ok := lb.pick()
	if !ok {
		lb.refused.Add(1)
		reset(client)
		return
	}
	bc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		// What a client of a dead endpoint sees: no service. kube-proxy's
		// DNAT would show "refused" to the client itself; through a user
		// space proxy the accepted connection is reset instead.
		lb.refused.Add(1)
		reset(client)
		return
	}
	backendConn := bc.(*net.TCPConn)
	if !lb.track(backendConn, true) {
		reset(client)
		reset(backendConn)
		return
	}
	defer lb.track(backendConn, false)
	go func() {
		// client -> backend; when the client is done, so is the backend side.
		_, _ = io.Copy(backendConn, client)
		_ = backendConn.Close()
	}()
	_, err = io.Copy(client, backendConn)
	if errors.Is(err, syscall.ECONNRESET) {
		lb.resets.Add(1)
		reset(client)
	} else {
		_ = client.Close()
	}
	_ = backendConn.Close()
}

func (lb *balancer) close() {
	_ = lb.ln.Close()
	lb.mu.Lock()
	conns := lb.conns
	lb.conns = nil
	lb.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	lb.wg.Wait()
}
