package all

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// modeSets are the -mode values the plan is checked for.
var modeSets = []string{"none", "sidecar", "ambient-l4", "ambient-l7", "all", "none,sidecar", "sidecar,ambient-l7"}

// The plan builds for every mode set from the same declarations the run
// uses: every planned spec is listed, each declared load has a positive
// duration within the documented one, and -plan on the e2e binary prints
// it and runs nothing (no results directory, no cluster).
func TestPlanForEveryModeSet(t *testing.T) {
	reg := registry(t)
	for _, set := range modeSets {
		t.Run(set, func(t *testing.T) {
			modes, err := mode.Parse(set)
			if err != nil {
				t.Fatal(err)
			}
			planned, err := spec.Plan(reg, spec.Defs(), modes)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &config.Config{ModesFlag: set, Modes: modes, DurationScale: 0.05, ResultsRoot: t.TempDir(), Provider: "local"}
			specs, err := spec.PlanLoads(context.Background(), planned, &spec.Env{Config: cfg, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			if len(specs) != len(planned) {
				t.Fatalf("%d specs planned, %d in the plan", len(planned), len(specs))
			}
			declared := 0
			for _, s := range specs {
				for _, l := range s.Loads {
					declared++
					if l.Duration <= 0 || l.Name == "" || !l.Mode.Valid() {
						t.Errorf("%s [%s]: load %+v", s.Claim, s.Mode, l)
					}
				}
			}
			e, err := spec.WritePlan(context.Background(), io.Discard, planned, &spec.Env{Config: cfg, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			if declared == 0 || e.Loads <= 0 {
				t.Fatalf("no declared load in mode set %s (estimate %+v)", set, e)
			}
		})
	}
	bin := e2eBinary(t)
	for _, set := range modeSets {
		t.Run("binary/"+set, func(t *testing.T) {
			root := t.TempDir()
			out, err := exec.Command(bin, "-mode="+set, "-plan", "-results="+root, "-test.v").CombinedOutput()
			if err != nil {
				t.Fatalf("-plan: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "estimated total:") || strings.Contains(string(out), "Ran ") {
				t.Fatalf("-plan output:\n%s", out)
			}
			if ls, _ := exec.Command("ls", root).Output(); len(ls) > 0 {
				t.Fatalf("-plan wrote into the results root: %s", ls)
			}
		})
	}
}

// With -concurrent-modes the plan of the real declarations runs the modes'
// rollout loads at once: each group counts at its longest, so the total
// falls by the rest of each group less the one interference reference
// run; latency loads (steady T5 and every load without a restart loop)
// join no group, and a single mode has none.
func TestConcurrentPlanRunsRolloutsAtOnce(t *testing.T) {
	reg := registry(t)
	for _, set := range []string{"none,sidecar", "all", "sidecar"} {
		t.Run(set, func(t *testing.T) {
			modes, err := mode.Parse(set)
			if err != nil {
				t.Fatal(err)
			}
			planned, err := spec.Plan(reg, spec.Defs(), modes)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &config.Config{ModesFlag: set, Modes: modes, DurationScale: 1, ResultsRoot: t.TempDir(), Provider: "local"}
			env := &spec.Env{Config: cfg, Registry: reg}
			specs, err := spec.PlanLoads(context.Background(), planned, env)
			if err != nil {
				t.Fatal(err)
			}
			groups := loadplan.Groups(specs)
			var saved time.Duration
			for key, g := range groups {
				for _, l := range g {
					saved += l.Duration
					if !l.Restarts || strings.HasPrefix(l.Name, "steady-") {
						t.Errorf("group %s holds %s, which is not a rollout load", key, l.Name)
					}
				}
				saved -= loadplan.GroupWall(g)
			}
			serial, err := spec.WritePlan(context.Background(), io.Discard, planned, env)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConcurrentModes = true
			var out strings.Builder
			at, err := spec.WritePlan(context.Background(), &out, planned, env)
			if err != nil {
				t.Fatal(err)
			}
			if len(modes) == 1 {
				if len(groups) != 0 || at.Total() != serial.Total() {
					t.Fatalf("one mode: %d groups, total %s vs %s alone", len(groups), at.Total(), serial.Total())
				}
				return
			}
			if len(groups) == 0 || at.Groups != len(groups) || !strings.Contains(out.String(), "at once with") || !strings.Contains(out.String(), "interference check: one reference run alone") {
				t.Fatalf("%d groups (plan says %d):\n%s", len(groups), at.Groups, out.String())
			}
			if want := serial.Total() - saved + at.Reference; at.Total() != want || at.Total() >= serial.Total() {
				t.Fatalf("total at once %s, want %s (alone %s, saved %s, reference %s)\n%s", at.Total(), want, serial.Total(), saved, at.Reference, out.String())
			}
			t.Logf("-mode=%s at scale 1: %s alone, %s with -concurrent-modes (%d groups)", set, serial.Total(), at.Total(), at.Groups)
		})
	}
}
