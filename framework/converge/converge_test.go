package converge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

var fast = Policy{Poll: time.Millisecond, Times: 3, Limit: time.Second}

// seq answers the polls in order, then repeats the last answer.
func seq(answers ...bool) (Condition, *int) {
	n := 0
	return func(context.Context) (bool, string, error) {
		i := min(n, len(answers)-1)
		n++
		return answers[i], map[bool]string{true: "present", false: "absent"}[answers[i]], nil
	}, &n
}

// A true poll between false ones restarts the count: only Times in a row end it.
func TestUntilNeedsConsecutive(t *testing.T) {
	cond, n := seq(true, false, true, true, false, true, true, true)
	w, err := Until(context.Background(), fast, "x", cond)
	if err != nil {
		t.Fatal(err)
	}
	if *n != 8 || w.Polls != 8 {
		t.Fatalf("polls = %d (%d), want 8", w.Polls, *n)
	}
	if w.For != "x" || w.Seen != "present" {
		t.Fatalf("wait = %+v", w)
	}
}

// Negative control: a condition that never holds times out naming what was
// waited for and what was last seen.
func TestUntilTimesOutNamingWhat(t *testing.T) {
	cond, _ := seq(false)
	_, err := Until(context.Background(), Policy{Poll: time.Millisecond, Times: 2, Limit: 20 * time.Millisecond}, "ztunnel to carry policy ns/p", cond)
	if err == nil || !strings.Contains(err.Error(), "ztunnel to carry policy ns/p") || !strings.Contains(err.Error(), "last seen: absent") {
		t.Fatalf("err = %v", err)
	}
}

// Read errors never count as holding, and the last one is reported.
func TestUntilReadErrorsDoNotCount(t *testing.T) {
	boom := errors.New("port-forward refused")
	_, err := Until(context.Background(), Policy{Poll: time.Millisecond, Times: 1, Limit: 10 * time.Millisecond}, "x",
		func(context.Context) (bool, string, error) { return true, "", boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []Policy{{Poll: 0, Times: 1, Limit: time.Second}, {Poll: time.Second, Times: 0, Limit: time.Second}, {Poll: time.Second, Times: 1, Limit: time.Millisecond}} {
		if _, err := Until(context.Background(), p, "x", func(context.Context) (bool, string, error) { return true, "", nil }); err == nil {
			t.Errorf("policy %+v accepted", p)
		}
	}
}

func TestUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cond, _ := seq(false)
	if _, err := Until(ctx, Policy{Poll: time.Hour, Times: 1, Limit: 2 * time.Hour}, "x", cond); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestBoundedIsMarked(t *testing.T) {
	w, err := Bounded(context.Background(), time.Millisecond, "CNI to program", "no enforcer rules readable on provider existing")
	if err != nil || !w.Bounded || w.Seen == "" {
		t.Fatalf("w = %+v, err = %v", w, err)
	}
}
