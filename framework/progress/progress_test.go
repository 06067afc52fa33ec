package progress_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/progress"
)

// clock is a time the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// plan gives the set-up and each spec a fixed time; unknown specs have no
// known cost.
type plan struct {
	setUp   time.Duration
	specs   map[string]time.Duration
	unknown []string
}

func (p plan) Left(setUpDone bool, done map[string]bool) (time.Duration, int) {
	var left time.Duration
	n := 0
	if !setUpDone {
		left += p.setUp
	}
	for k, d := range p.specs {
		if !done[k] {
			left += d
		}
	}
	for _, k := range p.unknown {
		if !done[k] {
			n++
		}
	}
	return left, n
}

func start() *clock { return &clock{time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)} }

func TestSetUpPhasesSayHowLongEachTook(t *testing.T) {
	c := start()
	var out bytes.Buffer
	p := progress.New(&out, c.now, plan{setUp: 5 * time.Minute, specs: map[string]time.Duration{"a [none]": 2 * time.Minute}})
	p.Phase("cluster")
	c.advance(90 * time.Second)
	p.Phase("workload image")
	c.advance(12 * time.Second)
	p.SetUpDone(nil)
	want := []string{
		"10:00:00 set-up: cluster ...",
		"10:01:30 set-up: cluster took 1m30s",
		"10:01:30 set-up: workload image ...",
		"10:01:42 set-up: workload image took 12s",
		"10:01:42 set-up done after 1m42s",
		"10:01:42 time left by the plan: 2m0s",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", out.String(), strings.Join(want, "\n"))
	}
}

// The failure's text is left to the caller's failure message, which
// prints it once.
func TestSetUpFailureIsOneLine(t *testing.T) {
	c := start()
	var out bytes.Buffer
	p := progress.New(&out, c.now, nil)
	p.Phase("cluster")
	c.advance(3 * time.Second)
	p.SetUpDone(errors.New("provider kind: no container engine\n  tried docker, podman"))
	s := out.String()
	if !strings.Contains(s, "set-up: cluster took 3.0s\n") || !strings.Contains(s, "set-up failed after 3.0s; no spec will run (why follows)\n") {
		t.Errorf("got\n%s", s)
	}
	if strings.Contains(s, "time left") || strings.Contains(s, "no container engine") {
		t.Errorf("a failed set-up prints no time left and leaves the error to the failure:\n%s", s)
	}
	p.Total(12)
	p.Finished("results/r1/report.md")
	if !strings.Contains(out.String(), "finished after 0s: the set-up failed, so none of the 12 specs ran\n") {
		t.Errorf("got\n%s", out.String())
	}
}

// Each spec: "spec N of M" as it starts, one verdict line as it ends, the
// time left re-estimated; at the end the counts and the report.
func TestSpecsCountAndTimeLeftShrinks(t *testing.T) {
	c := start()
	var out bytes.Buffer
	pl := plan{specs: map[string]time.Duration{"a [none]": time.Minute, "b [sidecar]": 2 * time.Minute, "c [sidecar]": 4 * time.Minute}, unknown: []string{"d [sidecar]"}}
	p := progress.New(&out, c.now, pl)
	p.Total(4)
	p.SetUpDone(nil)
	p.SpecStarted("a [none]", "")
	c.advance(2 * time.Minute)
	p.SpecEnded(progress.Ended{Key: "a [none]", Verdict: "reproduced", Measured: "0 of\n6000", Documented: "0"})
	p.SpecStarted("b [sidecar]", "the b claim")
	c.advance(3 * time.Second)
	p.SpecEnded(progress.Ended{Key: "b [sidecar]", Verdict: "not reproduced", Measured: "4 of 6000 (0.07%)", Documented: "0", Note: "not gating: -fail-on=error"})
	p.SpecStarted("c [sidecar]", "")
	p.SpecEnded(progress.Ended{Key: "c [sidecar]", Verdict: "not reproduced", Measured: "9 of 6000", Documented: "0",
		Failure: "c [sidecar] not reproduced: 9 of 6000 excludes 0\n  documented: 0\n  measured: 9 of 6000"})
	p.SpecStarted("d [sidecar]", "")
	c.advance(time.Second)
	p.SpecEnded(progress.Ended{Key: "d [sidecar]", Failure: "the measurement itself failed\nstack"})
	p.Finished("results/r1/report.md")
	s := out.String()
	for _, w := range []string{
		"10:00:00 time left by the plan: 7m0s (1 costs unknown, not included)\n",
		"10:00:00 spec 1 of 4: a [none] (planned 1m0s)\n",
		"10:02:00 spec 1 of 4 done in 2m0s: a [none] reproduced: measured 0 of 6000; documented 0\n",
		// The pace: 2 min spent on 1 min planned.
		"10:02:00 time left by the plan: 6m0s (1 costs unknown, not included); at this run's pace so far (2.00x the plan): 12m0s\n",
		"10:02:00 spec 2 of 4: b [sidecar] the b claim (planned 2m0s)\n",
		"10:02:03 spec 2 of 4 done in 3.0s: b [sidecar] not reproduced: measured 4 of 6000 (0.07%); documented 0 (not gating: -fail-on=error)\n",
		"10:02:03 spec 3 of 4 done in 0s: c [sidecar] not reproduced: measured 9 of 6000; documented 0; the spec fails on it: 9 of 6000 excludes 0\n",
		"10:02:04 spec 4 of 4 done in 1.0s: d [sidecar] failed without a verdict: the measurement itself failed ...\n",
		"finished after 2m4s: 4 of 4 specs ran; verdicts: 1 reproduced, 2 not reproduced, 1 without a verdict\n",
		"report: results/r1/report.md\n",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in\n%s", w, s)
		}
	}
	// A spec whose cost the plan does not know gets no planned time.
	if strings.Contains(s, "d [sidecar] (planned") {
		t.Errorf("a spec of unknown cost shows a planned time:\n%s", s)
	}
}

// A spec whose loads the plan knows but not its other costs shows its
// loads' time, saying the rest is unknown.
func TestPlannedLoadsOfASpecOfUnknownCost(t *testing.T) {
	var out bytes.Buffer
	p := progress.New(&out, start().now, plan{specs: map[string]time.Duration{"e [none]": 25 * time.Second}, unknown: []string{"e [none]"}})
	p.Total(1)
	p.SpecStarted("e [none]", "")
	if want := "spec 1 of 1: e [none] (planned 25s of loads; its other costs unknown)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("got\n%s\nwant %q", out.String(), want)
	}
}

// Lines written through the printer by others pass whole and unchanged.
func TestWritePassesThrough(t *testing.T) {
	var out bytes.Buffer
	p := progress.New(&out, start().now, nil)
	if _, err := p.Write([]byte("[mtls.x none +3s] load steady: 30s of 1m0s\n")); err != nil {
		t.Fatal(err)
	}
	if out.String() != "[mtls.x none +3s] load steady: 30s of 1m0s\n" {
		t.Errorf("got %q", out.String())
	}
}

func TestDurationForAPerson(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 420 * time.Millisecond: "0.4s", 12*time.Second + 300*time.Millisecond: "12s",
		125*time.Second + 204*time.Millisecond: "2m5s", 147500 * time.Millisecond: "2m28s", 16534 * time.Millisecond: "17s",
	} {
		if got := progress.Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}
