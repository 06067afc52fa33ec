// Package netfault serves, on 127.0.0.1, TCP peers that fail the ways the
// suite's detectors classify: a reset after the request, a close without an
// answer (EOF), and silence until the client's timeout. Tests of the load
// engine, the probes and the judges point real clients (fortio, net/http) at
// them, so the errors they judge are the ones Go and fortio really produce.
package netfault

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// Serve accepts connections on 127.0.0.1 until tb ends and hands each to
// handle; it returns the listener's address.
func Serve(tb testing.TB, handle func(c *net.TCPConn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c.(*net.TCPConn))
		}
	}()
	return ln.Addr().String()
}

// Reset reads the request line, then closes with SO_LINGER 0: an RST, as a
// sidecar refusing plaintext under STRICT does ("connection reset by peer").
func Reset(tb testing.TB) string {
	tb.Helper()
	return Serve(tb, func(c *net.TCPConn) {
		_, _ = bufio.NewReader(c).ReadString('\n')
		_ = c.SetLinger(0)
		_ = c.Close()
	})
}

// EOF reads the request headers, then closes normally (FIN) without an
// answer: the client reads EOF, as from ztunnel closing a plaintext call.
func EOF(tb testing.TB) string {
	tb.Helper()
	return Serve(tb, func(c *net.TCPConn) {
		r := bufio.NewReader(c)
		for {
			l, err := r.ReadString('\n')
			if err != nil || l == "\r\n" {
				break
			}
		}
		_ = c.Close()
	})
}

// Silent accepts and never answers for d: a client with a shorter timeout
// sees "i/o timeout", as when a NetworkPolicy drops its packets after
// ztunnel accepted the connect.
func Silent(tb testing.TB, d time.Duration) string {
	tb.Helper()
	return Serve(tb, func(c *net.TCPConn) {
		time.Sleep(d)
		_ = c.Close()
	})
}
