package main

// The analyze command: summarize fortio result files (from `fortio load
// -json`, the fortio REST API, or a meshclaims results directory) without a
// cluster, with the same code the suite judges claims with.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
)

const analyzeUsage = `usage: meshclaims analyze [--json] FILE...

Summarizes fortio HTTP result files (fortio load -json, /fortio/rest/run):
requests; count and rate (95% Wilson interval) of each status code and of -1
(no HTTP response); P50/P75/P90/P99/P99.9 and mean latency in ms; sockets used
vs connections; actual qps; and the Little's-law / histogram-resolution check.

  --json   one JSON object per line per file instead of text
`

// runAnalyze runs `meshclaims analyze` with args (after the command name) and
// returns the exit code: 0 all files summarized, 1 a file could not be read
// or is not a fortio HTTP result (every other file is still summarized),
// 2 usage error.
func runAnalyze(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, analyzeUsage)
	}
	asJSON := fs.Bool("json", false, "one JSON object per line per file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintln(stderr, "meshclaims analyze: no FILE given")
		fs.Usage()
		return 2
	}
	code := 0
	for i, path := range files {
		r, err := fortioresult.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "meshclaims analyze: %v\n", err)
			code = 1
			continue
		}
		s := fortioresult.Summarize(r)
		if *asJSON {
			line, err := json.Marshal(s)
			if err != nil {
				fmt.Fprintf(stderr, "meshclaims analyze: %s: encoding summary: %v\n", path, err)
				code = 1
				continue
			}
			fmt.Fprintf(stdout, "%s\n", line)
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		writeSummaryText(stdout, s)
	}
	return code
}

// msText formats milliseconds for the text report: three decimals, enough
// for the 0.1 ms resolution the claims are compared at.
func msText(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func writeSummaryText(w io.Writer, s fortioresult.Summary) {
	fmt.Fprintf(w, "%s\n", s.File)
	if s.Labels != "" || s.URL != "" {
		fmt.Fprintf(w, "  labels %q url %s\n", s.Labels, s.URL)
	}
	fmt.Fprintf(w, "  requests %d at %s qps (requested %s) over %s s\n",
		s.Requests, strconv.FormatFloat(s.QPS, 'f', 1, 64), s.RequestedQPS, strconv.FormatFloat(s.DurationSeconds, 'f', 3, 64))
	for _, code := range fortioresult.SortedCodes(s.Rates) {
		fmt.Fprintf(w, "  status %4s: %s\n", code, s.Rates[code])
	}
	var pcts []string
	for _, p := range fortioresult.SummaryPercentiles {
		key := fortioresult.PercentileKey(p)
		if v, ok := s.PercentilesMs[key]; ok {
			pcts = append(pcts, "P"+key+" "+msText(v))
		}
	}
	src := ""
	if s.PercentileSource != "" {
		src = " (percentiles: " + s.PercentileSource + ")"
	}
	fmt.Fprintf(w, "  latency ms: mean %s %s%s\n", msText(s.MeanMs), strings.Join(pcts, " "), src)
	fmt.Fprintf(w, "  sockets %d for %d connections (%d extra)\n", s.Sockets, s.Connections, s.ExtraSockets)
	if s.ResolutionSource == fortioresult.ResolutionUnknown {
		fmt.Fprintf(w, "  histogram resolution unknown\n")
	} else {
		fmt.Fprintf(w, "  histogram resolution %s ms (%s)\n", strconv.FormatFloat(s.ResolutionMs, 'g', -1, 64), s.ResolutionSource)
	}
	verdict := "OK"
	if !s.Little.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "  little's law: %s: %s\n", verdict, s.Little.Reason)
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}
