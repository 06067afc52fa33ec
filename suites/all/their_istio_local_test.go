package all

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/fixtures/workload/orderclient"
	"github.com/meshclaims/meshclaims/framework/converge"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/setup/setuptest"
)

// Someone's Istio on the cluster a release qualification runs on, as a
// platform team's cluster has it: Istio's base and istiod charts installed
// with Helm as the default revision, with values of their own, from images
// in their own repository of the private registry; a namespace of theirs
// with injection on, a server and a client calling it five times a second
// through their sidecars for as long as the qualification runs.
const (
	theirNamespace  = "team-mesh"
	theirServer     = "ledger-api"
	theirClient     = "ledger-client"
	theirClientPort = 8090
	theirRate       = 5
	// theirRepo is where their images live in the registry; the run
	// pushes its own at the registry's top level.
	theirRepo = "platform-istio"
)

// theirValues are their own choices, which no run may change: an access
// log, a small istiod, small sidecars.
func theirValues() map[string]any {
	return map[string]any{
		"autoscaleEnabled": false,
		"replicaCount":     1,
		"resources":        map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "200Mi"}},
		"meshConfig":       map[string]any{"accessLogFile": "/dev/stdout"},
		"global":           map[string]any{"proxy": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "64Mi"}}}},
	}
}

type theirIstio struct {
	rc   *rest.Config
	cs   kubernetes.Interface
	kube *kube.Cluster
	// opts are their istiod's image options (the values their release
	// was installed with come from them and theirValues).
	opts istio.Options
}

// seedTheirIstio installs their Istio and workload and waits until their
// client's calls succeed (the positive control that their traffic flows).
func seedTheirIstio(t testing.TB, rc *rest.Config, reg *privateregistry.Registry) *theirIstio {
	t.Helper()
	ctx := context.Background()
	t.Setenv("DOCKER_CONFIG", reg.DockerConfigDir)
	tr, err := images.TransportWithCA(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	push := images.PushOptions{Transport: tr}
	archives, charts := setuptest.IstioImages(t)
	version := setuptest.IstioVersion(t)
	hub := reg.Host + "/" + theirRepo
	tars, err := filepath.Glob(filepath.Join(archives, "*.tar"))
	if err != nil || len(tars) == 0 {
		t.Fatalf("no Istio archives in %s", archives)
	}
	for _, tar := range tars {
		arch, err := images.ReadArchive(tar)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arch {
			ref := a.Refs[0]
			if _, err := images.Push(ctx, a.Image, hub+"/"+ref[strings.LastIndex(ref, "/")+1:], push); err != nil {
				t.Fatal(err)
			}
		}
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Build(ctx, images.Spec{MainPackage: "./fixtures/workload", Dir: root,
		ImageConfig: images.ImageConfig{GOARCH: runtime.GOARCH, Version: "their-1", Source: "github.com/meshclaims/meshclaims"}})
	if err != nil {
		t.Fatal(err)
	}
	workload, err := images.Push(ctx, img.Image, hub+"/ledger:1", push)
	if err != nil {
		t.Fatal(err)
	}

	th := &theirIstio{rc: rc, cs: kubernetes.NewForConfigOrDie(rc),
		opts: istio.Options{Profile: istio.ProfileDefault, Version: version, Hub: hub, Tag: version, ExactImages: true, Proxy: istio.ProxyUpstreamEnvoy, Charts: istio.ChartSource{Dir: charts}}}
	th.kube, err = kube.New(rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := istio.HelmConfiguration(rc, istio.DefaultNamespace, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []istio.Chart{istio.ChartBase, istio.ChartIstiod} {
		ch, err := th.opts.Charts.Load(c, version)
		if err != nil {
			t.Fatal(err)
		}
		var user map[string]any
		if c == istio.ChartIstiod {
			user = theirValues()
		}
		in := action.NewInstall(hc)
		in.ReleaseName, in.Namespace, in.CreateNamespace = c.Release(), istio.DefaultNamespace, true
		in.Wait, in.Timeout = true, 5*time.Minute
		start := time.Now()
		if _, err := in.RunWithContext(ctx, ch, istio.Values(c, th.opts, user)); err != nil {
			t.Fatalf("their Istio: installing %s: %v", c, err)
		}
		t.Logf("their Istio: %s installed as %s in %v", c, c.Release(), time.Since(start).Round(time.Second))
	}

	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	small := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}
	dep := func(name string, args []string, port int) *appsv1.Deployment {
		one := int32(1)
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(name)},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(name)}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: name, Image: workload.String(), ImagePullPolicy: corev1.PullIfNotPresent, Args: args,
						Ports: []corev1.ContainerPort{{ContainerPort: int32(port)}}, Resources: small,
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(port)}}}}}}}}}
	}
	steps := []func() error{
		func() error {
			_, err := th.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: theirNamespace,
				Labels: map[string]string{"istio-injection": "enabled", "team": "ledger"}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := th.cs.CoreV1().Services(theirNamespace).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: theirServer},
				Spec: corev1.ServiceSpec{Selector: labels(theirServer), Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := th.cs.AppsV1().Deployments(theirNamespace).Create(ctx, dep(theirServer, []string{"echo", "-http-port=8080", "-grpc-port=0", "-tcp-port=0"}, 8080), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := th.cs.AppsV1().Deployments(theirNamespace).Create(ctx, dep(theirClient, []string{"order-client", fmt.Sprintf("-http-port=%d", theirClientPort),
				fmt.Sprintf("-target=http://%s:8080/", theirServer), fmt.Sprintf("-rate=%d", theirRate), "-timeout=3s"}, theirClientPort), metav1.CreateOptions{})
			return err
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("their workload: %v", err)
		}
	}
	if err := th.kube.WaitAvailable(ctx, theirNamespace, 5*time.Minute, theirServer, theirClient); err != nil {
		t.Fatalf("their workload: %v", err)
	}
	pods, err := th.cs.CoreV1().Pods(theirNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		// istio-proxy is a native sidecar: an init container that keeps running.
		injected := false
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			injected = injected || c.Name == "istio-proxy"
		}
		if !injected {
			t.Fatalf("their pod %s has no istio-proxy: their injection is off", p.Name)
		}
	}
	if _, err := converge.Until(ctx, converge.Policy{Poll: time.Second, Times: 1, Limit: 2 * time.Minute}, "their client's calls succeed",
		func(ctx context.Context) (bool, string, error) {
			st, err := th.clientStats(ctx)
			if err != nil {
				return false, "", err
			}
			return st.Succeeded >= 10, fmt.Sprintf("%d sent, %d succeeded, %d failed", st.Sent, st.Succeeded, st.Failed), nil
		}); err != nil {
		t.Fatal(err)
	}
	th.awaitSettled(t)
	return th
}

// awaitSettled waits until two snapshots of their Istio taken 5 s apart
// are the same (2 min at most). Their istiod patches its webhooks, takes
// its leader-election leases and writes its root certificate into every
// namespace for a while after it starts, later on a busy machine; a
// snapshot taken before that ends would read their istiod's own start-up
// as a change the run made.
func (th *theirIstio) awaitSettled(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	prev := th.snapshot(t)
	for {
		time.Sleep(5 * time.Second)
		cur := th.snapshot(t)
		d := diffTheirState(prev, cur)
		if len(d) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("their Istio did not settle in 2 min; still changing: %v", d)
		}
		t.Logf("their Istio still starting: %v", d)
		prev = cur
	}
}

// clientStats reads their client's counters through a port-forward.
func (th *theirIstio) clientStats(ctx context.Context) (orderclient.Stats, error) {
	var st orderclient.Stats
	pods, err := th.kube.ReadyPods(ctx, theirNamespace, "app="+theirClient)
	if err != nil || len(pods) == 0 {
		return st, fmt.Errorf("their client's pod: %v (%d ready)", err, len(pods))
	}
	addr, stop, err := th.kube.PortForward(ctx, theirNamespace, pods[0].Name, theirClientPort)
	if err != nil {
		return st, err
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(raw, &st)
}

// theirState is what must not change of their Istio and workload: each
// release's Helm revision, values and manifest; every webhook
// configuration (without the CA bundle their istiod keeps current); their
// Deployments' specs; every namespace's labels; their pods and restarts.
type theirState map[string]string

func digest(v any) string {
	raw, _ := json.Marshal(v)
	return fmt.Sprintf("%x", sha256.Sum256(raw))[:16]
}

func (th *theirIstio) snapshot(t testing.TB) theirState {
	t.Helper()
	ctx := context.Background()
	st := theirState{}
	hc, err := istio.HelmConfiguration(th.rc, istio.DefaultNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	rels, err := action.NewList(hc).Run()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		st["helm release "+r.Name] = fmt.Sprintf("revision %d, chart %s %s, values %s, manifest %s",
			r.Version, r.Chart.Metadata.Name, r.Chart.Metadata.Version, digest(r.Config), digest(r.Manifest))
	}
	mw, err := th.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range mw.Items {
		for i := range w.Webhooks {
			w.Webhooks[i].ClientConfig.CABundle = nil
		}
		st["MutatingWebhookConfiguration "+w.Name] = digest([]any{w.Labels, w.Webhooks})
	}
	vw, err := th.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range vw.Items {
		for i := range w.Webhooks {
			w.Webhooks[i].ClientConfig.CABundle = nil
		}
		st["ValidatingWebhookConfiguration "+w.Name] = digest([]any{w.Labels, w.Webhooks})
	}
	for _, ns := range []string{istio.DefaultNamespace, theirNamespace} {
		deps, err := th.cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range deps.Items {
			st["Deployment "+ns+"/"+d.Name] = fmt.Sprintf("generation %d, spec %s", d.Generation, digest(d.Spec))
		}
		pods, err := th.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			restarts := int32(0)
			for _, c := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
				restarts += c.RestartCount
			}
			st["Pod "+ns+"/"+p.Name] = fmt.Sprintf("uid %s, restarts %d", p.UID, restarts)
		}
	}
	// Leases by existence: their holders renew them all the time, and the
	// run's revision must leave none of its own.
	leases, err := th.cs.CoordinationV1().Leases(istio.DefaultNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		st["Lease "+istio.DefaultNamespace+"/"+l.Name] = "exists"
	}
	nss, err := th.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nss.Items {
		if strings.HasPrefix(n.Name, "meshclaims-") {
			continue // the run's own, gone after it
		}
		st["Namespace "+n.Name] = "labels " + digest(n.Labels)
	}
	return st
}

// diffTheirState lists what differs between two snapshots.
func diffTheirState(before, after theirState) []string {
	var out []string
	for k, v := range before {
		switch w, ok := after[k]; {
		case !ok:
			out = append(out, k+": gone (was "+v+")")
		case w != v:
			out = append(out, k+": "+v+" -> "+w)
		}
	}
	for k, w := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k+": added ("+w+")")
		}
	}
	sort.Strings(out)
	return out
}

// clientProblems says what is wrong with their client's record since
// before: any failed call, or no call at all.
func clientProblems(before, after orderclient.Stats) []string {
	var out []string
	if after.Sent < before.Sent || after.Succeeded <= before.Succeeded {
		out = append(out, fmt.Sprintf("their client made no successful call during the run (sent %d -> %d, succeeded %d -> %d): restarted or stopped", before.Sent, after.Sent, before.Succeeded, after.Succeeded))
	}
	if after.Failed != before.Failed {
		out = append(out, fmt.Sprintf("their client saw %d failed calls during the run (%s)", after.Failed-before.Failed, causesSince(before, after)))
	}
	return out
}

// placeFailures names each of their client's failures since before with
// what the runs were doing at that moment: the last stamped line ("15:04:05
// spec 3 of 45: ...") the runs printed at or before it, from console, which
// holds everything the runs printed. A failure is then traced to a spec or
// a set-up phase, not only counted.
func placeFailures(before, after orderclient.Stats, console string) []string {
	seen := map[string]bool{}
	for _, f := range before.RecentFailures {
		seen[f.RequestID] = true
	}
	type line struct{ at, text string }
	var lines []line
	for _, l := range strings.Split(console, "\n") {
		l = strings.TrimSpace(l)
		if len(l) > 9 && l[2] == ':' && l[5] == ':' && l[8] == ' ' {
			if _, err := time.Parse("15:04:05", l[:8]); err == nil {
				lines = append(lines, line{l[:8], l[9:]})
			}
		}
	}
	var out []string
	for _, f := range after.RecentFailures {
		if seen[f.RequestID] {
			continue
		}
		at := f.At.Local().Format("15:04:05")
		doing := "before the runs' first line"
		for _, l := range lines {
			if l.at <= at {
				doing = l.at + " " + l.text
			}
		}
		out = append(out, fmt.Sprintf("%s %s (%s), during: %s", at, f.Cause, f.Error, doing))
	}
	return out
}

// causesSince is the failures by cause added between two readings of the
// client's cumulative counters, e.g. "status_503 2".
func causesSince(before, after orderclient.Stats) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(after.FailuresByCause)) {
		if n := after.FailuresByCause[c] - before.FailuresByCause[c]; n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// theirWrite says whether a change the inventory found on a foreign object
// was their own istiod's doing (same field manager as the run's istiod,
// pilot-discovery): the leader-election locks it holds, renewed every few
// seconds in its namespace, and the root certificate it keeps in every
// namespace, whose content must then be the one it was.
func (th *theirIstio) theirWrite(ctx context.Context, o inventory.Object, rootCerts map[string]string) (bool, string) {
	if o.Resource != "v1/configmaps" {
		return false, ""
	}
	cm, err := th.cs.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return false, ""
	}
	if o.Name == "istio-ca-root-cert" {
		if before, ok := rootCerts[o.Namespace]; ok && before == digest(cm.Data) {
			return true, "their istiod's root certificate, content unchanged"
		}
		return false, ""
	}
	if holder := istio.LockHolder(cm.Annotations); o.Namespace == istio.DefaultNamespace &&
		strings.HasPrefix(holder, "istiod-") && !strings.HasPrefix(holder, "istiod-"+existingRevision+"-") {
		return true, "a leader-election lock held by their istiod (" + holder + ")"
	}
	return false, ""
}

// rootCerts are the istio-ca-root-cert ConfigMaps' contents by namespace.
func (th *theirIstio) rootCerts(t testing.TB) map[string]string {
	t.Helper()
	l, err := th.cs.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=istio-ca-root-cert"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range l.Items {
		out[c.Namespace] = digest(c.Data)
	}
	return out
}

// existingRevision is the revision the qualification installs beside theirs.
const existingRevision = "qual"

// negativeControls make each check of their Istio fire, at the end of the
// test (they change their Istio): their server's pod deleted (a pod that
// restarted), their server scaled to nothing (failed calls), and the
// upgrade the suite used to make of a release that was not its own (their
// istiod's values and revision changed).
func (th *theirIstio) negativeControls(t testing.TB, before theirState) {
	t.Helper()
	ctx := context.Background()
	stats, err := th.clientStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := th.cs.CoreV1().Pods(theirNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + theirServer})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("their server's pod: %v", err)
	}
	if err := th.cs.CoreV1().Pods(theirNamespace).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := diffTheirState(before, th.snapshot(t)); len(d) == 0 {
		t.Errorf("negative control: a deleted pod of theirs is not seen")
	} else {
		t.Logf("negative control, their server's pod deleted: %v", d)
	}
	zero := int32(0)
	scale, err := th.cs.AppsV1().Deployments(theirNamespace).GetScale(ctx, theirServer, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = zero
	if _, err := th.cs.AppsV1().Deployments(theirNamespace).UpdateScale(ctx, theirServer, scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var after orderclient.Stats
	if _, err := converge.Until(ctx, converge.Policy{Poll: time.Second, Times: 1, Limit: time.Minute}, "their client sees failures with no server",
		func(ctx context.Context) (bool, string, error) {
			after, err = th.clientStats(ctx)
			return err == nil && after.Failed > stats.Failed, fmt.Sprintf("%d failed", after.Failed), err
		}); err != nil {
		t.Errorf("negative control: %v", err)
	}
	if p := clientProblems(stats, after); len(p) == 0 {
		t.Errorf("negative control: failed calls are not seen (%+v)", after)
	} else {
		t.Logf("negative control, their server scaled to 0: %v", p)
	}
	// The old path: Helm upgrade of their release with the suite's values
	// and no reuse of theirs.
	hc, err := istio.HelmConfiguration(th.rc, istio.DefaultNamespace, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := th.opts.Charts.Load(istio.ChartIstiod, th.opts.Version)
	if err != nil {
		t.Fatal(err)
	}
	up := action.NewUpgrade(hc)
	up.Namespace, up.TakeOwnership = istio.DefaultNamespace, true
	if _, err := up.RunWithContext(ctx, istio.ChartIstiod.Release(), ch, istio.Values(istio.ChartIstiod, th.opts, nil)); err != nil {
		t.Fatal(err)
	}
	d := diffTheirState(before, th.snapshot(t))
	found := false
	for _, l := range d {
		found = found || strings.HasPrefix(l, "helm release istiod: revision 1")
	}
	if !found {
		t.Errorf("negative control: the upgrade of their istiod release is not seen: %v", d)
	} else {
		t.Logf("negative control, the old upgrade path: %v", d)
	}
}

// TestClientProblemsCountOnlyTheRun reads two cumulative records of their
// client: failures from before the first reading are not the run's; each
// kind of problem is named with the run's own count.
func TestClientProblemsCountOnlyTheRun(t *testing.T) {
	before := orderclient.Stats{Sent: 63, Succeeded: 60, Failed: 3, FailuresByCause: map[string]int64{"status_503": 3}}
	quiet := orderclient.Stats{Sent: 4444, Succeeded: 4441, Failed: 3, FailuresByCause: map[string]int64{"status_503": 3}}
	if p := clientProblems(before, quiet); len(p) != 0 {
		t.Errorf("a run during which every call answered: %v", p)
	}
	failed := orderclient.Stats{Sent: 4444, Succeeded: 4438, Failed: 6, FailuresByCause: map[string]int64{"status_503": 5, "timeout": 1}}
	p := clientProblems(before, failed)
	if len(p) != 1 || !strings.Contains(p[0], "3 failed calls during the run (status_503 2, timeout 1)") {
		t.Errorf("three failures during the run: %v", p)
	}
	failed.RecentFailures = []orderclient.Failure{{RequestID: "a", Cause: "timeout", At: time.Date(2026, 12, 7, 9, 44, 2, 0, time.Local), Error: "context deadline exceeded"}}
	console := "  09:43:58 spec 9 of 45: kubeproxy.service-scale [none] time until ...\n  [kubeproxy.service-scale none +3s] filled 500 Services\n  09:44:03 spec 10 of 45: conntrack.table-full [none]\n"
	if got := placeFailures(before, failed, console); len(got) != 1 || got[0] != "09:44:02 timeout (context deadline exceeded), during: 09:43:58 spec 9 of 45: kubeproxy.service-scale [none] time until ..." {
		t.Errorf("a failure placed in the runs' lines: %q", got)
	}
	before.RecentFailures = failed.RecentFailures
	if got := placeFailures(before, failed, console); len(got) != 0 {
		t.Errorf("a failure from before the run is not the run's: %q", got)
	}
	stopped := orderclient.Stats{Sent: 63, Succeeded: 60, Failed: 3, FailuresByCause: map[string]int64{"status_503": 3}}
	if p := clientProblems(before, stopped); len(p) != 1 || !strings.Contains(p[0], "no successful call") {
		t.Errorf("a client that stopped: %v", p)
	}
}
