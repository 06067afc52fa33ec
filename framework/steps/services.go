package steps

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// ServiceTrials is how many Services are timed at each scale.
const ServiceTrials = 5

// ServiceReadiness measures HYBRID's kube-proxy claim: time from creating a
// Service for echo until a request to its ClusterIP is answered, first with
// no extra Services, then with N extra (N = 10,000 x -duration-scale, at
// least 100). Value is the median with none; the median with N is recorded.
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
	return verdict.Measured{Value: verdict.Float64(median(quiet)), Extra: map[string]float64{
		"median_s_with_0": median(quiet), fmt.Sprintf("median_s_with_%d", extra): median(loaded), "extra_services": float64(extra),
	}}, nil
}

func timeServices(ctx context.Context, r *spec.Run, t fixtures.Target, prefix string) ([]float64, error) {
	m, _ := Of(r)
	var out []float64
	for i := 0; i < ServiceTrials; i++ {
		s := fixtures.WorkloadService(t, fmt.Sprintf("%s-%d", prefix, i), fixtures.EchoHTTPPort)
		s.Spec.Selector = map[string]string{fixtures.LabelApp: fixtures.EchoName}
		start := time.Now()
		if err := m.Applier.Apply(ctx, s); err != nil {
			return nil, err
		}
		got, err := m.K.Client.CoreV1().Services(t.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		url := fmt.Sprintf("http://%s:%d/", got.Spec.ClusterIP, fixtures.EchoHTTPPort)
		deadline := start.Add(r.Env.Config.Timeouts.ServiceReady)
		for {
			res, err := Probe(ctx, r, InMesh(r), url)
			if err == nil && res.Outcome == "http-200" {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("Service %s (%s) did not answer within %s", s.Name, url, r.Env.Config.Timeouts.ServiceReady)
			}
			time.Sleep(50 * time.Millisecond)
		}
		d := time.Since(start).Seconds()
		out = append(out, d)
		r.Logf("Service %s answered after %.2fs", s.Name, d)
		m.Applier.Client().Delete(ctx, s)
	}
	return out, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
