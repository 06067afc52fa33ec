package conntrackfill

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func params() Params {
	return Params{Connections: 4000, ConnectTimeout: 5 * time.Second, QuietBelow: 500, QuietPoll: time.Millisecond, QuietTimeout: time.Second}
}

func TestParseCount(t *testing.T) {
	if n, err := ParseCount(CountFile, []byte("223\n")); err != nil || n != 223 {
		t.Fatalf("ParseCount(223) = %d, %v", n, err)
	}
	for _, bad := range []string{"", "-1\n", "abc\n", "12 13\n"} {
		if _, err := ParseCount(CountFile, []byte(bad)); err == nil || !strings.Contains(err.Error(), CountFile) {
			t.Errorf("ParseCount(%q) = %v, want an error naming the file", bad, err)
		}
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	for name, mut := range map[string]func(*Params){
		"conntrack limit -1": func(p *Params) { p.Limit = -1 },
		"connections 0":      func(p *Params) { p.Connections = 0 },
		"connect timeout 0s": func(p *Params) { p.ConnectTimeout = 0 },
		"quiet threshold 0":  func(p *Params) { p.QuietBelow = 0 },
	} {
		p := params()
		mut(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Validate() = %v", name, err)
		}
	}
	if err := params().Validate(); err != nil {
		t.Fatal(err)
	}
}

// The wait ends at the first count below the threshold and reports it; a
// table that never drains is an error naming its last count.
func TestWaitQuiet(t *testing.T) {
	counts := []int64{900, 700, 499, 10}
	i := 0
	n, err := WaitQuiet(context.Background(), params(), func() (int64, error) { i++; return counts[i-1], nil })
	if err != nil || n != 499 || i != 3 {
		t.Fatalf("WaitQuiet = %d, %v after %d reads; want 499 after 3", n, err, i)
	}
	p := params()
	p.QuietTimeout = 20 * time.Millisecond
	_, err = WaitQuiet(context.Background(), p, func() (int64, error) { return 812, nil })
	if err == nil || !strings.Contains(err.Error(), "812") {
		t.Fatalf("a table stuck at 812: %v", err)
	}
	boom := errors.New("no such file")
	if _, err := WaitQuiet(context.Background(), params(), func() (int64, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("a read error: %v", err)
	}
}

// Dial on this host's loopback, with no limit of its own: every connect is
// established and timed.
func TestDialLoopback(t *testing.T) {
	p := params()
	p.Connections = 200
	var r Result
	if err := Dial(context.Background(), p, &r); err != nil {
		t.Fatal(err)
	}
	if r.Succeeded != 200 || r.Failed != 0 || r.FailedOther != 0 || len(r.ConnectMs) != 200 {
		t.Fatalf("200 loopback connects: %+v", r)
	}
	if mx, _ := r.MaxMs(); mx <= 0 || mx > 5000 {
		t.Fatalf("max connect time %v ms", mx)
	}
}

// Negative control: a port nothing listens on refuses every connect, which
// counts as failed otherwise (with the kernel's error), not as a timeout
// and not as established.
func TestDialRefusedIsNotATimeout(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	p := params()
	p.Connections = 20
	var r Result
	if err := dialAll(context.Background(), p, &r, port, nil); err != nil {
		t.Fatal(err)
	}
	if r.Succeeded != 0 || r.Failed != 0 || r.FailedOther != 20 || r.OtherErrors["connect: connection refused"] != 20 {
		t.Fatalf("20 connects to a closed port: %+v", r)
	}
}

// The hook Run reads its last count in runs once all connects have
// finished and while every connection is still open: a connection accepted
// from the listener in the hook is not closed by its client yet (a read
// times out rather than ending), and all 50 are counted.
func TestDialHookRunsWhileConnectionsAreOpen(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := params()
	p.Connections = 50
	var r Result
	calls, succeededThen := 0, 0
	var readErr error
	hook := func() {
		calls++
		succeededThen = r.Succeeded
		c, err := ln.Accept()
		if err != nil {
			readErr = err
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, readErr = c.Read(make([]byte, 1))
	}
	if err := dialAll(context.Background(), p, &r, ln.Addr().(*net.TCPAddr).Port, hook); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || succeededThen != 50 {
		t.Fatalf("hook called %d times, with %d of 50 connects established", calls, succeededThen)
	}
	var ne net.Error
	if !errors.As(readErr, &ne) || !ne.Timeout() {
		t.Fatalf("read from an accepted connection in the hook: %v (want a timeout: the client still holds it open)", readErr)
	}
	// Negative control: after dialAll the clients have closed, so the next
	// accepted connection reads its end.
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) {
		t.Fatalf("read after dialAll returned: %v (want the end of a closed connection)", err)
	}
}
