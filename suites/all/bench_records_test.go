package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/report"
)

// benchRecordsDir keeps BenchmarkLocalRunWallTime's runs at scale 1: one
// arm of one mode set takes an hour or more on a 2-core host, so the arms
// are measured in separate runs on different days and kept here, each a
// run's results directory without its raw
// evidence and JUnit (environment.json, plan.txt, measured/,
// results.json, report.md, glossary.md). The plan reads them with -plan-costs, and
// compareBenchArms compares the other arms with its modes' fixed arm (for a
// run of several modes, each mode's fixed run together).
const benchRecordsDir = "testdata/bench/scale1"

// The kept records are what they say they are: each names its arm and
// modes in its directory, and its environment agrees (run id, the local
// provider, scale 1, the modes, a finished run with its set-up and plan);
// the plan can read costs from it; and where both arms of a mode set are
// kept, they compare.
func TestBenchRecords(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(repoRoot(), benchRecordsDir, "bench-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no bench records under %s", benchRecordsDir)
	}
	modeSets := map[string]bool{}
	for _, dir := range dirs {
		id := filepath.Base(dir)
		t.Run(id, func(t *testing.T) {
			res, err := report.LoadResults(filepath.Join(dir, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			env := res.Environment
			var modes []string
			for _, m := range env.Modes {
				modes = append(modes, string(m))
			}
			var arm *benchArm
			for i := range benchArms {
				if benchRunID(0, benchArms[i], strings.Join(modes, ",")) == id {
					arm = &benchArms[i]
				}
			}
			switch {
			case arm == nil:
				t.Errorf("directory %s is no bench run id of its modes %v", id, modes)
			case env.RunID != id:
				t.Errorf("run id %q in a directory named %s", env.RunID, id)
			case env.Provider != "local" || env.DurationScale != 1:
				t.Errorf("provider %q at scale %v; the bench's records are the local provider's at scale 1", env.Provider, env.DurationScale)
			case env.Finished.IsZero() || env.SetUp <= 0 || env.Planned <= 0:
				t.Errorf("not a whole run: finished %v, set-up %v, planned %v", env.Finished, env.SetUp, env.Planned)
			case len(res.Entries) == 0:
				t.Error("no verdicts")
			}
			if _, err := os.Stat(filepath.Join(dir, "plan.txt")); err != nil {
				t.Errorf("the plan it ran with: %v", err)
			}
			d, err := report.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			c, err := d.Costs()
			if err != nil || c.SetUp <= 0 || len(c.Beyond) == 0 {
				t.Errorf("costs for a later plan: %+v, %v", c, err)
			}
			modeSets[strings.Join(modes, ",")] = true
		})
	}
	root := filepath.Join(repoRoot(), benchRecordsDir)
	for modes := range modeSets {
		flips, err := compareBenchArms(root, 0, modes)
		if err != nil {
			t.Errorf("comparing the arms of %s: %v", modes, err)
		}
		// The differences are the README's to explain, not this test's to
		// fail on: a verdict near its threshold may flip between runs.
		for _, f := range flips {
			t.Logf("%s: verdict differs from the fixed arm's: %s", modes, f)
		}
	}
}
