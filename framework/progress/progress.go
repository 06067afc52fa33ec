// Package progress prints a run's progress as it happens, one plain line at
// a time: each set-up phase and how long it took, "spec N of M" as a spec
// starts, one verdict line as it ends, the time the plan says is left, and
// the counts at the end. It writes to a writer of its own (the console),
// not Ginkgo's GinkgoWriter, which Ginkgo holds back until the end of each
// node unless -ginkgo.v; and it writes no colour and no JSON, so a CI log
// reads like a terminal.
package progress

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Plan is the estimate the time left comes from (loadplan.Budget): what is
// left once the set-up (setUpDone) and the specs in done (by Key) have
// finished, and how many costs it does not know and leaves out.
type Plan interface {
	Left(setUpDone bool, done map[string]bool) (left time.Duration, unknown int)
}

// Printer prints a run's progress to its writer. Its methods may be called
// from several goroutines; each line is written whole.
type Printer struct {
	mu   sync.Mutex
	out  io.Writer
	now  func() time.Time
	plan Plan

	phase     string
	phaseAt   time.Time
	setUpAt   time.Time
	setUpDone bool
	// setUpFailed: the run ends without running a spec.
	setUpFailed bool

	total   int
	started int
	current string
	specAt  time.Time
	done    map[string]bool
	// spent is the wall time of the finished specs, and planned what the
	// plan gave them: their ratio is the run's pace against the plan.
	spent, planned time.Duration
	counts         map[string]int
	failed         int
	// began is when the run began (Total), for the end's wall time.
	began time.Time
}

// New prints to out, reading the time from now (time.Now outside tests);
// plan may be nil (no time left is printed).
func New(out io.Writer, now func() time.Time, plan Plan) *Printer {
	if now == nil {
		now = time.Now
	}
	return &Printer{out: out, now: now, plan: plan, done: map[string]bool{}, counts: map[string]int{}}
}

// Write passes lines others print (the set-up's, a spec's) through to the
// same writer, so they interleave whole with the printer's.
func (p *Printer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *Printer) line(format string, a ...any) {
	fmt.Fprintf(p.out, "%s %s\n", p.now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// Phase ends the set-up phase under way, saying how long it took, and
// starts the next.
func (p *Printer) Phase(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.setUpAt.IsZero() {
		p.setUpAt = now
	}
	p.endPhase(now)
	p.phase, p.phaseAt = name, now
	p.line("set-up: %s ...", name)
}

func (p *Printer) endPhase(now time.Time) {
	if p.phase != "" {
		p.line("set-up: %s took %s", p.phase, Duration(now.Sub(p.phaseAt)))
		p.phase = ""
	}
}

// SetUpDone ends the set-up: its last phase and its whole time, and the
// time the plan says is left, or that it failed (err, whose text the
// caller's failure prints).
func (p *Printer) SetUpDone(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.endPhase(now)
	p.setUpDone = true
	took := ""
	if !p.setUpAt.IsZero() {
		took = " after " + Duration(now.Sub(p.setUpAt))
	}
	if err != nil {
		// The error itself follows in Ginkgo's failure, once.
		p.setUpFailed = true
		p.line("set-up failed%s; no spec will run (why follows)", took)
		return
	}
	p.line("set-up done%s", took)
	p.left()
}

// Total sets M in "spec N of M", the specs the run will run (Ginkgo says
// how many just before), and prints the time the plan gives the run.
func (p *Printer) Total(m int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = m
	p.began = p.now()
	p.left()
}

// SpecStarted prints "spec N of M: <claim> [<mode>]" for the spec keyed
// key (loadplan.Key), with its claim's title and what the plan gives it
// where known.
func (p *Printer) SpecStarted(key, title string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started++
	p.current, p.specAt = key, p.now()
	extra := ""
	switch d, known := p.plannedFor(key); {
	case known && d > 0:
		extra = " (planned " + Duration(d) + ")"
	case d > 0:
		extra = " (planned " + Duration(d) + " of loads; its other costs unknown)"
	}
	if title != "" {
		key += " " + title
	}
	p.line("spec %d of %d: %s%s", p.started, max(p.total, p.started), key, extra)
}

// plannedFor is what the plan gives key now: the time left with the spec
// minus the time left without it. known is false when the plan does not
// know the spec's cost beyond its loads.
func (p *Printer) plannedFor(key string) (time.Duration, bool) {
	if p.plan == nil {
		return 0, false
	}
	with, u1 := p.plan.Left(p.setUpDone, p.done)
	without := with1(p.done, key)
	rest, u2 := p.plan.Left(p.setUpDone, without)
	return with - rest, u1 == u2
}

// with1 is done with key added, done itself unchanged.
func with1(done map[string]bool, key string) map[string]bool {
	m := maps.Clone(done)
	if m == nil {
		m = map[string]bool{}
	}
	m[key] = true
	return m
}

// Ended is how a spec ended, for its verdict line.
type Ended struct {
	Key string // loadplan.Key: "claim [mode]"
	// Verdict, Measured and Documented are the judgement; Verdict is
	// empty when the spec ended without one (Failure says why).
	Verdict, Measured, Documented string
	// Note follows the verdict ("not gating: -fail-on=error").
	Note string
	// Failure is the spec's failure message, if it failed.
	Failure string
}

// SpecEnded prints the spec's verdict line, and the time the plan says is
// left, re-estimated: the plan's time for what has not run yet, and that
// time at the pace of the specs so far against their plan.
func (p *Printer) SpecEnded(e Ended) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	took := time.Duration(0)
	if p.current == e.Key && !p.specAt.IsZero() {
		took = now.Sub(p.specAt)
	}
	planned, known := p.plannedFor(e.Key)
	p.done[e.Key] = true
	p.current = ""
	if known {
		p.spent += took
		p.planned += planned
	}
	n := fmt.Sprintf("spec %d of %d done in %s: %s", p.started, max(p.total, p.started), Duration(took), e.Key)
	switch {
	case e.Verdict != "":
		p.counts[e.Verdict]++
		line := fmt.Sprintf("%s %s: measured %s; documented %s", n, e.Verdict, oneLine(orDash(e.Measured)), oneLine(orDash(e.Documented)))
		if e.Note != "" {
			line += " (" + oneLine(e.Note) + ")"
		}
		if e.Failure != "" {
			// The gate's failure restates the claim and verdict: its
			// reason is what the line lacks.
			first, _, _ := strings.Cut(strings.TrimSpace(e.Failure), "\n")
			if r, ok := strings.CutPrefix(first, e.Key+" "+e.Verdict+": "); ok {
				line += "; the spec fails on it: " + r
			} else {
				line += "; failed: " + firstLine(e.Failure)
			}
		}
		p.line("%s", line)
	default:
		p.failed++
		p.line("%s failed without a verdict: %s", n, firstLine(orDash(e.Failure)))
	}
	p.left()
}

// left prints the time the plan says is left; the caller holds mu.
func (p *Printer) left() {
	if p.plan == nil {
		return
	}
	left, unknown := p.plan.Left(p.setUpDone, p.done)
	s := "time left by the plan: " + Duration(left)
	if unknown > 0 {
		s += fmt.Sprintf(" (%d costs unknown, not included)", unknown)
	}
	// The pace needs a plan of some length to be worth a figure: specs
	// that only read a load another ran take well under a second.
	if p.planned >= 10*time.Second && p.spent > 0 && left > 0 {
		pace := float64(p.spent) / float64(p.planned)
		s += fmt.Sprintf("; at this run's pace so far (%.2fx the plan): %s", pace, Duration(time.Duration(float64(left)*pace)))
	}
	p.line("%s", s)
}

// Finished prints the end of the run: how many specs ran, the verdicts
// counted, and where the report is.
func (p *Printer) Finished(report string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for _, k := range Order(p.counts) {
		parts = append(parts, fmt.Sprintf("%d %s", p.counts[k], k))
	}
	if p.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d without a verdict", p.failed))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	after := ""
	if !p.began.IsZero() {
		after = " after " + Duration(p.now().Sub(p.began))
	}
	if p.setUpFailed && p.started == 0 {
		p.line("finished%s: the set-up failed, so none of the %d specs ran", after, p.total)
	} else {
		p.line("finished%s: %d of %d specs ran; verdicts: %s", after, p.started, p.total, strings.Join(parts, ", "))
	}
	if report != "" {
		p.line("report: %s", report)
	}
}

// Order lists the verdicts counted in counts: the suite's four in their
// usual order, then any other by name.
func Order(counts map[string]int) []string {
	var known []string
	for _, r := range verdict.Results {
		known = append(known, string(r))
	}
	var out []string
	for _, k := range known {
		if counts[k] > 0 {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if counts[k] > 0 && !slices.Contains(known, k) {
			out = append(out, k)
		}
	}
	return out
}

// Duration is d for a person: whole seconds above a minute, tenths below
// ten seconds, so "2m5s", "12s", "0.4s", never "2m5.204918s".
func Duration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d <= 0:
		return "0s"
	default:
		return fmt.Sprintf("%.1fs", d.Round(100*time.Millisecond).Seconds())
	}
}

// oneLine keeps a value on its line: a verdict line is one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
