// Package resume lets an interrupted run go on (-resume=DIR) in the same
// results directory. A live run writes run.json when it claims its
// directory: what decides its measurements (modes, scale, versions, the
// claims, the charts and image archives, the selection) and when each part
// started. A resumed run is refused when anything recorded differs from
// its own invocation, runs only the selected specs without a measured
// record, and sets the earlier parts' records beside its own: the
// report (built from every record in the directory) and the JUnit report
// cover the whole run.
package resume

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/report"
)

// File is the run record's name in the results directory.
const File = "run.json"

// Schema is run.json's version; a resumed run refuses another.
const Schema = 1

// Run is run.json: what decided the run's measurements and its parts.
type Run struct {
	Schema int    `json:"schema"`
	RunID  string `json:"run_id"`
	// Decides maps each setting that decides a measurement (a flag's
	// name, "suite version", a file's digest) to its value.
	Decides map[string]string `json:"decides"`
	// Images are the images known only once a part's set-up has run
	// (the built workload image, what Istio's pods ran, the archives'
	// config digests), from the first part whose set-up finished.
	Images map[string]string `json:"images,omitempty"`
	// Parts are the run's parts, the first first; a part's end, cluster
	// and records are filled in when the next part begins.
	Parts []report.RunPart `json:"parts"`
	// Cut are the specs an interrupt cut short (Ctrl-C, SIGTERM) by
	// loadplan.Key, with when it ended them: a record such a spec wrote
	// then (a need or wait that saw the cancelled context) is no
	// measurement, so a resumed run runs it again.
	Cut map[string]time.Time `json:"cut,omitempty"`
}

// MarkCut records in dir's run.json that an interrupt cut the spec key
// short at t (see Run.Cut); a directory without run.json is left alone.
func MarkCut(dir, key string, t time.Time) error {
	r, err := Open(dir)
	if err != nil {
		return err
	}
	if r.Cut == nil {
		r.Cut = map[string]time.Time{}
	}
	r.Cut[key] = t.UTC()
	return r.Save(dir)
}

// Uncut leaves out of measured every record an interrupt cut short: one
// written no later than its spec was cut (a later record is a run of it
// that ended).
func (r *Run) Uncut(measured map[string]Earlier) map[string]Earlier {
	out := map[string]Earlier{}
	for k, e := range measured {
		if at, cut := r.Cut[k]; cut && !e.At.After(at) {
			continue
		}
		out[k] = e
	}
	return out
}

// Begin writes the run record of a new run into dir (its results
// directory, claimed and empty).
func Begin(dir, runID string, decides map[string]string, now time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := &Run{Schema: Schema, RunID: runID, Decides: decides, Parts: []report.RunPart{{Started: now.UTC()}}}
	return r.Save(dir)
}

// Save writes r as dir's run.json, whole or not at all.
func (r *Run) Save(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, File)
	if err := os.WriteFile(p+".tmp", append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

// Open reads the run record of dir, refusing a dir that is not a results
// directory of a run that began, naming what is missing.
func Open(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("-resume=%q: no such directory; accepted: the results directory of the run to continue, e.g. results/<run id>", dir)
	case err != nil:
		return nil, fmt.Errorf("-resume=%q: %v", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("-resume=%q is a file, not a results directory", dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, fs.ErrNotExist) {
		why := "it is not a meshclaims results directory"
		if _, err := os.Stat(filepath.Join(dir, "environment.json")); err == nil {
			why = "it holds environment.json but no run record: a run of a version without -resume, whose settings cannot be checked"
		} else if entries, _ := os.ReadDir(dir); len(entries) == 0 {
			why = "it is empty: the run stopped before it claimed the directory, so nothing was measured"
		}
		return nil, fmt.Errorf("-resume=%q holds no %s (the record a live run writes when it claims its results directory): %s; start a new run instead", dir, File, why)
	}
	if err != nil {
		return nil, fmt.Errorf("-resume=%q: %v", dir, err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("-resume=%q: %s: %v", dir, File, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("-resume=%q: %s has schema %d, this meshclaims reads %d", dir, File, r.Schema, Schema)
	}
	if len(r.Parts) == 0 || len(r.Decides) == 0 {
		return nil, fmt.Errorf("-resume=%q: %s records no part or no settings", dir, File)
	}
	return &r, nil
}

// Differences names every recorded setting whose value differs from now's
// (a setting only one side has included), with both values, sorted.
func Differences(recorded, now map[string]string) []string {
	keys := map[string]bool{}
	for k := range recorded {
		keys[k] = true
	}
	for k := range now {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		a, inA := recorded[k]
		b, inB := now[k]
		if inA && inB && a == b {
			continue
		}
		out = append(out, fmt.Sprintf("%s: the run has %s, this invocation %s", k, shown(a, inA), shown(b, inB)))
	}
	sort.Strings(out)
	return out
}

func shown(v string, ok bool) string {
	switch {
	case !ok:
		return "(not recorded)"
	case v == "":
		return `""`
	}
	return v
}

// Refusal is the error of a resumed run whose settings differ (diffs from
// Differences).
func Refusal(dir string, diffs []string) error {
	return fmt.Errorf("-resume=%q: this invocation differs from the run it would continue in %d setting(s), so its measurements would not be the same run's:\n  %s\nrun with the run's settings (%s lists them), or start a new run with another -run-id",
		dir, len(diffs), strings.Join(diffs, "\n  "), filepath.Join(dir, File))
}

// Continue begins a new part of r: the last part gets its end, cluster and
// record count from what the directory holds (env, its environment.json as
// that part left it, nil when there is none; measured, the records with
// their times), every part its record count, and a part starting now is
// appended. It does not save r.
func (r *Run) Continue(env *report.Environment, measured map[string]Earlier, now time.Time) {
	last := &r.Parts[len(r.Parts)-1]
	// environment.json is the last part's when it was written after that
	// part began; else that part stopped before its set-up wrote it.
	if env != nil && !env.Started.Before(last.Started) {
		last.Finished, last.Cluster, last.Kubernetes, last.SetupError = env.Finished, env.Cluster, env.Kubernetes, env.SetupError
	}
	for i := range r.Parts {
		r.Parts[i].Measured, r.Parts[i].LastRecord = 0, time.Time{}
	}
	for _, e := range measured {
		p := &r.Parts[e.Part]
		p.Measured++
		if e.At.After(p.LastRecord) {
			p.LastRecord = e.At
		}
	}
	r.Parts = append(r.Parts, report.RunPart{Started: now.UTC()})
}

// Earlier returns the parts before the last (the environment's Parts).
func (r *Run) Earlier() []report.RunPart {
	return append([]report.RunPart(nil), r.Parts[:len(r.Parts)-1]...)
}

// partAt is the index of the part running at t: the last that started
// at or before it (the first for a t before every part).
func partAt(parts []report.RunPart, t time.Time) int {
	i := 0
	for j, p := range parts {
		if !p.Started.After(t) {
			i = j
		}
	}
	return i
}
