package deployment_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/rollout/deployment"
)

var _ rollout.Driver = (*deployment.Driver)(nil)

func dep(gen, observed int64, replicas int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
	st.ObservedGeneration = observed
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ns", Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status:     st,
	}
}

func TestStatusFollowsKubectlRolloutStatus(t *testing.T) {
	full := appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 6}
	cases := []struct {
		name string
		d    *appsv1.Deployment
		done bool
		msg  string
	}{
		{"spec not observed", dep(3, 2, 6, full), false, "observe generation 3"},
		{"updating", dep(3, 3, 6, appsv1.DeploymentStatus{Replicas: 7, UpdatedReplicas: 2, ReadyReplicas: 6, AvailableReplicas: 6}), false, "2 out of 6 new replicas have been updated"},
		{"old pending", dep(3, 3, 6, appsv1.DeploymentStatus{Replicas: 8, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 6}), false, "2 old replicas are pending termination"},
		{"not ready", dep(3, 3, 6, appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 5, AvailableReplicas: 5}), false, "5 of 6 updated replicas are ready"},
		{"not available", dep(3, 3, 6, appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 4}), false, "4 of 6 updated replicas are available"},
		{"complete", dep(3, 3, 6, full), true, "successfully rolled out"},
	}
	for _, c := range cases {
		done, msg, err := deployment.Status(c.d)
		if err != nil || done != c.done || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: Status = %v %q %v, want %v %q", c.name, done, msg, err, c.done, c.msg)
		}
	}
	stuck := dep(3, 3, 6, full)
	stuck.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet echo-1 has timed out progressing."}}
	if _, _, err := deployment.Status(stuck); err == nil || !strings.Contains(err.Error(), "progress deadline") {
		t.Errorf("ProgressDeadlineExceeded: err %v", err)
	}
}

func TestRestartPatchesRestartedAtAndNeverRepeatsAStamp(t *testing.T) {
	cs := fake.NewClientset(dep(1, 1, 2, appsv1.DeploymentStatus{}))
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	calls := 0
	d, err := deployment.New(cs, "ns", "echo")
	if err != nil {
		t.Fatal(err)
	}
	// The clock stays in one second for the first three readings.
	d.Now = func() time.Time {
		calls++
		if calls <= 3 {
			return t0
		}
		return t0.Add(time.Second)
	}
	get := func() string {
		got, err := cs.AppsV1().Deployments("ns").Get(context.Background(), "echo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Spec.Template.Annotations[deployment.RestartedAtAnnotation]
	}
	if err := d.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := get(); got != "2026-05-01T10:00:00Z" {
		t.Fatalf("annotation %q", got)
	}
	if err := d.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := get(); got != "2026-05-01T10:00:01Z" {
		t.Fatalf("second restart in the same second: annotation %q, want the next second", got)
	}
	if _, err := deployment.New(nil, "ns", "echo"); err == nil {
		t.Error("New(nil client) accepted")
	}
}

func TestWaitCompleteFollowsTheController(t *testing.T) {
	cs := fake.NewClientset(dep(2, 1, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 0, ReadyReplicas: 3, AvailableReplicas: 3}))
	d, _ := deployment.New(cs, "ns", "echo")
	d.Poll = 50 * time.Millisecond
	steps := []appsv1.DeploymentStatus{
		{Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3},
		{Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 4, AvailableReplicas: 4},
		{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}, // complete
	}
	lastWrite := make(chan time.Time, 1)
	go func() {
		for _, st := range steps {
			time.Sleep(100 * time.Millisecond)
			st.ObservedGeneration = 2
			obj := dep(2, 2, 3, st)
			if _, err := cs.AppsV1().Deployments("ns").UpdateStatus(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		}
		lastWrite <- time.Now()
	}()
	if err := d.WaitComplete(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	if lw := <-lastWrite; returned.Before(lw) {
		t.Errorf("WaitComplete returned at %v, before the final status was written at %v", returned, lw)
	}
}

func TestWaitCompleteTimesOutSayingWhatIsPending(t *testing.T) {
	cs := fake.NewClientset(dep(2, 2, 3, appsv1.DeploymentStatus{Replicas: 5, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}))
	d, _ := deployment.New(cs, "ns", "echo")
	d.Poll = 50 * time.Millisecond
	err := d.WaitComplete(context.Background(), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "2 old replicas are pending termination") || !strings.Contains(err.Error(), "ns/echo") {
		t.Errorf("err = %v", err)
	}
}
