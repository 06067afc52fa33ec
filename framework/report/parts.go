package report

import (
	"fmt"
	"strings"
	"time"
)

// RunPart is one part of a run that was interrupted and resumed
// (-resume): when it started and ended, on which cluster, and how many
// measured records it wrote. Environment.Parts lists the parts before the
// last; the environment's own Started, Finished and Cluster are the last
// part's.
type RunPart struct {
	Started time.Time `json:"started"`
	// Finished is when the part's clean-up ended; zero when it never did
	// (the process was killed), and LastRecord is then the latest sign of it.
	Finished time.Time `json:"finished,omitzero"`
	// LastRecord is when the part wrote its last measured record.
	LastRecord time.Time `json:"last_record,omitzero"`
	// Cluster is the API server it measured on (a kind or local cluster
	// is a new one in every part), Kubernetes its version.
	Cluster    string `json:"cluster,omitempty"`
	Kubernetes string `json:"kubernetes,omitempty"`
	// Measured counts the measured records the part wrote.
	Measured int `json:"measured"`
	// SetupError is why the part's set-up failed, when it did.
	SetupError string `json:"setup_error,omitempty"`
}

// Resumed says, for a resumed run, when each part started and ended and
// on which cluster, the last part being env itself; "" for a run made in
// one part.
func Resumed(env Environment) string {
	if len(env.Parts) == 0 {
		return ""
	}
	var parts []string
	for i, p := range env.Parts {
		parts = append(parts, fmt.Sprintf("part %d: %s", i+1, p.describe()))
	}
	last := RunPart{Started: env.Started, Finished: env.Finished, Cluster: env.Cluster}
	parts = append(parts, fmt.Sprintf("part %d (the last): %s", len(env.Parts)+1, last.describeLast()))
	return fmt.Sprintf("resumed: the run was made in %d parts (-resume); %s", len(env.Parts)+1, strings.Join(parts, "; "))
}

func (p RunPart) describe() string {
	s := "started " + stamp(p.Started)
	switch {
	case !p.Finished.IsZero():
		s += ", ended " + stamp(p.Finished)
	case !p.LastRecord.IsZero():
		s += ", killed (no clean end; its last record at " + stamp(p.LastRecord) + ")"
	default:
		s += ", killed (no clean end, no record)"
	}
	s += fmt.Sprintf(", on cluster %s", dash(p.Cluster))
	if p.Kubernetes != "" {
		s += " (Kubernetes " + p.Kubernetes + ")"
	}
	s += fmt.Sprintf(", %d specs measured", p.Measured)
	if p.SetupError != "" {
		s += ", set-up failed: " + firstLineOf(p.SetupError)
	}
	return s
}

func (p RunPart) describeLast() string {
	s := "started " + stamp(p.Started)
	if !p.Finished.IsZero() {
		s += ", ended " + stamp(p.Finished)
	}
	return s + ", on cluster " + dash(p.Cluster)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

func firstLineOf(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}
