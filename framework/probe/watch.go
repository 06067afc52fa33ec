package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
)

// ErrWatchEnded is returned when a watch ended (its wait passed, or the
// changes it was asked for came) before each said stop.
var ErrWatchEnded = errors.New("the watch ended before its caller stopped it")

// WatchVia has the handler at base request target back to back (each
// request bounded by timeout, for at most wait) and calls each with every
// line it streams: who answered first, then each change of who answers,
// as the pod sees them. each runs while the watch goes on, so it can make
// the next change as soon as one is seen; it returns stop to end the watch.
func WatchVia(ctx context.Context, base, target string, timeout, wait time.Duration, changes int, each func(wp.Change) (stop bool, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	q := url.Values{"url": {target}, "timeout": {timeout.String()}, "watch": {wait.String()}, "changes": {fmt.Sprint(changes)}}
	resp, err := get(ctx, base, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		var c wp.Change
		if err := json.Unmarshal(lines.Bytes(), &c); err != nil {
			return fmt.Errorf("probe handler at %s: watch line %q: %w", base, lines.Text(), err)
		}
		stop, err := each(c)
		if err != nil || stop {
			return err
		}
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("probe handler at %s: watch: %w", base, err)
	}
	return ErrWatchEnded
}

// ClockOffset estimates how far the pod's clock is ahead of this host's
// (pod minus host) from samples round trips to the handler at base: each
// asks the pod's time, and the pod's answer is set against the middle of
// the round trip, so the error is at most half of it; the sample with the
// shortest round trip is kept. On one host (kind, the local provider) the
// clocks are one and the offset is zero within the uncertainty.
func ClockOffset(ctx context.Context, base string, samples int) (offset, uncertainty time.Duration, err error) {
	if samples < 1 {
		return 0, 0, fmt.Errorf("probe: clock samples %d; accepted: 1 or more", samples)
	}
	best := time.Duration(-1)
	for i := 0; i < samples; i++ {
		var c wp.Clock
		sent := time.Now()
		if err := call(ctx, base, url.Values{"clock": {"1"}}, 10*time.Second, &c); err != nil {
			return 0, 0, err
		}
		back := time.Now()
		rtt := back.Sub(sent)
		if best < 0 || rtt < best {
			best = rtt
			mid := sent.Add(rtt / 2)
			offset = time.Unix(0, c.UnixNano).Sub(mid)
		}
	}
	return offset, best / 2, nil
}
