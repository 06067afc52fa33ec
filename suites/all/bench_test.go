package all

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
)

// benchArm is one arm of BenchmarkLocalRunWallTime: the run with or
// without sequential stopping, or with it and the modes' rollout loads at
// once.
type benchArm struct {
	Name       string   // "fixed", "sequential" or "concurrent", as MESHCLAIMS_BENCH_ARMS names it
	Sequential string   // the -sequential flag's value
	Flags      []string // further e2e flags of the arm
}

// benchArms: fixed and sequential are the default pair; concurrent (all
// three levers of time to verdict at once) is run only when named, since
// it needs two or more modes.
var benchArms = []benchArm{{"fixed", "false", nil}, {"sequential", "true", nil}, {"concurrent", "true", []string{"-concurrent-modes"}}}

// parseBenchArms reads MESHCLAIMS_BENCH_ARMS: a comma list of arm names,
// empty for both. One arm at scale 1 is 1.5-2 h of cluster time on a 2-core
// host, so one run can measure one arm and a later run the other, with
// MESHCLAIMS_BENCH_RESULTS keeping both runs' results for the comparison.
func parseBenchArms(s string) ([]benchArm, error) {
	if strings.TrimSpace(s) == "" {
		return benchArms[:2], nil
	}
	var out []benchArm
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		var found *benchArm
		for i := range benchArms {
			if benchArms[i].Name == name {
				found = &benchArms[i]
			}
		}
		if found == nil {
			return nil, fmt.Errorf("MESHCLAIMS_BENCH_ARMS: unknown arm %q in %q; accepted: fixed (-sequential=false), sequential (-sequential=true), concurrent (-sequential=true -concurrent-modes), comma-separated", name, s)
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, *found)
		}
	}
	return out, nil
}

// benchRunID names an arm's run of the given modes so a later run
// finds it in the same results directory: "bench-0-sequential-sidecar",
// "bench-0-fixed-none_sidecar" ("_" joins the modes: -run-id refuses
// "+", see config.RunIDChars). The modes are in it because one arm of
// none,sidecar at scale 1 takes over 2 h on a 2-core host, so each mode's run is
// measured on its own (MESHCLAIMS_BENCH_MODES=none, then sidecar) and kept
// beside the others.
func benchRunID(i int, a benchArm, modes string) string {
	return fmt.Sprintf("bench-%d-%s-%s", i, a.Name, strings.ReplaceAll(strings.ReplaceAll(modes, " ", ""), ",", "_"))
}

// BenchmarkLocalRunWallTime measures a whole qualification run's wall time
// on the local cluster, with sequential stopping (the default) and
// without it (-sequential=false, the source's fixed design), and reports
// both with the verdicts each reached, and, once both arms' results are in
// the results directory (this run's or an earlier one's), every verdict
// that differs between them, so the saving is measured with the decisions
// beside it. Root, MESHCLAIMS_LOCAL=1, and the cluster lock held
// (flock /tmp/meshclaims-cluster.lock); MESHCLAIMS_BENCH_MODES (default
// none,sidecar), MESHCLAIMS_BENCH_SCALE (default 0.05),
// MESHCLAIMS_BENCH_ARMS (fixed, sequential or both, the default),
// MESHCLAIMS_BENCH_RESULTS (a directory that keeps the runs; default a
// temporary one) and MESHCLAIMS_BENCH_FLAGS (extra e2e flags, e.g. the
// sidecar run's -image-archives ... of make e2e-local-sidecar) choose the run.
func BenchmarkLocalRunWallTime(b *testing.B) {
	if os.Getenv("MESHCLAIMS_LOCAL") != "1" {
		b.Skip("runs the suite on the local cluster: MESHCLAIMS_LOCAL=1 as root, with the cluster lock held")
	}
	arms, err := parseBenchArms(os.Getenv("MESHCLAIMS_BENCH_ARMS"))
	if err != nil {
		b.Fatal(err)
	}
	modes := envOr("MESHCLAIMS_BENCH_MODES", "none,sidecar")
	scale := envOr("MESHCLAIMS_BENCH_SCALE", "0.05")
	extra := strings.Fields(os.Getenv("MESHCLAIMS_BENCH_FLAGS"))
	root := os.Getenv("MESHCLAIMS_BENCH_RESULTS")
	if root == "" {
		root = b.TempDir()
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	bin := e2eBinary(b)
	for i := 0; i < b.N; i++ {
		for _, a := range arms {
			id := benchRunID(i, a, modes)
			args := append([]string{"-mode=" + modes, "-provider=local", "-duration-scale=" + scale, "-fail-on=error",
				"-sequential=" + a.Sequential, "-results=" + root, "-run-id=" + id, "-test.timeout=6h"}, a.Flags...)
			args = append(args, extra...)
			// The run's output goes to <results>/<id>.log as it comes, so
			// a run of hours can be followed (tail -f) and read afterwards.
			logPath := filepath.Join(root, id+".log")
			logFile, err := os.Create(logPath)
			if err != nil {
				b.Fatal(err)
			}
			var last tailBuffer
			cmd := exec.Command(bin, args...)
			cmd.Stdout = io.MultiWriter(logFile, &last)
			cmd.Stderr = cmd.Stdout
			b.Logf("%s: running; its output goes to %s", id, logPath)
			start := time.Now()
			err = cmd.Run()
			took := time.Since(start)
			logFile.Close()
			if err != nil {
				b.Fatalf("%s: %v (whole output in %s)\n%s", id, err, logPath, last.String())
			}
			res, err := report.LoadResults(filepath.Join(root, id, "results.json"))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(took.Seconds(), "s/run-"+a.Name)
			b.Logf("%s: %s wall, planned %s; verdicts %v", id, took.Round(time.Second), res.Environment.Planned.Round(time.Second), res.Summary)
		}
		flips, err := compareBenchArms(root, i, modes)
		switch {
		case err != nil:
			b.Fatal(err)
		case flips != nil:
			b.ReportMetric(float64(len(flips)), "verdicts-differing")
			for _, f := range flips {
				b.Logf("verdict differs between the arms: %s", f)
			}
		}
	}
}

// compareBenchArms compares each other arm's run of iteration i of modes
// in root (sequential, concurrent) with the fixed arm's, wherever either
// came from. nil, nil when no pair is there yet; otherwise one line per
// arm, claim and mode whose verdict differs, empty when none does.
func compareBenchArms(root string, i int, modes string) ([]string, error) {
	ref, err := fixedReference(root, i, modes)
	if ref == nil || err != nil {
		return nil, err
	}
	var flips []string
	for _, a := range benchArms[1:] {
		cur, err := loadBenchRun(root, i, a, modes)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			continue
		}
		d, err := report.Compare(ref, cur)
		if err != nil {
			return nil, fmt.Errorf("comparing the bench arms fixed and %s: %w", a.Name, err)
		}
		if flips == nil {
			flips = []string{}
		}
		for _, c := range d.Comparisons {
			if c.Flipped || c.Direction == report.Added || c.Direction == report.Removed {
				flips = append(flips, fmt.Sprintf("%s %s: fixed %s, %s %s (%s)", c.Claim, c.Mode, dashIfBlank(string(c.Old)), a.Name, dashIfBlank(string(c.New)), c.Direction))
			}
		}
	}
	return flips, nil
}

// fixedReference is the fixed arm's results for modes: its run of modes
// or, when that is missing and modes are several, every mode's own fixed
// run with their entries together (one mode's fixed arm at scale 1 takes
// about an hour on a 2-core host, so the records keep one run per mode, while the
// concurrent arm runs them in one process); modes is read as -mode reads
// it, so all is every mode. nil, nil when either is incomplete.
func fixedReference(root string, i int, modes string) (*report.Results, error) {
	if r, err := loadBenchRun(root, i, benchArms[0], modes); r != nil || err != nil {
		return r, err
	}
	// "all" is every mode, as -mode reads it; before, only a comma list
	// was split, so a concurrent arm of all found no reference.
	each, err := mode.Parse(modes)
	if err != nil {
		return nil, fmt.Errorf("MESHCLAIMS_BENCH_MODES: %w", err)
	}
	if len(each) < 2 {
		return nil, nil
	}
	var merged *report.Results
	for _, m := range each {
		r, err := loadBenchRun(root, i, benchArms[0], string(m))
		if r == nil || err != nil {
			return nil, err
		}
		if merged == nil {
			merged = r
			continue
		}
		if r.SchemaVersion != merged.SchemaVersion || r.Environment.Registry != merged.Environment.Registry {
			return nil, fmt.Errorf("the fixed runs %s and %s cannot stand together as one reference: schema %d and %d, registry %q and %q",
				merged.Environment.RunID, r.Environment.RunID, merged.SchemaVersion, r.SchemaVersion, merged.Environment.Registry, r.Environment.Registry)
		}
		merged.Environment.RunID += "+" + r.Environment.RunID
		merged.Entries = append(merged.Entries, r.Entries...)
	}
	return merged, nil
}

// loadBenchRun reads arm a's run of iteration i of modes in root; nil,
// nil when that run is not there (its arm has not run yet).
func loadBenchRun(root string, i int, a benchArm, modes string) (*report.Results, error) {
	p := filepath.Join(root, benchRunID(i, a, modes), "results.json")
	if _, err := os.Stat(p); os.IsNotExist(err) {
		return nil, nil
	}
	return report.LoadResults(p)
}

func dashIfBlank(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// tailBuffer keeps the last 4000 bytes written to it: the end of a run's
// output for a failure message, without holding hours of it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4000 {
		t.b = append([]byte(nil), t.b[len(t.b)-4000:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
