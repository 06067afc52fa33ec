package kubeproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshclaims/meshclaims/fixtures"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/kubeproxymode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// endpointTrials is how many changes kubeproxy.kind-endpoint-change and
// kubeproxy.kind-endpoint-revert time: HYBRID's are 5 each ('5回').
const endpointTrials = 5

// endpointSettle is how long the Service keeps one backend before it is
// changed: HYBRID's 'バックエンド1個、2秒待って変更' (one backend, wait 2 s,
// then change). It also puts each change past kube-proxy's minSyncPeriod
// since the one before, so only the revert meets it.
const endpointSettle = 2 * time.Second

// endpointAttempt bounds each of the watch's requests: HYBRID's attempt
// limit after its lesson ('試行制限を20msに縮小して再測定しました').
const endpointAttempt = 20 * time.Millisecond

// endpointServiceName is the Service whose one backend is changed.
const endpointServiceName = "svc-kp-endpoint"

// endpointReading is one trial: the Service's one backend changed from
// echo-v1 to echo-v2 after endpointSettle, and right after v2 answered,
// changed back. Each time runs from the start of the API call that made
// the change to the start of the first request the new backend answered
// (on the pod's clock, set against the host's); Resolution is the span
// before it in which the change could have landed (the previous request's
// start to that one's).
type endpointReading struct {
	Change, Revert                     time.Duration
	ChangeResolution, RevertResolution time.Duration
	// Neither counts the changes of who answers to no backend (requests
	// refused, timed out or reset while the rules were rewritten), by
	// cause; ChangeLeft is the time until the old backend first stopped
	// answering (an answer from neither or from v2), which is ≤ Change.
	Neither    int
	Causes     map[string]int
	ChangeLeft time.Duration
	// Noise counts answers from neither before a change was made (a
	// request that ran out of its bound on a busy host).
	Noise int
}

// endpointTiming is what timeEndpointChanges measured, with the settings
// it was read against.
type endpointTiming struct {
	Readings  []endpointReading
	KubeProxy kubeproxymode.Settings
	// ClockOffset is the client pod's clock minus the host's, within
	// ClockUncertainty (zero on one host: kind, the local provider).
	ClockOffset, ClockUncertainty time.Duration
	// Syncs and MeanSync are the rule syncs kube-proxy made during the
	// trials and their mean duration, from its own metrics, where the
	// test host can read them (the local provider, whose node is this
	// host); a change cannot reach the data path faster than a sync.
	Syncs    int64
	MeanSync time.Duration
}

// timeEndpointChanges runs HYBRID's endpoint procedure endpointTrials
// times on a Service of its own that selects one canary version.
func timeEndpointChanges(ctx context.Context, r *spec.Run) (out endpointTiming, err error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return out, err
	}
	if out.KubeProxy, err = kubeproxymode.ReadSettings(ctx, m.Kube.Client); err != nil {
		return out, err
	}
	t := scenario.Target(r)
	s := fixtures.WorkloadService(t, endpointServiceName, fixtures.EchoHTTPPort)
	s.Spec.Selector = versionSelector(fixtures.CanaryV1)
	if err := m.Applier.Apply(ctx, s); err != nil {
		return out, err
	}
	defer func() {
		if err := m.Applier.Client().Delete(context.WithoutCancel(ctx), s); err != nil {
			r.Logf("deleting Service %s: %v", s.Name, err)
		}
	}()
	got, err := m.Kube.Client.CoreV1().Services(t.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return out, err
	}
	url := fmt.Sprintf("http://%s:%d/debug", got.Spec.ClusterIP, fixtures.EchoHTTPPort)
	point := func(ctx context.Context, version string) error {
		patch := fmt.Sprintf(`{"spec":{"selector":{%q:%q}}}`, fixtures.LabelVersion, version)
		_, err := m.Kube.Client.CoreV1().Services(t.Namespace).Patch(ctx, s.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	readSyncs := func() (kubeproxymode.SyncTotals, bool) {
		addr, ok := localKubeProxyMetrics(ctx, r)
		if !ok {
			return kubeproxymode.SyncTotals{}, false
		}
		t, err := kubeproxymode.ReadSyncTotals(ctx, addr)
		if err != nil {
			r.Logf("kube-proxy's sync metrics: %v", err)
			return t, false
		}
		return t, true
	}
	syncsBefore, haveSyncs := readSyncs()
	defer func() {
		if after, ok := readSyncs(); ok && haveSyncs {
			out.Syncs, out.MeanSync = after.Since(syncsBefore)
		}
	}()
	err = probe.Forward(ctx, m.Kube, scenario.InMesh(r), func(base string) error {
		if out.ClockOffset, out.ClockUncertainty, err = probe.ClockOffset(ctx, base, 7); err != nil {
			return err
		}
		// Set-up, not the measurement: the new Service answers at all.
		res, err := probe.UntilVia(ctx, base, url, 200, r.Env.Config.Timeouts.ServiceReady, steps.ReadinessAttempt)
		if err != nil {
			return err
		}
		if res.Status != 200 {
			return fmt.Errorf("Service %s (%s) did not answer 200 within %s: last %s %s", s.Name, url, r.Env.Config.Timeouts.ServiceReady, res.Outcome, res.Detail)
		}
		for i := 0; i < endpointTrials; i++ {
			rd, err := endpointTrial(ctx, base, url, r.Env.Config.Timeouts.ServiceReady, out.ClockOffset, point)
			if err != nil {
				return fmt.Errorf("endpoint trial %d of %d: %w", i+1, endpointTrials, err)
			}
			r.Logf("endpoint trial %d: change %s (resolution %s; echo-v1 stopped answering after %s), revert %s (resolution %s), answers from neither %v", i+1,
				rd.Change.Round(10*time.Microsecond), rd.ChangeResolution.Round(10*time.Microsecond), rd.ChangeLeft.Round(10*time.Microsecond), rd.Revert.Round(10*time.Microsecond), rd.RevertResolution.Round(10*time.Microsecond), rd.Causes)
			out.Readings = append(out.Readings, rd)
		}
		return nil
	})
	return out, err
}

func versionSelector(v string) map[string]string {
	return map[string]string{fixtures.LabelApp: fixtures.CanaryName, fixtures.LabelVersion: v}
}

// endpointTrial is one trial on a watch of url from the client pod: the
// watch must first see echo-v1 answer (else the trial could not tell a
// change it made from one still under way); then, endpointSettle later,
// the Service is pointed at v2, and as soon as the watch sees v2 answer,
// back at v1. point makes a change; offset is the pod's clock minus the
// host's.
func endpointTrial(ctx context.Context, base, url string, wait, offset time.Duration, point func(context.Context, string) error) (endpointReading, error) {
	var rd endpointReading
	var changed, reverted time.Time
	host := func(c wp.Change) time.Time { return time.Unix(0, c.At).Add(-offset) }
	phase := 0
	err := probe.WatchVia(ctx, base, url, endpointAttempt, endpointSettle+2*wait, wp.MaxWatchChanges, func(c wp.Change) (bool, error) {
		v := answeringVersion(c.Answer)
		since := map[int]time.Time{1: changed, 2: reverted}[phase]
		switch {
		case phase == 0 && v == "":
			// No answer yet (a request that ran out of its bound on a
			// busy host): wait for echo-v1.
			rd.Noise++
			return false, nil
		case phase == 0:
			if v != fixtures.CanaryV1 {
				return false, fmt.Errorf("the watch began with %q answering, not %s", c.Answer, fixtures.CanaryV1Name)
			}
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(endpointSettle):
			}
			changed = time.Now()
			phase = 1
			return false, point(ctx, fixtures.CanaryV2)
		case v == "" && host(c).Before(since):
			// Lines queued while the settle ran: before the change.
			rd.Noise++
			return false, nil
		case v == "":
			rd.Neither++
			if rd.Causes == nil {
				rd.Causes = map[string]int{}
			}
			rd.Causes[c.Answer]++
			if phase == 1 && rd.ChangeLeft == 0 {
				rd.ChangeLeft = host(c).Sub(changed)
			}
			return false, nil
		case phase == 1 && v == fixtures.CanaryV2:
			rd.Change, rd.ChangeResolution = host(c).Sub(changed), time.Duration(c.At-c.Before)
			if rd.ChangeLeft == 0 {
				rd.ChangeLeft = rd.Change
			}
			reverted = time.Now()
			phase = 2
			return false, point(ctx, fixtures.CanaryV1)
		case phase == 2 && v == fixtures.CanaryV1:
			rd.Revert, rd.RevertResolution = host(c).Sub(reverted), time.Duration(c.At-c.Before)
			return true, nil
		default:
			// The old backend again after answers from neither: the
			// change has not landed yet.
			return false, nil
		}
	})
	if errors.Is(err, probe.ErrWatchEnded) {
		return rd, fmt.Errorf("no change seen within %s (phase %d): %w", wait, phase, err)
	}
	if err == nil && (rd.Change <= 0 || rd.Revert <= 0) {
		// A first new answer before the call that made the change started
		// is a clock offset beyond its estimate or a change not ours.
		return rd, fmt.Errorf("a change seen before it was made (change %s, revert %s; clock offset %s)", rd.Change, rd.Revert, offset)
	}
	return rd, err
}

// answeringVersion is the canary version whose pod answered ("" for an
// answer from neither).
func answeringVersion(answer string) string {
	switch {
	case strings.HasPrefix(answer, fixtures.CanaryV1Name+"-"):
		return fixtures.CanaryV1
	case strings.HasPrefix(answer, fixtures.CanaryV2Name+"-"):
		return fixtures.CanaryV2
	}
	return ""
}

// kubeProxyEndpointChange measures HYBRID's endpoint-change figure: the
// median time until a one-backend Service's changed endpoint answers.
func kubeProxyEndpointChange(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	return endpointMeasurement(ctx, r, "change", func(rd endpointReading) (time.Duration, time.Duration) { return rd.Change, rd.ChangeResolution })
}

// kubeProxyEndpointRevert measures HYBRID's revert figure: the median time
// until the change made right after that one (back to the first backend)
// answers.
func kubeProxyEndpointRevert(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	return endpointMeasurement(ctx, r, "revert", func(rd endpointReading) (time.Duration, time.Duration) { return rd.Revert, rd.RevertResolution })
}

func endpointMeasurement(ctx context.Context, r *spec.Run, which string, pick func(endpointReading) (time.Duration, time.Duration)) (verdict.Measurement, error) {
	tm, err := timeEndpointChanges(ctx, r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	return judgeEndpointTiming(r, tm, which, pick)
}

func judgeEndpointTiming(r *spec.Run, tm endpointTiming, which string, pick func(endpointReading) (time.Duration, time.Duration)) (verdict.Measurement, error) {
	if len(tm.Readings) == 0 {
		return verdict.Measurement{}, errors.New("no endpoint change was timed")
	}
	r.SetSetup("%d trials on a Service with one backend (%s, then %s after %s, then back right after %s answered), watched from the client pod with back-to-back requests each bounded by %s; kube-proxy %s (read from %s/%s %s); client clock %s ± %s from the host's",
		len(tm.Readings), fixtures.CanaryV1Name, fixtures.CanaryV2Name, endpointSettle, fixtures.CanaryV2Name, endpointAttempt, tm.KubeProxy,
		kubeproxymode.Namespace, kubeproxymode.ConfigMap, kubeproxymode.ConfigKey, tm.ClockOffset.Round(time.Microsecond), tm.ClockUncertainty.Round(time.Microsecond))
	secs := make([]float64, len(tm.Readings))
	extra := map[string]float64{"trials": float64(len(tm.Readings)), "clock_uncertainty_s": tm.ClockUncertainty.Seconds()}
	var worstRes time.Duration
	neither, noise := 0, 0
	left := make([]float64, len(tm.Readings))
	causes := map[string]int{}
	for i, rd := range tm.Readings {
		d, res := pick(rd)
		secs[i] = d.Seconds()
		extra[fmt.Sprintf("reading_%02d_s", i+1)] = secs[i]
		worstRes = max(worstRes, res)
		neither += rd.Neither
		noise += rd.Noise
		left[i] = rd.ChangeLeft.Seconds()
		for c, n := range rd.Causes {
			causes[c] += n
		}
	}
	for c, n := range causes {
		extra["answers_from_neither_"+c] = float64(n)
	}
	if l, err := stats.Percentile(left, 50); err == nil {
		extra["median_change_old_backend_left_s"] = l
	}
	med, err := stats.Percentile(secs, 50)
	if err != nil {
		return verdict.Measurement{}, err
	}
	extra["min_s"], extra["max_s"] = slices.Min(secs), slices.Max(secs)
	extra["resolution_max_s"] = worstRes.Seconds()
	if tm.Syncs > 0 {
		extra["kube_proxy_syncs"] = float64(tm.Syncs)
		extra["kube_proxy_mean_sync_s"] = tm.MeanSync.Seconds()
	}
	extra["answers_from_neither"] = float64(neither)
	extra["answers_from_neither_before_a_change"] = float64(noise)
	detail := fmt.Sprintf("median %s of %d %ss (each to within %s)", time.Duration(med*float64(time.Second)).Round(10*time.Microsecond), len(secs), which, worstRes.Round(10*time.Microsecond))
	if tm.Syncs > 0 {
		detail += fmt.Sprintf("; kube-proxy's own %d rule syncs meanwhile took %s each on average", tm.Syncs, tm.MeanSync.Round(time.Millisecond))
	}
	return verdict.Measurement{Value: verdict.Float64(med), Extra: extra, KubeProxyMode: tm.KubeProxy.Mode, Detail: detail}, nil
}
