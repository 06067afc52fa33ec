// Package rollout drives the restart loop of GUIDE T1 while a load runs:
// restart the workload, wait until the rollout completes (60 s limit in
// GUIDE), and again, until the load ends. Each cycle's start and end are
// recorded so that the load's errors can be placed on a timeline and counted
// per cycle (modes completed different numbers of cycles; REVIEW asks for
// errors per cycle).
//
// The workload is behind Driver: rollout/deployment restarts a Kubernetes
// Deployment (kubectl rollout restart + rollout status), rollout/loopback a
// pool of fortio echo backends on 127.0.0.1 for tests.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// GuideLimit is GUIDE T1's `kubectl rollout status --timeout=60s`.
const GuideLimit = 60 * time.Second

// Driver restarts one workload and waits for the restart to finish.
type Driver interface {
	// Restart starts a rolling restart and returns without waiting for it
	// (kubectl rollout restart).
	Restart(ctx context.Context) error
	// WaitComplete returns nil once the restart is complete, or an error
	// naming what is still pending when timeout passes (kubectl rollout
	// status --timeout).
	WaitComplete(ctx context.Context, timeout time.Duration) error
}

// Cycle is one restart-and-wait.
type Cycle struct {
	Index     int       // 0-based
	Start     time.Time // before Restart was called
	Restarted time.Time // Restart returned
	End       time.Time // WaitComplete returned
	Err       error     `json:"-"`
	Error     string    `json:",omitempty"` // Err as text, for the kept timeline
}

// Duration is End-Start.
func (c Cycle) Duration() time.Duration { return c.End.Sub(c.Start) }

// Run restarts d and waits for completion (at most limit each time), cycle
// after cycle, until the time until has passed; a cycle started before until
// runs to its end. progress, if not nil, is called after each cycle.
//
// Like GUIDE's shell loop, a rollout that does not complete within limit is
// recorded in its Cycle and the loop goes on; Run then returns every cycle
// and an error joining the cycles' errors. A failing Restart ends the loop
// (the next one would fail the same way), and so does ctx.
func Run(ctx context.Context, d Driver, until time.Time, limit time.Duration, progress func(Cycle)) ([]Cycle, error) {
	if d == nil {
		return nil, errors.New("rollout.Run: Driver is nil")
	}
	if limit <= 0 {
		return nil, fmt.Errorf("rollout.Run: limit = %v: accepted: a positive duration (GUIDE uses %v)", limit, GuideLimit)
	}
	var cycles []Cycle
	var errs []error
	for i := 0; time.Now().Before(until); i++ {
		if err := ctx.Err(); err != nil {
			return cycles, errors.Join(append(errs, err)...)
		}
		c := Cycle{Index: i, Start: time.Now()}
		err := d.Restart(ctx)
		c.Restarted = time.Now()
		if err != nil {
			c.End = c.Restarted
			c.Err = fmt.Errorf("cycle %d: restart: %w", i, err)
			c.Error = c.Err.Error()
			cycles = append(cycles, c)
			if progress != nil {
				progress(c)
			}
			return cycles, errors.Join(append(errs, c.Err)...)
		}
		err = d.WaitComplete(ctx, limit)
		c.End = time.Now()
		if err != nil {
			c.Err = fmt.Errorf("cycle %d: rollout not complete: %w", i, err)
			c.Error = c.Err.Error()
			errs = append(errs, c.Err)
		}
		cycles = append(cycles, c)
		if progress != nil {
			progress(c)
		}
	}
	return cycles, errors.Join(errs...)
}

// CountPerCycle places each error time on the cycles' timeline: an error
// belongs to the last cycle that started at or before it (a cycle's window
// runs from its Start to the next cycle's Start, and the last one to the end
// of time, since the load ends during or just after it). Errors before the
// first cycle are counted in before. cycles must be in Start order, as Run
// returns them.
func CountPerCycle(errorTimes []time.Time, cycles []Cycle) (perCycle []int, before int) {
	perCycle = make([]int, len(cycles))
	for _, t := range errorTimes {
		// index of the first cycle starting after t
		i := sort.Search(len(cycles), func(i int) bool { return cycles[i].Start.After(t) })
		if i == 0 {
			before++
			continue
		}
		perCycle[i-1]++
	}
	return perCycle, before
}
