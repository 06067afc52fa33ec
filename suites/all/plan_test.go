package all

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
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

// sidecarBaselineReaders are the specs that read sidecar's T1 baseline run
// (steps.RolloutLoad in sidecar with no hardening): one run feeds them all.
var sidecarBaselineReaders = []loadplan.Spec{
	{Claim: "rollout.baseline", Mode: mode.Sidecar},
	{Claim: "rollout.no-response-cause", Mode: mode.Sidecar},
	{Claim: "rollout.503-attribution", Mode: mode.Sidecar},
	{Claim: "rollout.l7-vs-sidecar", Mode: mode.AmbientL7},
}

// baselineReadersAgree says how the planned readers of sidecar's T1
// baseline run declare it differently: each must declare exactly
// rollout.baseline's load (rollout.l7-vs-sidecar among its ambient-l7 one),
// else the plan lists, and the run makes, a second run.
func baselineReadersAgree(specs []loadplan.Spec) (loadplan.Load, int, error) {
	find := func(claim string, m mode.Mode) *loadplan.Spec {
		for i := range specs {
			if specs[i].Claim == claim && specs[i].Mode == m && specs[i].Unmet == "" {
				return &specs[i]
			}
		}
		return nil
	}
	base := find("rollout.baseline", mode.Sidecar)
	if base == nil || len(base.Loads) != 1 {
		return loadplan.Load{}, 0, fmt.Errorf("rollout.baseline [sidecar] not planned with one load: %+v", base)
	}
	ref, readers := base.Loads[0], 0
	var errs []string
	for _, x := range sidecarBaselineReaders {
		s := find(x.Claim, x.Mode)
		if s == nil {
			continue
		}
		readers++
		var sidecar []loadplan.Load
		for _, l := range s.Loads {
			if l.Mode == mode.Sidecar {
				sidecar = append(sidecar, l)
			}
		}
		if len(sidecar) != 1 || sidecar[0] != ref {
			errs = append(errs, fmt.Sprintf("%s [%s] declares %v in sidecar, rollout.baseline %v", x.Claim, x.Mode, sidecar, ref))
		}
	}
	if len(errs) > 0 {
		return ref, readers, errors.New(strings.Join(errs, "; "))
	}
	return ref, readers, nil
}

// One T1 baseline run in sidecar feeds rollout.baseline,
// rollout.no-response-cause, rollout.503-attribution and, with ambient-l7
// selected, rollout.l7-vs-sidecar: in every mode set with sidecar they
// declare the same load, the plan counts it once (listed once, shared by
// the rest) and sidecar's T1 runs are the baseline, the hardened run and
// one per hardening factor, no other. The negative control declares
// rollout.503-attribution's run as it was before (a run of its own,
// rollout-sidecar-accesslog): the check fires and the plan counts one
// more 600 s-scaled run.
func TestSidecarBaselineRunPlannedOnce(t *testing.T) {
	reg := registry(t)
	for _, set := range []string{"sidecar", "none,sidecar", "sidecar,ambient-l7", "all"} {
		t.Run(set, func(t *testing.T) {
			modes, err := mode.Parse(set)
			if err != nil {
				t.Fatal(err)
			}
			planned, err := spec.Plan(reg, spec.Defs(), modes)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &config.Config{ModesFlag: set, Modes: modes, DurationScale: 1, RunID: "plan", ResultsRoot: t.TempDir(), Provider: "local"}
			env := &spec.Env{Config: cfg, Registry: reg}
			specs, err := spec.PlanLoads(context.Background(), planned, env)
			if err != nil {
				t.Fatal(err)
			}
			ref, readers, err := baselineReadersAgree(specs)
			if err != nil {
				t.Fatal(err)
			}
			wantReaders := 3
			if slices.Contains(modes, mode.AmbientL7) {
				wantReaders = 4
			}
			if readers != wantReaders {
				t.Fatalf("%d readers of %s planned, want %d", readers, ref.Name, wantReaders)
			}
			var b bytes.Buffer
			e := loadplan.Write(&b, modes, 1, specs, nil, loadplan.Concurrency{})
			listed, shared := planLines(b.String(), ref.Name)
			if listed != 1 || shared != readers-1 {
				t.Errorf("%s listed %d times and shared %d times, want once and %d times:\n%s", ref.Name, listed, shared, readers-1, b.String())
			}
			// Sidecar's T1 runs: the baseline, GUIDE's hardening and each
			// factor alone; nothing else restarts echo in sidecar.
			r := spec.NewRun(reg.MustGet("rollout.hardened"), mode.Sidecar, env, nil)
			want := map[string]bool{}
			for _, h := range append([]fixtures.Hardening{{}, fixtures.GUIDEHardening(mode.Sidecar)}, hardenings(mode.Sidecar)...) {
				l, err := steps.RolloutDeclared(r, mode.Sidecar, h)
				if err != nil {
					t.Fatal(err)
				}
				want[l.Name] = true
			}
			for _, s := range specs {
				for _, l := range s.Loads {
					if l.Mode == mode.Sidecar && l.Restarts && strings.HasPrefix(l.Name, "rollout-") && !want[l.Name] {
						t.Errorf("%s [%s] declares another sidecar T1 run: %s", s.Claim, s.Mode, l)
					}
				}
			}

			// Negative control: rollout.503-attribution with a run of its own.
			own := slices.Clone(specs)
			for i, s := range own {
				if s.Claim == "rollout.503-attribution" {
					l := ref
					l.Name = "rollout-sidecar-accesslog"
					own[i].Loads = []loadplan.Load{l}
				}
			}
			if _, _, err := baselineReadersAgree(own); err == nil || !strings.Contains(err.Error(), "rollout.503-attribution [sidecar] declares") {
				t.Errorf("a second declaration of the run passed the check: %v", err)
			}
			b.Reset()
			e2 := loadplan.Write(&b, modes, 1, own, nil, loadplan.Concurrency{})
			if e2.Loads-e.Loads != ref.Duration {
				t.Errorf("a run of its own adds %s to the plan, want %s", e2.Loads-e.Loads, ref.Duration)
			}
		})
	}
}

// planLines counts the plan's lines for load name: listed with its
// duration (counted) and "(shared with ...)".
func planLines(plan, name string) (listed, shared int) {
	for _, line := range strings.Split(plan, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, name+": "):
			listed++
		case strings.HasPrefix(line, name+" (shared with "):
			shared++
		}
	}
	return listed, shared
}

func hardenings(m mode.Mode) []fixtures.Hardening {
	var out []fixtures.Hardening
	for _, f := range fixtures.HardeningFactors(m) {
		out = append(out, f.Hardening)
	}
	return out
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
