package progress

import (
	"sync"
	"time"
)

// Every calls f with the time since it started, every interval, until
// stop is called; stop returns once no call is under way, so nothing is
// printed after it. An interval of 0 or less calls nothing.
func Every(interval time.Duration, f func(elapsed time.Duration)) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	start := time.Now()
	t := time.NewTicker(interval)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				select {
				case <-done:
					return
				default:
				}
				f(now.Sub(start))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.Stop()
			close(done)
			wg.Wait()
		})
	}
}

// LoadInterval is how often a load of duration d reports how far it is: a
// quarter of it, from 15 s to a minute apart; never for a load under 30 s,
// which its start and end lines bracket closely enough.
func LoadInterval(d time.Duration) time.Duration {
	if d < 30*time.Second {
		return 0
	}
	return min(max(d/4, 15*time.Second), time.Minute)
}
