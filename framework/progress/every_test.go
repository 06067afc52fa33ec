package progress_test

import (
	"sync"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/progress"
)

// Every calls f on its interval with a growing elapsed time, and never
// after stop has returned. The test waits for calls, not for a time: a
// loaded host may tick late, and only the order is judged.
func TestEveryTicksUntilStopped(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Duration
	three := make(chan struct{})
	stop := progress.Every(5*time.Millisecond, func(el time.Duration) {
		mu.Lock()
		seen = append(seen, el)
		if len(seen) == 3 {
			close(three)
		}
		mu.Unlock()
	})
	select {
	case <-three:
	case <-time.After(time.Minute):
		t.Fatal("fewer than 3 calls in a minute at 5ms")
	}
	stop()
	mu.Lock()
	n := len(seen)
	for i := 1; i < n; i++ {
		if seen[i] <= seen[i-1] {
			t.Errorf("elapsed not increasing: %v", seen)
		}
	}
	mu.Unlock()
	// Two intervals and more: a call still pending would have come.
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Errorf("called after stop: %d calls, then %d", n, len(seen))
	}
	stop() // a second stop is harmless
}

func TestEveryWithoutIntervalCallsNothing(t *testing.T) {
	called := false
	stop := progress.Every(0, func(time.Duration) { called = true })
	time.Sleep(10 * time.Millisecond)
	stop()
	if called {
		t.Error("called with interval 0")
	}
}

func TestLoadInterval(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		25 * time.Second: 0, 30 * time.Second: 15 * time.Second, 2 * time.Minute: 30 * time.Second, 10 * time.Minute: time.Minute,
	} {
		if got := progress.LoadInterval(d); got != want {
			t.Errorf("LoadInterval(%s) = %s, want %s", d, got, want)
		}
	}
}
