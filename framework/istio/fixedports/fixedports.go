// Package fixedports serialises, across processes, the tests that run
// Istio's binaries on the host: pilot-agent and istiod bind fixed ports
// (15000, 15010, 15012, 15014, 15017, 15020, 15021, 15090), and `go test
// ./...` runs the packages that hold such tests in parallel processes, so a
// lock inside one test binary would not stop two of them colliding on
// "cannot bind '127.0.0.1:15000': Address already in use".
package fixedports

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// LockFile is the lock every such test takes, in the host's temporary
// directory so that every checkout and worktree on the host shares it.
var LockFile = filepath.Join(os.TempDir(), "meshclaims-istio-fixed-ports.lock")

// Lock takes the lock for the rest of tb, waiting for other holders; it is
// released when tb ends (or when its process dies: flock locks go with the
// file descriptor). It fails tb if the lock file cannot be opened.
func Lock(tb testing.TB) {
	tb.Helper()
	release, err := Acquire(LockFile)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(release)
}

// Acquire blocks until it holds an exclusive lock on path, and returns the
// function that releases it.
func Acquire(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("fixedports: opening lock %s: %w", path, err)
	}
	start := time.Now()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("fixedports: locking %s: %w", path, err)
	}
	if waited := time.Since(start); waited > time.Second {
		fmt.Fprintf(os.Stderr, "fixedports: waited %s for %s (another test ran Istio's binaries)\n", waited.Round(time.Second), path)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
