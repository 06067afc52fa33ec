package spec

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/progress"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Report entries execute adds to every spec it judges. They carry the
// verdict to the console's verdict line and to the JUnit report, and are
// never printed by Ginkgo itself (they would print as raw values).
const (
	EntryVerdict   = "verdict"
	EntryNotGating = "not gating"
)

// verdictEntry is a verdict as a report entry: its JSON is the verdict's,
// its text (which Ginkgo's timelines show, in JUnit's system-err too) the
// verdict line.
type verdictEntry verdict.Verdict

func (v verdictEntry) String() string { return VerdictLine(verdict.Verdict(v), "") }

// VerdictLine is a verdict in one line for a person: the claim and mode,
// the verdict, measured against documented, and why; note follows it.
func VerdictLine(v verdict.Verdict, note string) string {
	s := fmt.Sprintf("%s [%s] %s: measured %s; documented %s", v.Claim, v.Mode, v.Result, orDash(v.MeasuredText), orDash(v.Documented))
	if v.Reason != "" {
		s += "; " + v.Reason
	}
	if note != "" {
		s += " (" + note + ")"
	}
	return s
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// KeyOf is the "claim [mode]" (loadplan.Key) of a spec Build made, read
// from its labels, and its claim's title; ok is false for any other node.
func KeyOf(r types.SpecReport) (key, title string, ok bool) {
	var claim, m string
	for _, l := range r.Labels() {
		if v, found := strings.CutPrefix(l, "claim:"); found {
			claim = v
		}
		if v, found := strings.CutPrefix(l, "mode:"); found {
			m = v
		}
	}
	if claim == "" || m == "" {
		return "", "", false
	}
	key = loadplan.Key(claim, mode.Mode(m))
	title = strings.TrimSpace(strings.TrimPrefix(r.LeafNodeText, key))
	return key, title, true
}

// VerdictOf is the verdict a spec's report carries (nil if it has none):
// the value itself within the run, its JSON in a report read back.
func VerdictOf(r types.SpecReport) *verdict.Verdict {
	for _, e := range r.ReportEntries {
		if e.Name != EntryVerdict {
			continue
		}
		switch v := e.GetRawValue().(type) {
		case verdictEntry:
			vv := verdict.Verdict(v)
			return &vv
		case verdict.Verdict:
			return &v
		}
		var v verdict.Verdict
		if err := json.Unmarshal([]byte(e.Value.AsJSON), &v); err == nil && v.Result != "" {
			return &v
		}
	}
	return nil
}

// NoteOf is the spec's "not gating" entry (a verdict reported, not
// failed, under -fail-on), or "".
func NoteOf(r types.SpecReport) string {
	for _, e := range r.ReportEntries {
		if e.Name == EntryNotGating {
			return e.StringRepresentation()
		}
	}
	return ""
}

// EndedOf is how a spec ended, for its verdict line on the console.
func EndedOf(r types.SpecReport) progress.Ended {
	key, _, _ := KeyOf(r)
	e := progress.Ended{Key: key, Note: NoteOf(r)}
	if v := VerdictOf(r); v != nil {
		e.Verdict, e.Measured, e.Documented = string(v.Result), v.MeasuredText, v.Documented
	}
	if r.State.Is(types.SpecStateFailureStates) {
		e.Failure = r.State.String()
		if msg := r.Failure.Message; msg != "" {
			e.Failure = msg
		}
	}
	return e
}
