package fixedports

import (
	"path/filepath"
	"testing"
	"time"
)

// A second holder waits until the first releases: the lock excludes (the
// negative control: without the release the second acquire never returns).
func TestAcquireExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	release, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := Acquire(path)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("a second holder got the lock while the first held it")
	case <-time.After(300 * time.Millisecond):
	}
	release()
	select {
	case r := <-got:
		if r != nil {
			r()
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second holder did not get the lock once it was released")
	}
	if _, err := Acquire(filepath.Join(t.TempDir(), "no", "such", "dir", "lock")); err == nil {
		t.Error("a lock in a missing directory was acquired")
	}
}
