package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/load"
	"github.com/meshclaims/meshclaims/framework/localk8s"
)

// A log longer than the kubelet's rotation size, on a real kubelet: echo
// logs every request (-loglevel=verbose, one line of about 300 bytes), a
// fortio load from another pod sends 18,000 of them, and the kubelet
// rotates at 1Mi (the cluster's ContainerLogMaxSize; 10Mi by default,
// which a sidecar's access log at GUIDE's 100 qps passes within minutes).
// The log followed from before the load holds a line for every request
// fortio counted; the negative control, the same log read after the load
// as PodLogs reads it, holds only the current file's share, showing the
// rotation happened and what it costs a reader that does not follow.
func TestFollowedLogOutlivesRotation(t *testing.T) {
	if os.Getenv("MESHCLAIMS_LOCAL") != "1" {
		t.Skip("set MESHCLAIMS_LOCAL=1 (and run as root) to start a real local cluster on this host")
	}
	if os.Geteuid() != 0 {
		t.Skip("the local cluster needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	k, err := localk8s.New(localk8s.Config{Name: "follow-log", ContainerLogMaxSize: "1Mi"})
	if err != nil {
		t.Fatal(err)
	}
	k.Logf = t.Logf
	t.Cleanup(func() {
		if err := k.Delete(context.Background()); err != nil {
			t.Errorf("deleting the local cluster: %v", err)
		}
	})
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	img, err := images.Build(ctx, images.Spec{MainPackage: "./fixtures/workload", Dir: k.Config().RepoRoot, ImageConfig: images.ImageConfig{Version: "follow"}})
	if err != nil {
		t.Fatal(err)
	}
	ref := images.ImageRef("workload", "follow")
	tar := filepath.Join(t.TempDir(), "workload.tar")
	if err := images.WriteTarball(img.Image, ref, tar); err != nil {
		t.Fatal(err)
	}
	if err := k.LoadImage(ctx, tar); err != nil {
		t.Fatal(err)
	}
	kc, err := kube.New(k.RESTConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := kc.Client
	const ns = "follow-log"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no default ServiceAccount in %s: %v", ns, err)
		}
	}
	for app, args := range map[string][]string{
		"echo":   {"echo", "-http-port=8080", "-grpc-port=0", "-tcp-port=0", "-loglevel=verbose"},
		"client": {"client", "-http-port=8080", "-grpc-port=0", "-tcp-port=0"},
	} {
		labels := map[string]string{"app": app}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: app, Image: ref, ImagePullPolicy: corev1.PullNever, Args: args,
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/fortio/", Port: intstr.FromInt32(8080)}}},
				}}}}}}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kc.WaitAvailable(ctx, ns, 3*time.Minute, "echo", "client"); err != nil {
		t.Fatal(err)
	}
	echoPod, err := kc.OneReadyPod(ctx, ns, "app=echo")
	if err != nil {
		t.Fatal(err)
	}
	clientPod, err := kc.OneReadyPod(ctx, ns, "app=client")
	if err != nil {
		t.Fatal(err)
	}

	src := load.PodLogs{Client: cs, Namespace: ns, Pod: echoPod.Name, Container: "echo"}
	start := time.Now()
	followed, err := src.Follow(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	defer followed.Stop()

	// The load: fortio in the client pod, through its REST API.
	const connections = 8
	marker := fmt.Sprintf("follow-marker=%d", start.UnixNano())
	addr, stop, err := kc.PortForward(ctx, ns, clientPod.Name, 8080)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	q := url.Values{"url": {"http://echo." + ns + ":8080/?" + marker}, "qps": {"1500"}, "t": {"12s"}, "c": {fmt.Sprint(connections)}}
	resp, err := http.Get("http://" + addr + "/fortio/rest/run?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		RetCodes map[string]int64
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("fortio's answer: %v: %.300s", err, raw)
	}
	sent := res.RetCodes["200"]
	if sent < 10000 {
		t.Fatalf("the load answered %d requests with 200 (%v): too few to pass the rotation size", sent, res.RetCodes)
	}

	count := func(text string) int64 { return int64(strings.Count(text, marker)) }
	var got int64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		text, err := followed.Logs(ctx, start, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got = count(text); got >= sent || time.Now().After(deadline) {
			break
		}
	}
	// fortio also sends one warm-up request per connection, which it does
	// not count.
	if got < sent || got > sent+connections {
		t.Errorf("the followed log holds %d lines for the %d requests fortio counted (and up to %d warm-ups)", got, sent, connections)
	}
	after, err := src.Logs(ctx, start, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	late := count(after)
	t.Logf("fortio counted %d requests; the followed log holds %d lines of them (%d lines in all), the log read after the load %d", sent, got, followed.Lines(), late)
	if late >= sent {
		t.Errorf("negative control: the log read after the load holds all %d requests: the kubelet did not rotate it, so this test shows nothing", sent)
	}
}
