package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/rollout"
)

// TimelineSuffix ends the raw file name of a rollout timeline
// (raw/<claim>__<mode>__<load>.timeline.json), so the report can tell it from
// fortio results.
const TimelineSuffix = ".timeline.json"

// Timeline is a rollout load placed in time: the restart cycles and every
// no-response (-1) the client's log explains, with its cause. It is kept
// beside the fortio result because neither fortio's JSON nor the measured
// record says when the errors came.
type Timeline struct {
	Load  string    `json:"load"`  // the load run's name
	Start time.Time `json:"start"` // the load's REST call, on the test host's clock
	End   time.Time `json:"end"`
	// Cycles are the restart-and-wait cycles, on the test host's clock.
	Cycles []rollout.Cycle `json:"cycles"`
	// NoResponse are the explained -1s, on the client's clock (its log);
	// a cluster's clocks agree with the host's to well under a cycle.
	NoResponse []TimedError `json:"no_response"`
	// Unattributed counts -1s that no log line explains: they have no time.
	Unattributed int64 `json:"unattributed"`
	// NonOK are the non-2xx answers the client logged with their time
	// (load.Spec.LogErrors), Cause being the status code ("503").
	NonOK []TimedError `json:"non_ok,omitempty"`
	// Code503 counts 503 answers in the result; more than len(NonOK) with
	// Cause 503 means the load ran without log-errors (not timed).
	Code503  int64 `json:"code_503"`
	Requests int64 `json:"requests"`
}

// TimedError is one failed request.
type TimedError struct {
	Time  time.Time `json:"time"`
	Cause string    `json:"cause"` // load.Cause: reset, eof, refused, timeout, other
}

// TimelineOf builds the timeline of a load run and the rollout cycles run
// during it.
func TimelineOf(run *load.Run, cycles []rollout.Cycle) Timeline {
	tl := Timeline{Load: run.Name, Start: run.Start, End: run.End, Cycles: cycles}
	for _, f := range run.Failures {
		if !f.Time.IsZero() {
			tl.NoResponse = append(tl.NoResponse, TimedError{Time: f.Time, Cause: string(f.Cause)})
		}
	}
	for _, f := range run.NonOK {
		if !f.Time.IsZero() {
			tl.NonOK = append(tl.NonOK, TimedError{Time: f.Time, Cause: strconv.Itoa(f.Code)})
		}
	}
	if run.Result != nil {
		tl.Requests = run.Result.Requests()
		tl.Code503 = run.Result.RetCodes[503]
		if n := run.Result.RetCodes[-1] - int64(len(tl.NoResponse)); n > 0 {
			tl.Unattributed = n
		}
	}
	return tl
}

// Marshal is the timeline's raw file content.
func (tl Timeline) Marshal() ([]byte, error) { return json.MarshalIndent(tl, "", "  ") }

// ReadTimeline reads a timeline file.
func ReadTimeline(path string) (Timeline, error) {
	var tl Timeline
	b, err := os.ReadFile(path)
	if err != nil {
		return tl, err
	}
	if err := json.Unmarshal(b, &tl); err != nil {
		return tl, fmt.Errorf("%s: not a rollout timeline: %w", path, err)
	}
	if len(tl.Cycles) == 0 && tl.Start.IsZero() {
		return tl, fmt.Errorf("%s: not a rollout timeline: no start and no cycles", path)
	}
	return tl, nil
}

// Timed503 counts the 503s placed in time.
func (tl Timeline) Timed503() int64 {
	var n int64
	for _, e := range tl.NonOK {
		if e.Cause == "503" {
			n++
		}
	}
	return n
}

// events are every timed error keyed as the plot labels them: "503", "-1 reset".
func (tl Timeline) events() []TimedError {
	out := make([]TimedError, 0, len(tl.NonOK)+len(tl.NoResponse))
	out = append(out, tl.NonOK...)
	for _, e := range tl.NoResponse {
		out = append(out, TimedError{Time: e.Time, Cause: "-1 " + e.Cause})
	}
	return out
}

// PerCycle counts the timed errors per cycle window and kind (see Causes;
// window i runs from cycle i's start to cycle i+1's, as
// rollout.CountPerCycle counts); before holds those before the first cycle.
func (tl Timeline) PerCycle() (counts []map[string]int, before map[string]int) {
	counts = make([]map[string]int, len(tl.Cycles))
	for i := range counts {
		counts[i] = map[string]int{}
	}
	before = map[string]int{}
	for _, e := range tl.events() {
		i := sort.Search(len(tl.Cycles), func(i int) bool { return tl.Cycles[i].Start.After(e.Time) })
		if i == 0 {
			before[e.Cause]++
			continue
		}
		counts[i-1][e.Cause]++
	}
	return counts, before
}

// Causes lists the kinds of timed error present, in a fixed order: "503"
// (and other status codes), then "-1 reset", "-1 eof", "-1 refused",
// "-1 timeout", "-1 other".
func (tl Timeline) Causes() []string {
	seen := map[string]bool{}
	for _, e := range tl.events() {
		seen[e.Cause] = true
	}
	var out []string
	for _, c := range []string{"503", "-1 " + string(load.CauseReset), "-1 " + string(load.CauseEOF), "-1 " + string(load.CauseRefused),
		"-1 " + string(load.CauseTimeout), "-1 " + string(load.CauseOther)} {
		if seen[c] {
			out = append(out, c)
			delete(seen, c)
		}
	}
	var rest []string
	for c := range seen {
		rest = append(rest, c)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func isTimeline(rel string) bool { return strings.HasSuffix(rel, TimelineSuffix) }

func isFortioResult(rel string) bool {
	return strings.HasSuffix(rel, ".json") && !strings.HasSuffix(rel, ".options.json") && !isTimeline(rel) &&
		filepath.Dir(filepath.ToSlash(rel)) == "raw"
}
