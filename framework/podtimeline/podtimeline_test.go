package podtimeline

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func pod(name, ip string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "echo"}}}
	p.Status.PodIP = ip
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

// A rollout as the API server tells it: an old pod listed at the start, a
// new one added and becoming ready, the old one terminating, then deleted.
func TestRecorderFollowsARollout(t *testing.T) {
	c := fake.NewSimpleClientset(pod("echo-old", "198.18.0.23", true))
	fw := watch.NewFake()
	c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, fw, nil })
	r, err := Watch(context.Background(), c, "ns", "app=echo")
	if err != nil {
		t.Fatal(err)
	}
	// A clock a minute after the listing, one second per event.
	base := time.Now().Add(time.Minute).Truncate(time.Second)
	clock := base
	r.mu.Lock()
	r.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	r.mu.Unlock()
	// FakeWatcher's channel is unbuffered: each call returns once the
	// recorder has taken the event.
	fw.Add(pod("echo-new", "", false))               // 14:00:01 seen, no IP yet
	fw.Modify(pod("echo-new", "198.18.0.31", false)) // :02 IP
	fw.Modify(pod("echo-new", "198.18.0.31", true))  // :03 ready
	old := pod("echo-old", "198.18.0.23", true)
	now := metav1.NewTime(clock)
	old.DeletionTimestamp = &now
	fw.Modify(old)                 // :04 terminating
	fw.Delete(old)                 // :05 gone
	fw.Modify(&corev1.ConfigMap{}) // not a pod: ignored
	tl, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Pods) != 2 || tl.Pods[0].Name != "echo-old" || tl.Pods[1].Name != "echo-new" {
		t.Fatalf("pods %+v", tl.Pods)
	}
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	o, n := tl.Pods[0], tl.Pods[1]
	if !o.Deleting.Equal(at(4)) || !o.Gone.Equal(at(5)) || o.Ready.IsZero() || !n.IPAt.Equal(at(2)) || !n.Ready.Equal(at(3)) || !n.Deleting.IsZero() {
		t.Fatalf("old %+v\nnew %+v", o, n)
	}
	for _, c := range []struct {
		ip   string
		t    time.Time
		want string
	}{
		{"198.18.0.23", at(3), Live},
		{"198.18.0.23", at(4), Terminating},
		{"198.18.0.23", at(6), Gone},
		{"198.18.0.31", at(1), Unknown}, // before it had the IP
		{"198.18.0.31", at(9), Live},
		{"198.18.0.99", at(9), Unknown},
	} {
		if got := tl.At(c.ip, c.t); got != c.want {
			t.Errorf("At(%s, %s) = %q, want %q", c.ip, c.t.Format("15:04:05"), got, c.want)
		}
	}
}

// An address reused by a new pod means the new pod from the time it has it.
func TestAtTakesTheLatestHolderOfAnAddress(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	tl := Timeline{Pods: []Pod{
		{Name: "a", IP: "198.18.0.40", IPAt: t0, Deleting: t0.Add(10 * time.Second), Gone: t0.Add(20 * time.Second)},
		{Name: "b", IP: "198.18.0.40", IPAt: t0.Add(30 * time.Second)},
	}}
	for s, want := range map[int]string{15: Terminating, 25: Gone, 31: Live} {
		if got := tl.At("198.18.0.40", t0.Add(time.Duration(s)*time.Second)); got != want {
			t.Errorf("at +%ds: %q, want %q", s, got, want)
		}
	}
}

func TestWatchNamesMissingArguments(t *testing.T) {
	if _, err := Watch(context.Background(), fake.NewSimpleClientset(), "ns", ""); err == nil {
		t.Fatal("accepted an empty selector")
	}
}

var _ runtime.Object = (*corev1.Pod)(nil)
