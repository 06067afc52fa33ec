// Command meshclaims works with the claims registry and run results without a
// cluster: list or validate claims, analyze fortio results, rebuild reports.
// The specs themselves run with `go test ./e2e -mode=...`.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `meshclaims: the claims registry and run results, without a cluster.

usage:
  meshclaims claims [--file F] [--validate] [--mode M] [--json]
                                  list the registry's claims, or only validate it
  meshclaims analyze [--json] FILE...
                                  summarize fortio JSON results: codes and rates with
                                  95% intervals, percentiles, sockets, Little's-law check
  meshclaims report [--file F] [--complete] [--requirements R] DIR
                                  rebuild DIR/results.json and DIR/report.md from DIR's
                                  environment.json and measured/ records, and DIR/report.html
                                  (plots: latency CDFs, rollout errors per restart cycle);
                                  --requirements: recommend modes per tier, gate on them
  meshclaims diff [--json] [--fail-on=none|regression|change] OLD NEW
                                  compare two runs: flipped verdicts first, rates with
                                  two-proportion 95% intervals, outcomes; exit 1 on --fail-on

Flags may come before or after the arguments; -h after a command shows its flags.
claims and report use the registry built into this binary unless --file names one.

exit codes: 0 done; 1 the command's check failed (claims --validate: the registry is
broken; report: DIR unreadable, --complete and a claim was not measured, or
--requirements and a tier no measured mode meets; analyze:
a file is not a fortio result; diff: --fail-on matched); 2 usage error (diff: also
runs that cannot be compared; report: a bad --requirements file).

The specs run with: go test ./e2e -mode=ambient-l4   (see README.md)
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "claims":
		return runClaims(args[1:], stdout, stderr)
	case "analyze":
		return runAnalyze(args[1:], stdout, stderr)
	case "report":
		return runReport(args[1:], stdout, stderr)
	case "diff":
		return runDiff(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "meshclaims: unknown command %q; accepted: claims, analyze, report, diff, help\n", args[0])
		return 2
	}
}
