package evidence

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/kube"
)

// Against a real API server: events and each container's log are written
// (envtest runs no kubelet, so the pod's log is empty but still requested).
func TestCollectEventsAndLogs(t *testing.T) {
	srv := apiserver.ForTest(t)
	k, err := kube.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "evidence-test"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "echo.1", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "echo-abc", Namespace: ns},
		Reason:         "Killing", Message: "Stopping container echo", Type: "Normal",
		LastTimestamp: metav1.NewTime(time.Now()),
	}
	if _, err := k.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-abc", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo", Image: "meshclaims/workload:dev"}}}}
	if _, err := k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	files, err := Collect(ctx, k, filepath.Join(base, "evidence", "x"), base, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join("evidence", "x", ns+"__echo-abc__echo.log"), filepath.Join("evidence", "x", ns+"__events.txt")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files = %v, want %v", files, want)
	}
	b, _ := os.ReadFile(filepath.Join(base, files[1]))
	if !strings.Contains(string(b), "Pod/echo-abc Killing: Stopping container echo") {
		t.Fatalf("events file:\n%s", b)
	}
}

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }
