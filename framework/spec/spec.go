// Package spec turns claim declarations into Ginkgo specs.
//
// A suite file declares one claim (Cilium's connectivity-test habit): which
// claim id, what scenario, which preconditions, and a Measure function that
// returns what it observed. Everything else — choosing the modes the claim
// applies to, judging against the registry's tolerance, recording the
// measurement for the report, JUnit report entries, the Gomega assertion — is
// done here once, so every spec fails the same honest way.
package spec

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Need is a precondition a spec proves before it judges (e.g. that the CNI
// enforces NetworkPolicy). An unmet need fails the spec with its reason.
type Need struct {
	Name  string
	Check func(ctx context.Context, r *Run) error
	// Selection marks a need that only the run's -mode selection meets or
	// not (a comparison of two modes, modes side by side), never the
	// cluster. Unmet, the verdict is inconclusive and says which modes to
	// add, but under -fail-on=requirement or error the spec is reported,
	// not failed: a single-mode run cannot measure it by design, where an
	// unmet need of the cluster (NetworkPolicy not enforced) is a defect.
	Selection bool
	// Layer marks a need that the test layer under the suite cannot meet
	// by design, where a user's cluster does: the local provider's
	// sidecars are upstream Envoy without Istio's HBONE inbound, so an
	// ambient client cannot reach them, as it can under Istio's ambient
	// profile with istio-proxy. Unmet, it is handled as Selection is
	// (inconclusive with the reason, failed only by the qualification
	// gate): the verdict must not say "not reproduced" for the layer's sake.
	Layer bool
}

// Def declares the spec of one claim.
type Def struct {
	Claim    string // claim id in the registry
	Area     string // suite area: mtls, netpol, latency, rollout, ...
	Scenario string // one sentence: what is deployed and done
	// Modes optionally narrows the claim's modes (e.g. a spec that can only
	// run where a sidecar exists); empty = all the claim's modes.
	Modes []mode.Mode
	Needs []Need
	// Measure runs the scenario in r.Mode and returns what it observed. An
	// error is a broken run (set-up failed), not a disproved claim.
	Measure func(ctx context.Context, r *Run) (verdict.Measurement, error)
	// Loads declares the loads Measure runs in r.Mode (nil: not declared),
	// built with the same functions Measure builds them with: the plan
	// (-plan, and every dry run) prints them with their durations before
	// any cluster work, and a run whose loads differ from them fails
	// (Drift). It reads only r.Claim, r.Mode and r.Env.Config.
	Loads func(r *Run) ([]loadplan.Load, error)
	// Slow marks specs that run for minutes (rollout loads).
	Slow bool
	// Declared is where the declaration is, "suites/authz/authz.go:27"
	// (relative to the repository); Declare fills it from its caller, so
	// a verdict in JUnit, results.json or the report leads to its source.
	Declared string
}

var (
	mu   sync.Mutex
	defs []Def
)

// Declare registers a claim spec; suites call it from package-level vars:
//
//	var _ = spec.Declare(spec.Def{Claim: "rollout.baseline", ...})
func Declare(d Def) bool {
	if d.Declared == "" {
		_, file, line, _ := runtime.Caller(1)
		d.Declared = fmt.Sprintf("%s:%d", repoRelative(file), line)
	}
	mu.Lock()
	defer mu.Unlock()
	defs = append(defs, d)
	return true
}

// repoRoot is the repository's directory as compiled in: this file is
// framework/spec/spec.go.
var repoRoot = func() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(here)))
}()

// repoRelative makes a source path relative to the repository; a path
// outside it (a test's temporary package) stays as it is.
func repoRelative(file string) string {
	if rel, err := filepath.Rel(repoRoot, file); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return file
}

// Defs returns every declared spec, sorted by area then claim.
func Defs() []Def {
	mu.Lock()
	defer mu.Unlock()
	out := append([]Def(nil), defs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Area != out[j].Area {
			return out[i].Area < out[j].Area
		}
		return out[i].Claim < out[j].Claim
	})
	return out
}

// Planned is one (claim, mode) spec to run.
type Planned struct {
	Def   Def
	Claim *claims.Claim
	Mode  mode.Mode
}

// Name is the spec's text: "<claim> [<mode>] <title>".
func (p Planned) Name() string {
	return fmt.Sprintf("%s [%s] %s", p.Claim.ID, p.Mode, p.Claim.Title)
}

// Labels are the spec's Ginkgo labels: claim:<id>, mode:<mode>, area:<area>.
func (p Planned) Labels() []string {
	l := []string{"claim:" + p.Claim.ID, "mode:" + string(p.Mode), "area:" + p.Def.Area}
	if p.Def.Slow {
		l = append(l, "slow")
	}
	return l
}

// Plan matches declarations with the registry for the selected modes. It
// fails on a declaration naming an unknown claim, on two declarations of one
// claim, and on a declared mode the claim does not apply to.
func Plan(reg *claims.Registry, defs []Def, modes []mode.Mode) ([]Planned, error) {
	var errs []string
	seen := map[string]bool{}
	var out []Planned
	for _, d := range defs {
		c, ok := reg.Get(d.Claim)
		if !ok {
			errs = append(errs, fmt.Sprintf("spec in area %q names claim %q, which registry %s does not have", d.Area, d.Claim, reg.File))
			continue
		}
		if seen[d.Claim] {
			errs = append(errs, fmt.Sprintf("claim %q has more than one spec", d.Claim))
			continue
		}
		seen[d.Claim] = true
		if d.Measure == nil {
			errs = append(errs, fmt.Sprintf("spec of claim %q has no Measure", d.Claim))
			continue
		}
		// A claim's needs are what its verdict means only if proven (e.g. a
		// CNI that enforces NetworkPolicy); a spec that does not check one
		// would judge without it.
		for _, n := range c.Needs {
			if !slices.ContainsFunc(d.Needs, func(x Need) bool { return x.Name == n }) {
				errs = append(errs, fmt.Sprintf("spec of claim %q does not check the claim's need %q (registry %s); its Needs: %s", d.Claim, n, reg.File, needNames(d.Needs)))
			}
		}
		for _, m := range d.Modes {
			if !c.AppliesTo(m) {
				errs = append(errs, fmt.Sprintf("spec of claim %q narrows to mode %s, which the claim does not apply to", d.Claim, m))
			}
		}
		for _, m := range modes {
			if !c.AppliesTo(m) || (len(d.Modes) > 0 && !contains(d.Modes, m)) {
				continue
			}
			out = append(out, Planned{Def: d, Claim: c, Mode: m})
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("specs and registry disagree:\n  %s", strings.Join(errs, "\n  "))
	}
	return out, nil
}

// Unspecified lists "claim [mode]" pairs the registry applies to the modes
// but no declaration covers.
func Unspecified(reg *claims.Registry, defs []Def, modes []mode.Mode) []string {
	covered := map[string]Def{}
	for _, d := range defs {
		covered[d.Claim] = d
	}
	var out []string
	for _, m := range modes {
		for _, c := range reg.ForMode(m) {
			d, ok := covered[c.ID]
			if !ok || (len(d.Modes) > 0 && !contains(d.Modes, m)) {
				out = append(out, fmt.Sprintf("%s [%s]", c.ID, m))
			}
		}
	}
	return out
}

func needNames(ns []Need) string {
	if len(ns) == 0 {
		return "none"
	}
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

func contains(ms []mode.Mode, m mode.Mode) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}
