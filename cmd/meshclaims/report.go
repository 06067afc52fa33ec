package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/report"
)

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", defaultRegistry, "claims registry `file` to judge with")
	complete := fs.Bool("complete", false, "exit 1 unless every claim applicable to the run's modes was measured")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: meshclaims report [--file F] DIR")
		return 2
	}
	reg, err := claims.Load(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	d, err := report.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 1
	}
	res, err := d.Rebuild(reg)
	if err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s, %s, %s: %d entries (%v)\n", filepath.Join(d.Path, "results.json"), filepath.Join(d.Path, "report.md"), filepath.Join(d.Path, "report.html"), len(res.Entries), res.Summary)
	if missing := report.Missing(res, reg); *complete && len(missing) > 0 {
		fmt.Fprintf(stderr, "report: %d claim(s) not measured: %s\n", len(missing), strings.Join(missing, ", "))
		return 1
	}
	return 0
}
