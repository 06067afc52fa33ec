package steps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/meshclaims/meshclaims/framework/fortioresult"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/loadplan"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

var steady scenario.SharedMeasurement[*load.Run]

// SteadyLoad is GUIDE T5's load in mode m as the claim's setup states it
// (200 qps, 16 connections, 60 s, never below SteadyFloor), run once per run,
// mode and load and shared by the claims that state the same load.
func SteadyLoad(ctx context.Context, r *spec.Run, m mode.Mode) (*load.Run, error) {
	s, err := LatencyLoad(r, scenario.EchoURLOf(m), SteadyFloor)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s/%s/%g/%d/%s", r.Env.Config.RunID, m, s.QPS, s.Connections, s.Duration)
	return steady.Get(r, key, func() (*load.Run, error) {
		if err := scenario.Quiesce(ctx, r, m); err != nil {
			return nil, err
		}
		cal, err := CalibrateResolution(ctx, r, scenario.InMeshOf(r, m), steadyName(m), s)
		if err != nil {
			return nil, err
		}
		s.Resolution = cal.Resolution
		r.SetSetup("%s; %s", DescribeLoad(r, s), cal)
		return Load(ctx, r, scenario.InMeshOf(r, m), steadyName(m), s)
	})
}

func steadyName(m mode.Mode) string { return "steady-" + string(m) }

// SteadyLoads declares the steady loads (SteadyLoad) a spec runs: its
// calibration and measured run in each of the modes, r.Mode where modes
// returns nothing.
func SteadyLoads(modes func(r *spec.Run) []mode.Mode) func(r *spec.Run) ([]loadplan.Load, error) {
	return func(r *spec.Run) ([]loadplan.Load, error) {
		var out []loadplan.Load
		for _, m := range slices.Compact(modesOr(r, modes)) {
			s, err := LatencyLoad(r, scenario.EchoURLOf(m), SteadyFloor)
			if err != nil {
				return nil, err
			}
			out = append(out, Declared(m, steadyName(m)+calibrationSuffix, calibrationSpec(s)), Declared(m, steadyName(m), s))
		}
		return out, nil
	}
}

// modesOr is modes(r), or r.Mode alone when modes is nil or says none.
func modesOr(r *spec.Run, modes func(r *spec.Run) []mode.Mode) []mode.Mode {
	if modes != nil {
		if ms := modes(r); len(ms) > 0 {
			return ms
		}
	}
	return []mode.Mode{r.Mode}
}

// Declared is load s named name in mode m as the plan lists it and as Load
// records it.
func Declared(m mode.Mode, name string, s load.Spec) loadplan.Load {
	return loadplan.Load{Name: name, Mode: m, Duration: s.Duration, QPS: s.QPS, Connections: s.Connections}
}

// CalibrationShare is the part of a latency load's duration its
// calibration run lasts (never under CalibrationFloor).
const (
	CalibrationShare = 0.1
	CalibrationFloor = 2 * time.Second
)

const calibrationSuffix = "-calibration"

// calibrationSpec is the calibration run of load s: CalibrationShare of
// its duration, never under CalibrationFloor.
func calibrationSpec(s load.Spec) load.Spec {
	cs := s
	cs.Duration = time.Duration(float64(s.Duration) * CalibrationShare)
	if cs.Duration < CalibrationFloor {
		cs.Duration = CalibrationFloor
	}
	return cs
}

// Calibration is the histogram resolution a latency load runs at, and the
// short run it was chosen from.
type Calibration struct {
	Resolution            float64 // s
	Run                   string  // the calibration run's name (its raw result is kept)
	P50, P999             float64 // the calibration run's, s
	MedianResolved        bool    // false when P50 and P99.9 are too far apart for one resolution
	CalibrationResolution float64 // the calibration run's own resolution, s
}

func (c Calibration) String() string {
	s := fmt.Sprintf("histogram resolution %g ms, chosen from %s (P50 %.3g ms, P99.9 %.3g ms at %g ms) so that fortio's buckets resolve the percentiles",
		c.Resolution*1e3, c.Run, c.P50*1e3, c.P999*1e3, c.CalibrationResolution*1e3)
	if !c.MedianResolved {
		s += "; the P50 is too far below the P99.9 for one resolution to resolve both"
	}
	return s
}

// CalibrateResolution runs s briefly (CalibrationShare of it, at its own
// resolution) and picks the resolution at which fortio's fixed bucket
// layout resolves its percentiles (load.ResolutionFor). HYBRID's lesson is
// that a fixed resolution turns percentiles outside its fine range into
// bucket positions; the right one depends on how fast the cluster is, which
// the calibration measures instead of assuming GUIDE's EKS latencies. The
// measured run that follows is a separate run: the choice depends on the
// calibration's magnitudes only, never on the measured run's values.
func CalibrateResolution(ctx context.Context, r *spec.Run, c probe.Client, name string, s load.Spec) (Calibration, error) {
	run, err := Load(ctx, r, c, name+calibrationSuffix, calibrationSpec(s))
	if err != nil {
		return Calibration{}, err
	}
	cal, err := CalibrationFrom(run)
	if err != nil {
		return Calibration{}, err
	}
	r.Logf("%s", cal)
	return cal, nil
}

// CalibrationFrom picks the resolution for a load from its calibration
// run's P50 and P99.9 (load.ResolutionFor).
func CalibrationFrom(run *load.Run) (Calibration, error) {
	cal := Calibration{Run: run.Name, CalibrationResolution: run.Spec.Normalized().Resolution}
	var ok50, ok999 bool
	cal.P50, ok50 = run.Result.Percentile(50)
	cal.P999, ok999 = run.Result.Percentile(99.9)
	if !ok50 || !ok999 {
		return Calibration{}, fmt.Errorf("calibration %s: fortio reported no P50 or P99.9", run.Name)
	}
	var err error
	cal.Resolution, cal.MedianResolved, err = load.ResolutionFor(cal.P50, cal.P999)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibration %s: %w", run.Name, err)
	}
	return cal, nil
}

// LittleCheck adds the Little's-law and histogram-resolution checks of a run
// to extra and logs them (HYBRID's lesson: coarse histograms lie). It judges
// the raw reply with the same analyzer as `meshclaims analyze`
// (fortioresult), so a report and the analyzer cannot disagree: the
// resolution is the one the histogram shows, and Little's law is "not
// applicable" to a paced run rather than a failure. extra gets
// little_applicable (1 when the run was saturated), little_consistent (only
// when applicable: 1 if the mean matches connections/throughput) and
// histogram_coarse (1 when the percentiles are bucket positions).
func LittleCheck(r *spec.Run, run *load.Run, extra map[string]float64) {
	res, err := fortioresult.Parse(run.Name, run.Raw)
	if err != nil {
		r.Logf("Little's law: not checked: %v", err)
		return
	}
	l := fortioresult.Summarize(res).Little
	bit := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	extra["little_applicable"] = bit(l.Verdict == stats.LawHolds || l.Verdict == stats.LawViolated)
	if l.Verdict == stats.LawHolds || l.Verdict == stats.LawViolated {
		extra["little_consistent"] = bit(l.Verdict == stats.LawHolds)
	}
	extra["histogram_coarse"] = bit(l.CoarseHistogram)
	r.Logf("Little's law: %s: %s", l.Verdict, l.Reason)
}

// BucketWidthMs is the width in ms of the histogram bucket fortio read
// percentile p of run from (0 if the reply cannot be read): a difference of
// two percentiles smaller than it lies inside fortio's linear interpolation,
// not in the data.
func BucketWidthMs(run *load.Run, p float64) float64 {
	res, err := fortioresult.Parse(run.Name, run.Raw)
	if err != nil {
		return 0
	}
	return fortioresult.Summarize(res).BucketWidthMs(p)
}

// Repeat runs one measurement -repeats times; Value is the mean and Runs the
// per-run values, so the verdict uses their t interval (REVIEW: report spread).
func Repeat(ctx context.Context, r *spec.Run, f func(ctx context.Context, i int) (float64, map[string]float64, error)) (verdict.Measurement, error) {
	// Every repeated measurement compares echo in the no-mesh baseline with
	// echo in this mode: both must be steady first.
	if err := scenario.Quiesce(ctx, r, mode.None, r.Mode); err != nil {
		return verdict.Measurement{}, err
	}
	n := r.Env.Config.Repeats
	var vals []float64
	extra := map[string]float64{}
	for i := 0; i < n; i++ {
		v, ex, err := f(ctx, i)
		if err != nil {
			return verdict.Measurement{}, err
		}
		vals = append(vals, v)
		for k, x := range ex {
			extra[fmt.Sprintf("%s_run%d", k, i+1)] = x
		}
		r.Logf("repeat %d/%d: %.4g", i+1, n, v)
	}
	s, err := stats.Summarize(vals, verdict.Confidence)
	if err != nil {
		return verdict.Measurement{}, err
	}
	m := verdict.Measurement{Value: verdict.Float64(s.Mean), Extra: extra}
	if n > 1 {
		m.Runs = vals
		extra["rel_spread"] = s.RelSpread
	}
	return m, nil
}
