package steps

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// ServiceTrials is how many Services are timed at each scale.
const ServiceTrials = 5

// readinessAttempt bounds each attempt while waiting for a new Service. It
// must be short: an attempt made before kube-proxy wrote the rules has its
// SYN dropped, and with the general probe timeout (seconds) every reading
// would be quantized to that timeout instead of the 20 ms polling step.
const readinessAttempt = 200 * time.Millisecond

// ServiceReadiness measures HYBRID's kube-proxy claim: time from creating a
// Service for echo until a request to its ClusterIP is answered, first with
// no extra Services, then with N extra (N = 10,000 x -duration-scale, at
// least 100). Value is the median with none and At the median with N: the
// verdict judges the growth between them (at HYBRID's 10,000 only).
func ServiceReadiness(ctx context.Context, r *spec.Run) (verdict.Measured, error) {
	m, err := Of(r)
	if err != nil {
		return verdict.Measured{}, err
	}
	t := Target(r)
	extra := max(100, int(10000*r.Env.Config.DurationScale))
	r.SetSetup("%d Services timed with 0 and with %d extra Services (documented: 0 and 10,000)", ServiceTrials, extra)
	quiet, err := timeServices(ctx, r, t, "svc-quiet")
	if err != nil {
		return verdict.Measured{}, err
	}
	r.Logf("creating %d extra Services", extra)
	var made []*corev1.Service
	for i := 0; i < extra; i++ {
		s := fixtures.WorkloadService(t, fmt.Sprintf("filler-%05d", i), fixtures.EchoHTTPPort)
		s.Spec.Selector = map[string]string{fixtures.LabelApp: "nothing-selects-this"}
		if err := m.Applier.Apply(ctx, s); err != nil {
			return verdict.Measured{}, err
		}
		made = append(made, s)
		if (i+1)%500 == 0 {
			r.Logf("%d/%d extra Services", i+1, extra)
		}
	}
	defer func() {
		for _, s := range made {
			m.Applier.Client().Delete(context.WithoutCancel(ctx), s)
		}
	}()
	loaded, err := timeServices(ctx, r, t, "svc-loaded")
	if err != nil {
		return verdict.Measured{}, err
	}
	q, err := stats.Percentile(quiet, 50)
	if err != nil {
		return verdict.Measured{}, err
	}
	l, err := stats.Percentile(loaded, 50)
	if err != nil {
		return verdict.Measured{}, err
	}
	return verdict.Measured{Value: verdict.Float64(q), At: &claims.AtScale{Services: int64(extra), Value: l}, Extra: map[string]float64{
		"median_s_with_0": q, fmt.Sprintf("median_s_with_%d", extra): l, "extra_services": float64(extra),
	}}, nil
}

// timeServices creates ServiceTrials Services for echo, one after another,
// and measures how long each takes to answer on its ClusterIP. The client's
// port-forward is opened first and the polling runs inside the client pod, so
// the time is create call + in-pod wait, with no port-forward set-up in it.
func timeServices(ctx context.Context, r *spec.Run, t fixtures.Target, prefix string) ([]float64, error) {
	m, err := Of(r)
	if err != nil {
		return nil, err
	}
	var out []float64
	err = probe.Forward(ctx, m.K, InMesh(r), func(base string) error {
		for i := 0; i < ServiceTrials; i++ {
			s := fixtures.WorkloadService(t, fmt.Sprintf("%s-%d", prefix, i), fixtures.EchoHTTPPort)
			s.Spec.Selector = map[string]string{fixtures.LabelApp: fixtures.EchoName}
			start := time.Now()
			if err := m.Applier.Apply(ctx, s); err != nil {
				return err
			}
			created := time.Now()
			got, err := m.K.Client.CoreV1().Services(t.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			url := fmt.Sprintf("http://%s:%d/", got.Spec.ClusterIP, fixtures.EchoHTTPPort)
			res, err := probe.UntilVia(ctx, base, url, 200, r.Env.Config.Timeouts.ServiceReady, readinessAttempt)
			if err != nil {
				return err
			}
			if res.Status != 200 {
				return fmt.Errorf("Service %s (%s) did not answer 200 within %s: last %s %s", s.Name, url, r.Env.Config.Timeouts.ServiceReady, res.Outcome, res.Detail)
			}
			d := created.Sub(start).Seconds() + res.WaitedMs/1000
			out = append(out, d)
			r.Logf("Service %s answered after %.2fs (%d attempts)", s.Name, d, res.Attempts)
			if err := m.Applier.Client().Delete(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
