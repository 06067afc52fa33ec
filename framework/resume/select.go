package resume

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// Earlier is a measured record an earlier part of the run wrote.
type Earlier struct {
	Record report.Record
	// File is the record's path relative to the results directory.
	File string
	// At is when it was written (the file's time), Part the index of the
	// part that wrote it in Run.Parts.
	At   time.Time
	Part int
}

// Measured reads every measured record in dir, keyed as loadplan.Key
// ("claim [mode]"), with the part of parts that wrote it.
func Measured(dir string, parts []report.RunPart) (map[string]Earlier, error) {
	recs, err := (&report.Dir{Path: dir}).Records()
	if err != nil {
		return nil, fmt.Errorf("-resume=%q: reading its measured records: %w", dir, err)
	}
	out := map[string]Earlier{}
	for _, r := range recs {
		rel := filepath.Join("measured", report.Name(r.Claim, string(r.Mode))+".json")
		st, err := os.Stat(filepath.Join(dir, rel))
		if err != nil {
			return nil, fmt.Errorf("-resume=%q: %v", dir, err)
		}
		out[loadplan.Key(r.Claim, r.Mode)] = Earlier{Record: r, File: rel, At: st.ModTime().UTC(), Part: partAt(parts, st.ModTime())}
	}
	return out, nil
}

// Split divides the selected specs into those still to run (no measured
// record) and those an earlier part measured, each in selection order.
func Split(selected []spec.Planned, measured map[string]Earlier) (toRun, done []spec.Planned) {
	for _, p := range selected {
		if _, ok := measured[loadplan.Key(p.Claim.ID, p.Mode)]; ok {
			done = append(done, p)
		} else {
			toRun = append(toRun, p)
		}
	}
	return toRun, done
}
