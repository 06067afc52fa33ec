// Package probetest serves what a probe meets on loopback in tests: the
// refusals of an enforcer, for the judges that tell them from answers.
package probetest

import (
	"net"
	"testing"
)

// CutConnections accepts and closes every connection before any byte:
// what a STRICT enforcer does to a plaintext client (ztunnel: EOF; with
// linger 0, a sidecar's reset).
func CutConnections(t *testing.T, reset bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}
