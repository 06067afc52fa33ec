package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/meshclaims/meshclaims/framework/report"
)

// runDiff compares two runs' results.json. Exit status: 0 compared (and
// nothing matched --fail-on), 1 --fail-on matched, 2 usage or the runs
// cannot be compared (different registries or schema versions, unreadable).
func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("diff", "[--json] [--fail-on=none|regression|change] OLD NEW   (results directories or results.json files)")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	failOn := fs.String("fail-on", "none", "exit 1 on: `none`, regression (a verdict got worse or a rate rose beyond its interval), change (anything but no change)")
	pos, code := parseArgs(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	switch *failOn {
	case "none", "regression", "change":
	default:
		fmt.Fprintf(stderr, "diff: --fail-on=%q: accepted: none, regression, change\n", *failOn)
		return 2
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "diff: want two runs, OLD and NEW, got %d arguments %q; usage: meshclaims diff [--json] [--fail-on=none|regression|change] OLD NEW\n", len(pos), pos)
		return 2
	}
	var runs [2]*report.Results
	for i, p := range pos {
		dir := filepath.Dir(p)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			dir, p = p, filepath.Join(p, "results.json")
		}
		res, err := report.LoadResults(p)
		if err != nil {
			fmt.Fprintf(stderr, "diff: cannot compare: %v\n", err)
			// A results directory keeps the records results.json is
			// judged from: report rebuilds the file.
			if _, oerr := report.Open(dir); oerr == nil {
				fmt.Fprintf(stderr, "diff: %s is a results directory: `meshclaims report %s` rebuilds its results.json from the run's records with this meshclaims; then diff again\n", dir, dir)
			}
			return 2
		}
		runs[i] = res
	}
	d, err := report.Compare(runs[0], runs[1])
	if err != nil {
		fmt.Fprintln(stderr, "diff:", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			fmt.Fprintln(stderr, "diff:", err)
			return 2
		}
	} else {
		d.Text(stdout)
	}
	switch {
	case *failOn == "regression" && d.Regressions() > 0:
		fmt.Fprintf(stderr, "diff: %d regression(s)\n", d.Regressions())
		return 1
	case *failOn == "change" && len(d.Comparisons) > d.Counts[report.NoChange]:
		fmt.Fprintf(stderr, "diff: %d change(s)\n", len(d.Comparisons)-d.Counts[report.NoChange])
		return 1
	}
	return 0
}
