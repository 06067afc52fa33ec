package all

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// failureLog is a testing.TB that keeps every failure reported through it
// and lists them again when the test ends. A release-qualification test
// runs for a quarter of an hour and prints thousands of lines (the e2e
// runs' own output among them); a CI log keeps its tail, where the
// failures would otherwise not be.
type failureLog struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

// newFailureLog wraps t. Its summary is t's first clean-up, so it runs
// last, after the cluster's deletion has logged.
func newFailureLog(t testing.TB) *failureLog {
	f := &failureLog{TB: t}
	t.Cleanup(func() { f.TB.Log(f.summary()) })
	return f
}

func (f *failureLog) keep(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, msg)
}

// summary is the failures kept, numbered, or a line saying there were none.
func (f *failureLog) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failures) == 0 {
		return "checks: none failed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "checks: %d failed (each also above, where it happened):", len(f.failures))
	for i, m := range f.failures {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, m)
	}
	return b.String()
}

func (f *failureLog) Error(args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprint(args...))
	f.TB.Error(args...)
}

func (f *failureLog) Errorf(format string, args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.TB.Errorf(format, args...)
}

func (f *failureLog) Fatal(args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprint(args...))
	f.TB.Fatal(args...)
}

func (f *failureLog) Fatalf(format string, args ...any) {
	f.TB.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.TB.Fatalf(format, args...)
}

// TestFailureLogListsEveryFailureAtTheEnd runs a test that fails twice
// through a failureLog (in a subtest reporting to a recorder, so this test
// itself passes) and reads the summary; its control: a test that does not
// fail says none failed.
func TestFailureLogListsEveryFailureAtTheEnd(t *testing.T) {
	rec := &recordingTB{TB: t}
	f := &failureLog{TB: rec}
	f.Errorf("their client saw %d failed calls", 2)
	f.Error("left by the run: ", "v1/configmaps a/b")
	got := f.summary()
	for _, w := range []string{"checks: 2 failed", "1. their client saw 2 failed calls", "2. left by the run: v1/configmaps a/b"} {
		if !strings.Contains(got, w) {
			t.Errorf("summary %q does not say %q", got, w)
		}
	}
	if len(rec.errors) != 2 {
		t.Errorf("the failures reached the test %d times, want 2", len(rec.errors))
	}
	if got := (&failureLog{TB: t}).summary(); got != "checks: none failed" {
		t.Errorf("a test with no failure: %q", got)
	}
}

// recordingTB takes a test's failures without failing the test that runs it.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
