package steps

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/interference"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// -concurrent-modes: the T1 rollout loads of several modes at once.
//
// A rollout load is a rate load: 100 qps against the mode's own echo while
// the mode's own echo Deployment restarts, its 503 and -1 rates per
// request are the claim. Each mode has its own namespace, client, echo and
// restart driver, so running the same claim's same load (same hardening,
// same spec) of every selected mode at once touches nothing another mode
// measures but the nodes and the control plane they share; the
// interference check measures that share in the same run. Latency loads
// (steady T5, latency.*, the sidecar cost) never join: their percentiles
// are the claim and move with any load on the same nodes.

// AtOnce is how a rollout load ran under -concurrent-modes: the modes
// whose same load ran at the same time, and the run's interference check.
type AtOnce struct {
	With  []mode.Mode
	Check *interference.Check // nil: no check could be made
	// Note is the sentence the setup of every claim that read the load
	// carries.
	Note string
}

// addTo puts the run's placement into a measurement's extra numbers:
// ran_alongside_modes (how many other modes' loads ran at once) and, when
// checked, interference (1 when the check found the load disturbed), each
// name after prefix.
func (a *AtOnce) addTo(extra map[string]float64, prefix string) {
	if a == nil {
		return
	}
	extra[prefix+"ran_alongside_modes"] = float64(len(a.With))
	if a.Check != nil {
		extra[prefix+"interference"] = 0
		if a.Check.Disturbed {
			extra[prefix+"interference"] = 1
		}
	}
}

// StateAtOnce is for a claim that reads several rollout loads and builds
// its own measurement and setup (rollout.hardening-factors, the hardened
// run's reference, rollout.l7-vs-sidecar): RolloutLoad states a load run
// at once in the setup and the measurement it returns, but the claim's
// own SetSetup, the next load's setup and a measurement built by hand
// drop that. StateAtOnce puts it back, for each load named in names that
// ran at once: its note in r's setup, labelled with the name, unless the
// setup already has it (the load RolloutLoad read last), and
// its placement in extra as <name>_ran_alongside_modes and
// <name>_interference. Loads that ran alone change nothing.
func StateAtOnce(r *spec.Run, extra map[string]float64, names []string, results []*RolloutResult) {
	setup := r.Setup()
	for i, res := range results {
		if res == nil || res.AtOnce == nil {
			continue
		}
		res.AtOnce.addTo(extra, names[i]+"_")
		// Against the setup as it came: two loads' notes may read the
		// same, and each is stated.
		if !strings.Contains(r.Setup(), res.AtOnce.Note) {
			setup += fmt.Sprintf("; %s: %s", names[i], res.AtOnce.Note)
		}
	}
	r.SetSetup("%s", setup)
}

// rolloutAlongside is the loadplan.Load.Alongside key of T1's load with
// hardening h: the load without its mode.
func rolloutAlongside(h fixtures.Hardening, s load.Spec) string {
	return fmt.Sprintf("rollout-%s/%g/%d/%s", hardeningName(h), s.QPS, s.Connections, s.Duration)
}

// inGroup marks a context whose RolloutLoad is one member of a group
// already running at once: it runs its own mode's load, never a group.
type inGroup struct{}

// rolloutGroup is one group of loads run at once.
type rolloutGroup struct {
	once    sync.Once
	results map[mode.Mode]*RolloutResult
	errs    map[mode.Mode]error
}

var concurrent struct {
	mu     sync.Mutex
	groups map[string]*rolloutGroup
	// checked holds, per run id, the run's interference check sentence
	// once the first group made it (the check is made once per run).
	checked map[string]string
}

func groupOf(key string) *rolloutGroup {
	concurrent.mu.Lock()
	defer concurrent.mu.Unlock()
	if concurrent.groups == nil {
		concurrent.groups = map[string]*rolloutGroup{}
	}
	g, ok := concurrent.groups[key]
	if !ok {
		g = &rolloutGroup{results: map[mode.Mode]*RolloutResult{}, errs: map[mode.Mode]error{}}
		concurrent.groups[key] = g
	}
	return g
}

// groupModes are the modes whose selected specs read T1's load with key
// alongside (loadplan.Groups over the selection's declared loads, as the
// plan places them); fewer than two: the load runs alone.
func groupModes(ctx context.Context, r *spec.Run, alongside string) ([]mode.Mode, error) {
	selected, err := scenario.SelectedSpecs(r)
	if err != nil {
		return nil, err
	}
	specs, err := spec.PlanLoads(ctx, selected, r.Env)
	if err != nil {
		return nil, err
	}
	return loadplan.GroupModes(loadplan.Groups(specs)[alongside]), nil
}

// concurrentRollout is RolloutLoad's hook for -concurrent-modes. The first
// spec that needs T1's load with hardening h in a mode of a group starts
// that load in every mode of the group at once, each against its own
// namespace's echo with its own restart loop and each cached under the key
// the serial path uses (rolloutKey), so the other modes' specs read it and
// nothing runs twice; the spec's own mode runs on r itself, as alone. It
// waits for all of them, then (once per run) makes the interference check.
// ok is false when the load is not run here: the flag is off, the load has
// no group, or the group already ran (RolloutLoad then reads the cache).
func concurrentRollout(ctx context.Context, r *spec.Run, m mode.Mode, h fixtures.Hardening, s load.Spec) (res *RolloutResult, ok bool, err error) {
	if ctx.Value(inGroup{}) != nil || r.Env == nil || r.Env.Config == nil || r.Env.Registry == nil || !r.Env.Config.ConcurrentModes {
		return nil, false, nil
	}
	key := rolloutAlongside(h, s)
	modes, err := groupModes(ctx, r, key)
	if err != nil {
		r.Logf("load %s runs alone: its group is not known (%v)", rolloutName(m, h), err)
		return nil, false, nil
	}
	if len(modes) < 2 || !slices.Contains(modes, m) {
		return nil, false, nil
	}
	g := groupOf(r.Env.Config.RunID + "/" + key)
	first := false
	g.once.Do(func() {
		first = true
		runGroup(ctx, r, g, m, h, s, modes)
	})
	if !first {
		return nil, false, nil
	}
	return g.results[m], true, g.errs[m]
}

// runGroup runs the group's loads at once, mode m's on r, then the
// interference check, and states both in every member's setup.
func runGroup(ctx context.Context, r *spec.Run, g *rolloutGroup, m mode.Mode, h fixtures.Hardening, s load.Spec, modes []mode.Mode) {
	r.Logf("-concurrent-modes: T1 with hardening %s in %s at once", hardeningName(h), mode.Join(modes, ", "))
	gctx := context.WithValue(ctx, inGroup{}, true)
	runs := map[mode.Mode]*spec.Run{}
	for _, mo := range modes {
		runs[mo] = r
		if mo != m {
			// The other modes' loads are recorded on runs of their own:
			// their specs reuse them (raw results, loads, setup) as
			// shared, and r's record lists only its own mode's load.
			runs[mo] = spec.NewRun(r.Claim, mo, r.Env, r.Out)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, mo := range modes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := RolloutLoad(gctx, runs[mo], mo, h)
			mu.Lock()
			g.results[mo], g.errs[mo] = res, err
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The other modes' echo is restored (hardening undone) and steady
	// before the reference run alone, so nothing else restarts during it.
	for _, mo := range modes {
		if mo != m {
			if err := runs[mo].Close(ctx); err != nil {
				r.Logf("restoring %s after its load: %v", mo.Namespace(), err)
			}
		}
	}
	check := checkOnce(ctx, r, g, m, h, s, modes)
	for _, mo := range modes {
		res := g.results[mo]
		if res == nil {
			continue
		}
		var with []mode.Mode
		for _, o := range modes {
			if o != mo {
				with = append(with, o)
			}
		}
		a := &AtOnce{With: with, Check: check.check}
		a.Note = fmt.Sprintf("ran at once with the same load in %s (-concurrent-modes; %s)", mode.Join(with, ", "), overlap(res, g.results))
		if check.text != "" {
			a.Note += "; " + check.text
		}
		res.AtOnce = a
		if mo == m {
			r.SetSetup("%s; %s", r.Setup(), a.Note)
			continue
		}
		rollouts.AmendSetup(rolloutKey(r, mo, h, s), "; "+a.Note)
	}
	if r.Env.Note != nil {
		r.Env.Note(fmt.Sprintf("-concurrent-modes: %s (hardening %s) ran in %s at once.", rolloutName(m, h), hardeningName(h), mode.Join(modes, ", ")))
	}
}

// groupCheck is what the run's interference check says to one group: the
// check itself for the group that made it, its sentence for the others.
type groupCheck struct {
	check *interference.Check
	text  string
}

// checkOnce makes the run's interference check with the first group that
// runs: mode m's load again alone for interference.ReferenceDuration, its
// rates per cycle and P50 against its run alongside. Later groups cite it.
func checkOnce(ctx context.Context, r *spec.Run, g *rolloutGroup, m mode.Mode, h fixtures.Hardening, s load.Spec, modes []mode.Mode) groupCheck {
	runID := r.Env.Config.RunID
	concurrent.mu.Lock()
	if concurrent.checked == nil {
		concurrent.checked = map[string]string{}
	}
	text, done := concurrent.checked[runID]
	if !done {
		concurrent.checked[runID] = "" // made by this group
	}
	concurrent.mu.Unlock()
	if done {
		if text == "" {
			return groupCheck{text: "the run's interference check was not made"}
		}
		return groupCheck{text: "the run's " + text}
	}
	out := groupCheck{}
	alongside := g.results[m]
	c, err := func() (*interference.Check, error) {
		if g.errs[m] != nil || alongside == nil {
			return nil, fmt.Errorf("%s's load alongside failed: %v", m, g.errs[m])
		}
		alone, err := referenceRun(ctx, r, m, h, s)
		if err != nil {
			return nil, err
		}
		var with []string
		for _, o := range modes {
			if o != m {
				with = append(with, string(o))
			}
		}
		c, err := interference.Compare(string(m), with, interferenceRun(alone), interferenceRun(alongside), verdict.Confidence)
		return &c, err
	}()
	if err != nil {
		out.text = fmt.Sprintf("interference check not made: %v", err)
		r.Logf("%s", out.text)
	} else {
		out.check, out.text = c, c.String()
		r.Logf("%s", out.text)
	}
	concurrent.mu.Lock()
	concurrent.checked[runID] = out.text
	concurrent.mu.Unlock()
	if r.Env.Note != nil {
		r.Env.Note("-concurrent-modes " + out.text)
	}
	return out
}

// referenceRun is the interference check's reference: mode m's T1 load
// alone, shorter (interference.ReferenceDuration), recorded on a run of
// its own (no spec declares it; the plan lists it as the run's). Echo is
// still hardened with h by the group's run on r, whose undo runs when its
// spec ends.
func referenceRun(ctx context.Context, r *spec.Run, m mode.Mode, h fixtures.Hardening, s load.Spec) (*RolloutResult, error) {
	ref := spec.NewRun(r.Claim, m, r.Env, r.Out)
	defer ref.Close(ctx)
	mesh, err := scenario.ClusterOf(ref)
	if err != nil {
		return nil, err
	}
	if err := scenario.Quiesce(ctx, ref, m); err != nil {
		return nil, err
	}
	s.Duration = interference.ReferenceDuration(s.Duration)
	driver, err := NewDeploymentDriver(mesh, m.Namespace(), fixtures.EchoName)
	if err != nil {
		return nil, err
	}
	return underLoad(ctx, ref, scenario.InMeshOf(ref, m), rolloutName(m, h)+"-alone", s, driver)
}

// interferenceRun is a rollout run as the interference check reads it:
// per restart cycle (from its start to the next cycle's) the requests at
// the achieved rate and the 503s and explained -1s in it, and the latency
// histogram of every call.
func interferenceRun(x *RolloutResult) interference.Run {
	out := interference.Run{Name: x.Load.Name}
	qps := x.Load.Result.ActualQPS
	if qps <= 0 {
		qps = x.Load.Spec.QPS
	}
	var unavailable []time.Time
	for _, e := range x.Load.NonOK {
		if e.Code == http.StatusServiceUnavailable && !e.Time.IsZero() {
			unavailable = append(unavailable, e.Time)
		}
	}
	per503, _ := rollout.CountPerCycle(unavailable, x.Cycles)
	noResp, _ := rollout.CountPerCycle(x.Load.FailureTimes(), x.Cycles)
	for i, cy := range x.Cycles {
		span := cy.Duration()
		if i+1 < len(x.Cycles) {
			span = x.Cycles[i+1].Start.Sub(cy.Start)
		}
		n := max(1, int64(math.Round(qps*span.Seconds())))
		out.Cycles = append(out.Cycles, interference.Cycle{Requests: n, Unavailable: min(n, int64(per503[i])), NoResponse: min(n, int64(noResp[i]))})
	}
	if h := x.Load.Result.DurationHistogram; h != nil {
		for _, b := range h.Data {
			out.Latency = append(out.Latency, stats.Bucket{Low: b.Start, High: b.End, Count: b.Count})
		}
	}
	return out
}

// overlap says how much of a member's load the others' overlapped: the
// members are prepared (hardened, quiesced) apart, so their starts differ
// by seconds.
func overlap(res *RolloutResult, all map[mode.Mode]*RolloutResult) string {
	start, end := res.Load.Start, res.Load.End
	lo, hi := end, start
	for _, o := range all {
		if o == nil || o == res {
			continue
		}
		lo = minTime(lo, maxTime(start, o.Load.Start))
		hi = maxTime(hi, minTime(end, o.Load.End))
	}
	total := end.Sub(start)
	if total <= 0 || !hi.After(lo) {
		return "no overlap measured"
	}
	return fmt.Sprintf("%s of its %s overlapped by another mode's load", hi.Sub(lo).Round(time.Second), total.Round(time.Second))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
