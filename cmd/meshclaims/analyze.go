package main

// The analyze command: summarize fortio result files (from `fortio load
// -json`, the fortio REST API, or a meshclaims results directory) without a
// cluster, with the same code the suite judges claims with.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/stats"
)

const analyzeUsage = `usage: meshclaims analyze [--json] FILE...

Summarizes fortio result files, HTTP or gRPC (fortio load [-grpc] -json,
/fortio/rest/run): requests; count and rate (95% Wilson interval) of each
status code and of -1 (HTTP: no response) or ERROR (gRPC: the call failed);
P50/P75/P90/P99/P99.9 and mean latency in ms; sockets used vs connections
(HTTP; fortio's gRPC runner does not count sockets); actual qps; whether the
histogram resolves the latencies; and Little's law (OK, FAIL, or not
applicable to a run paced below saturation).

  --json   one JSON object per line per file instead of text
`

// runAnalyze runs `meshclaims analyze` with args (after the command name) and
// returns the exit code: 0 all files summarized, 1 a file could not be read
// or is not a fortio HTTP or gRPC result (every other file is still summarized),
// 2 usage error.
func runAnalyze(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), analyzeUsage)
	}
	asJSON := fs.Bool("json", false, "one JSON object per line per file")
	files, code := parseArgs(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "meshclaims analyze: no FILE given")
		fmt.Fprint(stderr, analyzeUsage)
		return 2
	}
	code = 0
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
	fmt.Fprintf(w, "  %s run %q\n", s.Protocol, s.RunType)
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
	var buckets []string
	for _, p := range fortioresult.SummaryPercentiles {
		key := fortioresult.PercentileKey(p)
		if b, ok := s.PercentileBucketsMs[key]; ok {
			buckets = append(buckets, "P"+key+" ["+msText(b[0])+", "+msText(b[1])+"]")
		}
	}
	if len(buckets) > 0 {
		fmt.Fprintf(w, "  percentile buckets ms (differences inside one are not resolved): %s\n", strings.Join(buckets, " "))
	}
	if s.SocketsRecorded {
		fmt.Fprintf(w, "  sockets %d for %d connections (%d extra)\n", s.Sockets, s.Connections, s.ExtraSockets)
	} else {
		fmt.Fprintf(w, "  sockets not recorded (fortio's %s runner does not count them); %d concurrent calls\n", s.Protocol, s.Connections)
	}
	coarse := "fine"
	if s.Little.CoarseHistogram {
		coarse = "coarse"
	}
	if s.ResolutionSource == fortioresult.ResolutionUnknown {
		fmt.Fprintf(w, "  histogram resolution unknown\n")
	} else {
		// The reason repeats "histogram resolution N ms "; keep what follows.
		why := s.Little.HistogramReason
		if _, rest, ok := strings.Cut(why, " ms "); ok && strings.HasPrefix(why, "histogram resolution ") {
			why = rest
		}
		fmt.Fprintf(w, "  histogram resolution %s ms (%s): %s: %s\n", strconv.FormatFloat(s.ResolutionMs, 'g', -1, 64), s.ResolutionSource, coarse, why)
	}
	// Little's law apart from the histogram: a paced run is "not
	// applicable", never a failure, whatever its histogram.
	verdict, why := "OK", s.Little.LawReason
	switch s.Little.Verdict {
	case stats.LawViolated:
		verdict = "FAIL"
	case stats.LawNotApplicable:
		verdict = string(stats.LawNotApplicable)
	case stats.LawUnchecked:
		verdict, why = "cannot be checked", s.Little.Reason
	}
	fmt.Fprintf(w, "  little's law: %s: %s\n", verdict, why)
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}
