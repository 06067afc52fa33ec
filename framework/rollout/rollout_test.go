package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/rollout"
)

// scripted is a Driver for the loop's own logic: each restart takes wait,
// and the cycles listed in fail report a timeout.
type scripted struct {
	restarts   int
	wait       time.Duration
	fail       map[int]bool
	restartErr error
}

func (s *scripted) Restart(context.Context) error {
	s.restarts++
	return s.restartErr
}

func (s *scripted) WaitComplete(_ context.Context, limit time.Duration) error {
	time.Sleep(s.wait)
	if s.fail[s.restarts-1] {
		return errors.New("2 old replicas pending termination")
	}
	return nil
}

func TestRunRepeatsUntilAndRecordsCycles(t *testing.T) {
	d := &scripted{wait: 20 * time.Millisecond, fail: map[int]bool{1: true}}
	var seen []int
	until := time.Now().Add(150 * time.Millisecond)
	cycles, err := rollout.Run(context.Background(), d, until, time.Second, func(c rollout.Cycle) { seen = append(seen, c.Index) })
	if len(cycles) < 2 || len(cycles) != d.restarts || len(seen) != len(cycles) {
		t.Fatalf("cycles %d restarts %d progress %d", len(cycles), d.restarts, len(seen))
	}
	if err == nil || !strings.Contains(err.Error(), "cycle 1: rollout not complete: 2 old replicas") {
		t.Errorf("err = %v, want cycle 1's timeout", err)
	}
	if cycles[1].Err == nil || cycles[0].Err != nil || cycles[1].Error == "" {
		t.Errorf("cycle errors misplaced: %+v", cycles[:2])
	}
	last := cycles[len(cycles)-1]
	if !last.Start.Before(until) {
		t.Errorf("a cycle started after until: %v >= %v", last.Start, until)
	}
	for i, c := range cycles {
		if c.Index != i || c.End.Before(c.Restarted) || c.Restarted.Before(c.Start) {
			t.Errorf("cycle %d times out of order: %+v", i, c)
		}
		if i > 0 && c.Start.Before(cycles[i-1].End) {
			t.Errorf("cycle %d started before cycle %d ended", i, i-1)
		}
	}
}

func TestRunStopsOnRestartError(t *testing.T) {
	d := &scripted{restartErr: errors.New("forbidden")}
	cycles, err := rollout.Run(context.Background(), d, time.Now().Add(time.Second), time.Second, nil)
	if len(cycles) != 1 || err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("cycles %d err %v", len(cycles), err)
	}
}

func TestRunRejectsBadLimit(t *testing.T) {
	if _, err := rollout.Run(context.Background(), &scripted{}, time.Now().Add(time.Second), 0, nil); err == nil || !strings.Contains(err.Error(), "limit = 0s") {
		t.Errorf("err = %v", err)
	}
}

func TestCountPerCycle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	cycles := []rollout.Cycle{{Start: at(0), End: at(5)}, {Start: at(6), End: at(9)}, {Start: at(10), End: at(12)}}
	per, before := rollout.CountPerCycle([]time.Time{at(-1), at(0), at(4.9), at(5.5), at(6), at(11), at(30)}, cycles)
	want := []int{3, 1, 2}
	for i := range want {
		if per[i] != want[i] {
			t.Fatalf("per cycle %v, want %v", per, want)
		}
	}
	if before != 1 {
		t.Errorf("before = %d, want 1", before)
	}
}
