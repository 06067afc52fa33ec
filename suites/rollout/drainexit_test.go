package rollout

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// deleted is the last state of a deleted echo pod as the kubelet writes it
// before the API server removes the pod: deletionTimestamp = delete time +
// grace (30 s default), deletionGracePeriodSeconds, and terminated states
// with 1 s resolution; istio-proxy as a native sidecar (init container
// status) after echo, which the kubelet stops first.
func deleted(name string, del time.Time, proxyAfter time.Duration) *corev1.Pod {
	grace := int64(30)
	at := metav1.NewTime(del.Add(30 * time.Second))
	term := func(after time.Duration, code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Completed",
			StartedAt: metav1.NewTime(del.Add(-time.Hour)), FinishedAt: metav1.NewTime(del.Add(after).Truncate(time.Second))}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: &at, DeletionGracePeriodSeconds: &grace},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodSucceeded,
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "echo", State: term(time.Second, 0)}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "istio-init", State: term(-time.Hour+time.Second, 0)}, {Name: steps.ProxyContainer, State: term(proxyAfter, 0)}},
		},
	}
}

func TestProxyExit(t *testing.T) {
	c := claimstest.Claim(t, "rollout.sidecar-exit-on-zero")
	del := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	cases := []struct {
		name  string
		after time.Duration
		want  verdict.Result
	}{
		{"idle proxy exits after minDrainDuration", 6 * time.Second, verdict.Reproduced},
		// Negative controls: the whole 30 s drain, or killed at the grace
		// period, is what a proxy without exit-on-zero does.
		{"the whole drain", 30 * time.Second, verdict.NotReproduced},
		{"half-way", 21 * time.Second, verdict.NotReproduced},
	}
	for _, k := range cases {
		e, err := proxyExitOf(deleted("echo-5f7c9d8b6-q8w2n", del, k.after))
		if err != nil {
			t.Fatal(err)
		}
		got := judgeProxyExit(e)
		if v := verdict.Judge(c, mode.Sidecar, got); v.Result != k.want {
			t.Errorf("%s: %s (%s), want %s", k.name, v.Result, v.Reason, k.want)
		}
		if got.Extra["proxy_exit_s"] != k.after.Seconds() {
			t.Errorf("%s: exit %v s, want %v", k.name, got.Extra["proxy_exit_s"], k.after.Seconds())
		}
	}
	// Broken measurements: a pod not being deleted, a proxy still running,
	// no proxy at all.
	live := deleted("echo-a", del, time.Second)
	live.DeletionTimestamp = nil
	running := deleted("echo-b", del, time.Second)
	running.Status.InitContainerStatuses[1].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	plain := deleted("echo-c", del, time.Second)
	plain.Status.InitContainerStatuses = plain.Status.InitContainerStatuses[:1]
	for pod, want := range map[*corev1.Pod]string{live: "not being deleted", running: "has not terminated", plain: "not injected"} {
		if _, err := proxyExitOf(pod); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), pod.Name) {
			t.Errorf("%s: %v, want %q", pod.Name, err, want)
		}
	}
}
