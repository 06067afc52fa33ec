// Package conntrackfill is the measurement HYBRID describes for a full
// conntrack table: wait until the table holds fewer than a threshold of
// entries, record how many it holds, set nf_conntrack_max, open N TCP
// connections on loopback at once, each with a connect timeout, and count
// how many were established, how many were not, and how long the
// established ones took. It runs inside a disposable VM's kernel (cmd/
// conntrackvm), where nf_conntrack_max is writable; it uses real sockets and
// the kernel's own /proc files, nothing simulated.
package conntrackfill

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's files: the table's entry count and its limit (init network
// namespace: inside any other the limit is read-only).
const (
	CountFile = "/proc/sys/net/netfilter/nf_conntrack_count"
	MaxFile   = "/proc/sys/net/netfilter/nf_conntrack_max"
)

// Params is one run of the measurement.
type Params struct {
	// Limit is the nf_conntrack_max to set; 0 keeps the kernel's value.
	Limit int64 `json:"limit"`
	// Connections opened at once (HYBRID: 4,000).
	Connections int `json:"connections"`
	// ConnectTimeout bounds each connect (HYBRID: 5 s).
	ConnectTimeout time.Duration `json:"connect_timeout"`
	// QuietBelow: the run starts once the table holds fewer entries
	// (HYBRID: 500), polled every QuietPoll for at most QuietTimeout.
	QuietBelow   int64         `json:"quiet_below"`
	QuietPoll    time.Duration `json:"quiet_poll"`
	QuietTimeout time.Duration `json:"quiet_timeout"`
}

// Validate names the bad field and what is accepted.
func (p Params) Validate() error {
	switch {
	case p.Limit < 0:
		return fmt.Errorf("conntrack limit %d: want 0 (keep the kernel's) or a positive nf_conntrack_max", p.Limit)
	case p.Connections < 1:
		return fmt.Errorf("connections %d: want at least 1", p.Connections)
	case p.ConnectTimeout <= 0:
		return fmt.Errorf("connect timeout %s: want a positive duration", p.ConnectTimeout)
	case p.QuietBelow < 1:
		return fmt.Errorf("quiet threshold %d entries: want at least 1", p.QuietBelow)
	case p.QuietPoll <= 0 || p.QuietTimeout <= 0:
		return fmt.Errorf("quiet poll %s / timeout %s: want positive durations", p.QuietPoll, p.QuietTimeout)
	}
	return nil
}

// Result is what one run measured.
type Result struct {
	Params Params `json:"params"`
	// Kernel is the release the measurement ran on (uname -r).
	Kernel string `json:"kernel"`
	// LimitBefore is nf_conntrack_max as found, Limit as set and read back.
	LimitBefore int64 `json:"limit_before"`
	Limit       int64 `json:"limit"`
	// EntriesBefore is the table's count when the wait ended; EntriesPeak
	// the highest count read while the connections were open.
	EntriesBefore int64 `json:"entries_before"`
	EntriesPeak   int64 `json:"entries_peak"`
	Succeeded     int   `json:"succeeded"`
	// Failed counts connects that were not established within the timeout;
	// FailedOther those that failed otherwise (refused, out of files...),
	// kept apart because they are not what the claim is about.
	Failed      int            `json:"failed"`
	FailedOther int            `json:"failed_other"`
	OtherErrors map[string]int `json:"other_errors,omitempty"`
	// ConnectMs are the established connections' connect times, sorted.
	ConnectMs []float64 `json:"connect_ms"`
	// IssueMs is how long issuing every connect took, first to last.
	IssueMs float64 `json:"issue_ms"`
	// Sysctls are the kernel settings besides the limit that decide how a
	// burst of connects is queued (backlogs, SYN cookies), as read.
	Sysctls map[string]string `json:"sysctls,omitempty"`
}

// QueueSysctls are the settings Result.Sysctls records.
var QueueSysctls = []string{"net/core/somaxconn", "net/ipv4/tcp_max_syn_backlog", "net/ipv4/tcp_syncookies", "net/ipv4/tcp_syn_retries"}

// MaxMs is the slowest established connect, in ms.
func (r Result) MaxMs() (float64, bool) {
	if len(r.ConnectMs) == 0 {
		return 0, false
	}
	return slices.Max(r.ConnectMs), true
}

// kernelRelease is the running kernel's release, "" when unreadable.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ReadCount parses a /proc/sys integer file (nf_conntrack_count, _max).
func ReadCount(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return ParseCount(path, b)
}

// ParseCount parses the contents of a /proc/sys integer file: one decimal
// integer and a newline.
func ParseCount(path string, b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q is not a non-negative integer", path, s)
	}
	return n, nil
}

// WaitQuiet polls the table's count until it is below p.QuietBelow and
// returns that count. It waits for the table's idle state, not for any
// outcome of the measurement that follows.
func WaitQuiet(ctx context.Context, p Params, count func() (int64, error)) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.QuietTimeout)
	defer cancel()
	t := time.NewTicker(p.QuietPoll)
	defer t.Stop()
	last := int64(-1)
	for {
		n, err := count()
		if err != nil {
			return 0, err
		}
		if n < p.QuietBelow {
			return n, nil
		}
		last = n
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the conntrack table still held %d entries (want < %d) after %s", last, p.QuietBelow, p.QuietTimeout)
		case <-t.C:
		}
	}
}

// Run is the whole measurement in the kernel it runs on: it needs root in
// the init network namespace with nf_conntrack loaded and tracking.
func Run(ctx context.Context, p Params) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	r := Result{Params: p, Kernel: kernelRelease(), Sysctls: map[string]string{}}
	for _, k := range QueueSysctls {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			r.Sysctls[strings.ReplaceAll(k, "/", ".")] = strings.TrimSpace(string(b))
		}
	}
	var err error
	if r.LimitBefore, err = ReadCount(MaxFile); err != nil {
		return r, fmt.Errorf("conntrack is not loaded (%w)", err)
	}
	if r.EntriesBefore, err = WaitQuiet(ctx, p, func() (int64, error) { return ReadCount(CountFile) }); err != nil {
		return r, err
	}
	if p.Limit > 0 {
		if err := os.WriteFile(MaxFile, []byte(strconv.FormatInt(p.Limit, 10)), 0); err != nil {
			return r, fmt.Errorf("set nf_conntrack_max to %d: %w", p.Limit, err)
		}
	}
	if r.Limit, err = ReadCount(MaxFile); err != nil {
		return r, err
	}
	if p.Limit > 0 && r.Limit != p.Limit {
		return r, fmt.Errorf("nf_conntrack_max reads %d after writing %d", r.Limit, p.Limit)
	}
	peak := make(chan int64, 1)
	stop := make(chan struct{})
	go func() { peak <- watchPeak(stop, func() (int64, error) { return ReadCount(CountFile) }) }()
	// The 10 ms watcher can miss the last connects, which complete just
	// before the sockets close (CI once read a peak of 3,988 of 4,000 at the
	// default limit), so the count is also read once with every socket still
	// open.
	var whileOpen int64
	err = dial(ctx, p, &r, func() {
		if n, err := ReadCount(CountFile); err == nil {
			whileOpen = n
		}
	})
	close(stop)
	r.EntriesPeak = max(<-peak, whileOpen)
	return r, err
}

// watchPeak reads the count every 10 ms until stop and returns the highest.
func watchPeak(stop <-chan struct{}, count func() (int64, error)) int64 {
	var hi int64
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if n, err := count(); err == nil && n > hi {
			hi = n
		}
		select {
		case <-stop:
			return hi
		case <-t.C:
		}
	}
}

// reapEvery is how many connects Dial issues between reads of the
// completed ones: a connect's time includes at most the issuing of the
// reapEvery-1 after it (about 4 ms in the VM).
const reapEvery = 16

// Dial listens on 127.0.0.1 and opens p.Connections connections to it at
// once: non-blocking connects issued back to back from one thread, their
// completion read from epoll, so the time a connect takes is the kernel's
// (handshake, SYN retransmissions) and not a scheduler's. Each connect is
// bounded by p.ConnectTimeout from its own connect call. The listener does
// not accept: a connect completes with the handshake and the kernel holds
// the established connections in the listener's queue (its backlog, capped
// by net.core.somaxconn, must cover p.Connections, or the queue drops
// handshakes as a full table would). Every socket stays open until all have
// finished, since a closed connection's entry would free room for the next.
// It fills r's counts, connect times and IssueMs. Usable on any Linux host
// for a run without a limit.
func Dial(ctx context.Context, p Params, r *Result) error {
	return dial(ctx, p, r, nil)
}

// dial is Dial, calling whileOpen (when not nil) once every connect has
// finished and before any socket is closed.
func dial(ctx context.Context, p Params, r *Result, whileOpen func()) error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	return dialAll(ctx, p, r, ln.Addr().(*net.TCPAddr).Port, whileOpen)
}

// dialAll is dial's connects, to 127.0.0.1:port.
func dialAll(ctx context.Context, p Params, r *Result, port int, whileOpen func()) error {
	sa := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	defer unix.Close(epfd)

	n := p.Connections
	fds := make([]int, n)
	start := make([]time.Time, n)
	pending := 0
	r.OtherErrors = map[string]int{}
	defer func() {
		// A pending socket is fd, a finished one -fd-1 (still open: see
		// above), a socket that never opened -1. Before, only fd > 0 was
		// closed, so every finished connection leaked its descriptor
		// past Dial.
		for _, fd := range fds {
			switch {
			case fd >= 0:
				_ = unix.Close(fd)
			case fd < -1:
				_ = unix.Close(-fd - 1)
			}
		}
		if len(r.OtherErrors) == 0 {
			r.OtherErrors = nil
		}
		slices.Sort(r.ConnectMs)
	}()
	succeed := func(i int, now time.Time) {
		r.Succeeded++
		r.ConnectMs = append(r.ConnectMs, float64(now.Sub(start[i]).Microseconds())/1000)
	}
	fail := func(err error) {
		if errors.Is(err, unix.ETIMEDOUT) {
			r.Failed++ // the kernel gave up its SYN retries first
			return
		}
		r.FailedOther++
		r.OtherErrors[err.Error()]++
	}
	events := make([]unix.EpollEvent, 256)
	// reap reads completed connects, waiting at most ms (0: only those
	// already complete).
	reap := func(ms int) error {
		k, err := unix.EpollWait(epfd, events, ms)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		now := time.Now()
		for _, ev := range events[:max(k, 0)] {
			i := int(ev.Fd)
			fd := fds[i]
			if fd < 0 {
				continue
			}
			_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil)
			fds[i] = -fd - 1
			pending--
			if now.Sub(start[i]) > p.ConnectTimeout {
				r.Failed++ // completed, but past the timeout the client would have given up at
				continue
			}
			switch soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); {
			case err != nil:
				fail(fmt.Errorf("getsockopt SO_ERROR: %w", err))
			case soErr == 0:
				succeed(i, now)
			default:
				fail(fmt.Errorf("connect: %w", unix.Errno(soErr)))
			}
		}
		return nil
	}
	first := time.Now()
	for i := range fds {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fds[i] = -1
			fail(fmt.Errorf("socket: %w", err))
			continue
		}
		fds[i] = fd
		start[i] = time.Now()
		switch err := unix.Connect(fd, sa); {
		case err == nil:
			succeed(i, time.Now())
			fds[i] = -fd - 1 // done, still to close
		case errors.Is(err, unix.EINPROGRESS):
			ev := unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(i)}
			if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
				return fmt.Errorf("epoll_ctl: %w", err)
			}
			pending++
		default:
			fail(fmt.Errorf("connect: %w", err))
		}
		// Read completions as they come, so a connect's time is not the
		// time spent issuing all the ones after it; every reapEvery
		// connects, so the reading costs few syscalls and the connects
		// still go out nearly at once.
		if i%reapEvery == reapEvery-1 {
			if err := reap(0); err != nil {
				return err
			}
		}
	}
	r.IssueMs = float64(time.Since(first).Microseconds()) / 1000
	next := 0 // the oldest connect that may still be pending: deadlines come in index order
	for pending > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		for next < n && fds[next] < 0 {
			next++
		}
		wait := time.Until(start[next].Add(p.ConnectTimeout))
		if err := reap(min(max(int(wait.Milliseconds())+1, 1), 100)); err != nil {
			return err
		}
		// Connects past their timeout are given up, as a client's would be.
		now := time.Now()
		for i := next; i < n && now.Sub(start[i]) >= p.ConnectTimeout; i++ {
			if fd := fds[i]; fd >= 0 {
				_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil)
				fds[i] = -fd - 1
				pending--
				r.Failed++
			}
		}
	}
	if whileOpen != nil {
		whileOpen()
	}
	return nil
}
