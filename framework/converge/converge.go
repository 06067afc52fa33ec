// Package converge waits until a condition holds several polls in a row
// within a limit — the Gateway API conformance suite's habit
// (RequiredConsecutiveSuccesses), instead of a fixed sleep after a change.
// One true poll can be a proxy that got the push while its neighbour has
// not; N in a row is the configuration having settled.
package converge

import (
	"context"
	"fmt"
	"time"
)

// Policy bounds a wait: poll every Poll, succeed after Times consecutive
// true polls, give up after Limit.
type Policy struct {
	Poll  time.Duration
	Times int
	Limit time.Duration
}

// Validate names a policy that could never end or never start.
func (p Policy) Validate() error {
	switch {
	case p.Poll <= 0:
		return fmt.Errorf("converge: poll interval %s, want > 0", p.Poll)
	case p.Times < 1:
		return fmt.Errorf("converge: %d consecutive polls, want >= 1", p.Times)
	case p.Limit < p.Poll:
		return fmt.Errorf("converge: limit %s shorter than the poll interval %s", p.Limit, p.Poll)
	}
	return nil
}

// Condition is one poll: whether it holds and, either way, what was seen
// (for the record and for the timeout's message). An error is a poll that
// could not look (a port-forward that failed); it counts as not holding and
// is reported if the wait times out, so a flaky read never ends a wait early.
type Condition func(ctx context.Context) (held bool, seen string, err error)

// Wait is what one wait took, for the measured record: what it waited for,
// how long, how many polls, and the last thing seen.
type Wait struct {
	For   string        `json:"for"`
	Took  time.Duration `json:"took_ns"`
	Polls int           `json:"polls"`
	// Bounded is set for a documented fixed wait used where no condition
	// can be read (a CNI whose rules the suite cannot see); Seen says why.
	Bounded bool   `json:"bounded,omitempty"`
	Seen    string `json:"seen,omitempty"`
}

// Until polls cond until it holds p.Times polls in a row, or fails after
// p.Limit with an error naming what it waited for and the last thing seen.
func Until(ctx context.Context, p Policy, what string, cond Condition) (Wait, error) {
	w := Wait{For: what}
	if err := p.Validate(); err != nil {
		return w, err
	}
	start := time.Now()
	deadline := start.Add(p.Limit)
	row := 0
	var lastErr error
	for {
		held, seen, err := cond(ctx)
		w.Polls++
		w.Seen = seen
		switch {
		case err != nil:
			lastErr, row = err, 0
		case held:
			row++
		default:
			row = 0
		}
		w.Took = time.Since(start)
		if row >= p.Times {
			return w, nil
		}
		if !time.Now().Add(p.Poll).Before(deadline) {
			msg := fmt.Sprintf("%s: not true %d polls in a row within %s (%d polls; last seen: %s)", what, p.Times, p.Limit, w.Polls, orNothing(w.Seen))
			if lastErr != nil {
				return w, fmt.Errorf("%s; last read error: %w", msg, lastErr)
			}
			return w, fmt.Errorf("%s", msg)
		}
		select {
		case <-ctx.Done():
			return w, fmt.Errorf("%s: %w after %s", what, ctx.Err(), w.Took.Round(time.Millisecond))
		case <-time.After(p.Poll):
		}
	}
}

// Bounded is the documented fixed wait for a condition the suite cannot
// read; it is recorded as such (Wait.Bounded), never as a convergence.
func Bounded(ctx context.Context, d time.Duration, what, why string) (Wait, error) {
	start := time.Now()
	select {
	case <-ctx.Done():
		return Wait{For: what, Took: time.Since(start), Bounded: true, Seen: why}, ctx.Err()
	case <-time.After(d):
	}
	return Wait{For: what, Took: time.Since(start), Bounded: true, Seen: why}, nil
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
