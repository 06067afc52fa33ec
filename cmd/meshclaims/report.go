package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/meshclaims/meshclaims/framework/decision"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/requirements"
)

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "[--file F] [--complete] [--requirements R] DIR")
	file := fs.String("file", "", fileUsage)
	complete := fs.Bool("complete", false, "exit 1 unless every claim applicable to the run's modes was measured")
	reqFile := fs.String("requirements", "", "requirements `file` (YAML tiers, testdata/requirements/): kept in DIR as "+report.RequirementsFile+
		", each tier set against the run's meshed modes in the report; exit 1 when a tier has no measured mode meeting every requirement")
	pos, code := parseArgs(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "report: want one results directory, got %d arguments %q; usage: meshclaims report [--file F] [--complete] [--requirements R] DIR\n", len(pos), pos)
		return 2
	}
	var reqs *requirements.File
	if *reqFile != "" {
		f, err := requirements.Load(*reqFile)
		if err != nil {
			fmt.Fprintf(stderr, "report: --requirements: %v\n", err)
			return 2
		}
		reqs = f
	}
	reg, err := loadRegistry(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	d, err := report.Open(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 1
	}
	if reqs != nil {
		if err := d.SaveRequirements(reqs); err != nil {
			fmt.Fprintln(stderr, "report:", err)
			return 1
		}
	}
	res, err := d.Rebuild(reg)
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s, %s, %s: %d entries (%s)\n", filepath.Join(d.Path, "results.json"), filepath.Join(d.Path, "report.md"), filepath.Join(d.Path, "report.html"), len(res.Entries), report.SummaryText(res.Summary))
	if missing := report.Missing(res, reg); *complete && len(missing) > 0 {
		fmt.Fprintf(stderr, "report: %d claim(s) not measured: %s\n", len(missing), strings.Join(missing, ", "))
		return 1
	}
	if reqs != nil && res.Requirements != nil {
		for _, t := range res.Requirements.Tiers {
			fmt.Fprintln(stdout, t.Sentence())
		}
		if err := decision.Gate(res.Requirements.Tiers); err != nil {
			fmt.Fprintln(stderr, "report:", err)
			return 1
		}
	}
	return 0
}
