package netpol

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshclaims/meshclaims/fixtures"
	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
	"github.com/meshclaims/meshclaims/framework/vpccni"
)

// retroPod is a pod of the spec's echo Deployment as the API server stores
// it once scheduled: the fixture's template, with an IP.
func retroPod(t *testing.T, name, uid, ip string) *corev1.Pod {
	t.Helper()
	d := fixtures.NetpolRetroEcho(fixtures.Target{Namespace: fixtures.NetpolRetroNamespace, Run: "r1"}, fixtures.Images{Workload: "meshclaims/workload:dev"})
	tmpl := d.Spec.Template.DeepCopy()
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, UID: types.UID(uid), Labels: tmpl.Labels}, Spec: tmpl.Spec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// retroProbe is what the in-pod prober returns for url, mapped as
// probe.From maps it: a 200 from echo, a drop (the VPC CNI's eBPF and
// kube-router's DROP end in the client's timeout), a reject (refused), or a
// 503.
func retroProbe(url, how string) probe.Result {
	var r wp.Result
	switch how {
	case "200":
		r = wp.Result{URL: url, Status: 200, Connected: true, Millis: 1.2}
	case "drop":
		r = wp.Result{URL: url, Cause: "timeout", Error: "Get \"" + url + "\": dial tcp: i/o timeout", Millis: 5000}
	case "refused":
		r = wp.Result{URL: url, Cause: "refused", Error: "dial tcp: connect: connection refused", Millis: 0.4}
	case "503":
		r = wp.Result{URL: url, Status: 503, Connected: true, Millis: 1.0}
	}
	out, detail := probe.Outcome(r)
	return probe.Result{Result: r, Outcome: out, Detail: detail}
}

func TestNetPolRetroJudged(t *testing.T) {
	c := claimstest.Claim(t, "netpol.enforcement-not-retroactive")
	before := retroPod(t, "echo-6f7d9c8b5-abcde", "u-before", "192.168.14.21")
	recreated := retroPod(t, "echo-7c9d8f6b4-fghij", "u-after", "192.168.31.7")
	readings := func(old, fresh string) retroReadings {
		return retroReadings{Switch: "enforcement turned on", Before: before, Again: before, Recreated: recreated,
			Old: retroProbe(podURL(before), old), New: retroProbe(podURL(recreated), fresh)}
	}

	// GUIDE: the old pod still answers, the recreated one is blocked.
	got, err := judgeNetPolRetro(readings("200", "drop"))
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict.Judge(c, mode.None, got); got.Outcome != netpolNotRetroactive || v.Result != verdict.Reproduced {
		t.Errorf("old answers, new blocked: %s %s (%s)", got.Outcome, v.Result, v.Reason)
	}
	for _, want := range []string{before.Name + " (running before enforcement) -> 8080 http-200", recreated.Name + " (recreated by rollout restart) -> 8080 blocked", "TCP 9999 only", "recreated pod answers 200"} {
		if !strings.Contains(got.Detail, want) {
			t.Errorf("detail %q lacks %q", got.Detail, want)
		}
	}
	// Enforcement reaching the old pod (dropped or rejected) contradicts
	// the claim: the detector fires.
	for _, old := range []string{"drop", "refused"} {
		got, err := judgeNetPolRetro(readings(old, "drop"))
		if err != nil {
			t.Fatal(err)
		}
		if v := verdict.Judge(c, mode.None, got); got.Outcome != NetpolRetroactive || v.Result != verdict.NotReproduced || !strings.Contains(got.Detail, "-> 8080 blocked") {
			t.Errorf("old %s: %s %s %s", old, got.Outcome, v.Result, got.Detail)
		}
	}

	// Invalid measurements: each fails, never passes, and says what it saw.
	errs := map[string]error{}
	_, errs["enforcement never took effect"] = judgeNetPolRetro(readings("200", "200"))
	_, errs["enforcement never took effect, so the old pod's answer"] = judgeNetPolRetro(readings("drop", "200"))
	broken := readings("200", "drop")
	broken.Restored = errors.New("not within 1m30s; last: client -> http://192.168.31.7:8080/: blocked")
	_, errs["its block cannot be told from a broken pod"] = judgeNetPolRetro(broken)
	replaced := readings("200", "drop")
	replaced.Again = retroPod(t, before.Name, "u-other", before.Status.PodIP)
	_, errs["was replaced (UID u-before, then u-other)"] = judgeNetPolRetro(replaced)
	_, errs["the recreated pod got http-503 under the policy"] = judgeNetPolRetro(readings("200", "503"))
	_, errs["the pod that ran before enforcement got http-503"] = judgeNetPolRetro(readings("503", "drop"))
	for want, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "-> 8080") {
			t.Errorf("want an error with %q and the readings, got %v", want, err)
		}
	}
}

// The need is met only on the VPC CNI with its agent off and a switch
// given; the local provider, another CNI, an agent-less aws-node or a
// cluster already enforcing leave the claim inconclusive with the reason.
func TestNeedNetPolSwitch(t *testing.T) {
	path := filepath.Join("..", "..", "framework", "vpccni", "testdata", "aws-node.yaml")
	off, err := vpccni.FixtureDaemonSet(path, false)
	if err != nil {
		t.Fatal(err)
	}
	on, err := vpccni.FixtureDaemonSet(path, true)
	if err != nil {
		t.Fatal(err)
	}
	noAgent := off.DeepCopy()
	noAgent.Spec.Template.Spec.Containers = noAgent.Spec.Template.Spec.Containers[:1]
	check := func(provider, command string, objs ...runtime.Object) error {
		cfg := &config.Config{Provider: provider, NetPolEnableCommand: command}
		cs := fake.NewSimpleClientset(objs...)
		env := &spec.Env{Config: cfg, Cluster: &spec.Cluster{Kube: &kube.Cluster{Client: cs}}}
		r := spec.NewRun(claimstest.Claim(t, "netpol.enforcement-not-retroactive"), mode.None, env, nil)
		return NeedNetPolSwitch.Check(context.Background(), r)
	}
	if !NeedNetPolSwitch.Layer {
		t.Fatal("not a layer need: an unmet switch would fail the claim instead of leaving it inconclusive")
	}
	if err := check("existing", "aws eks update-addon ...", off); err != nil {
		t.Errorf("VPC CNI off with a command: %v", err)
	}
	for want, err := range map[string]error{
		"local provider's kube-router enforces NetworkPolicy from the start": check("local", ""),
		"no VPC CNI DaemonSet kube-system/aws-node":                          check("existing", "aws eks update-addon ..."),
		"no network policy agent container aws-eks-nodeagent":                check("existing", "aws eks update-addon ...", noAgent),
		"already enforces NetworkPolicy":                                     check("existing", "aws eks update-addon ...", on),
		"has no -netpol-enable-command":                                      check("existing", "", off),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want unmet with %q, got %v", want, err)
		}
	}
}

// The command switch: it refuses a cluster already enforcing (nothing
// could be shown), names a failing command with its output, and after a
// command that succeeds returns only once aws-node's template enforces and
// every node runs it (here the "add-on update" is played by writing the
// DaemonSet the way the add-on manager would, then its status).
func TestCommandSwitch(t *testing.T) {
	path := filepath.Join("..", "..", "framework", "vpccni", "testdata", "aws-node.yaml")
	ds := func(enforcing bool, updated int32) *appsv1.DaemonSet {
		d, err := vpccni.FixtureDaemonSet(path, enforcing)
		if err != nil {
			t.Fatal(err)
		}
		d.Generation, d.Status = 1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, NumberAvailable: 3, UpdatedNumberScheduled: updated}
		return d
	}
	run := func(cs *fake.Clientset, command string) *spec.Run {
		cfg := &config.Config{Provider: "existing", NetPolEnableCommand: command, Timeouts: config.DefaultTimeouts()}
		cfg.Timeouts.ConvergePoll = 10 * time.Millisecond
		env := &spec.Env{Config: cfg, Cluster: &spec.Cluster{Kube: &kube.Cluster{Client: cs}}}
		return spec.NewRun(claimstest.Claim(t, "netpol.enforcement-not-retroactive"), mode.None, env, nil)
	}
	ctx := context.Background()

	if _, err := commandSwitch("true")(ctx, run(fake.NewSimpleClientset(ds(true, 3)), "true")); err == nil || !strings.Contains(err.Error(), "already enforced") {
		t.Errorf("already enforcing: %v", err)
	}
	if _, err := commandSwitch("echo AccessDeniedException >&2; exit 3")(ctx, run(fake.NewSimpleClientset(ds(false, 3)), "x")); err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "AccessDeniedException") {
		t.Errorf("failing command: %v", err)
	}

	cs := fake.NewSimpleClientset(ds(false, 3))
	dss := cs.AppsV1().DaemonSets(vpccni.Namespace)
	// The add-on update: the template switched first (one node still
	// runs the old pod), every node updated later.
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = dss.Update(ctx, ds(true, 2), metav1.UpdateOptions{})
		time.Sleep(100 * time.Millisecond)
		_, _ = dss.Update(ctx, ds(true, 3), metav1.UpdateOptions{})
	}()
	r := run(cs, "true")
	said, err := commandSwitch("echo update-addon requested")(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := vpccni.Read(ctx, cs); err != nil || !st.Enforcing || !st.RolledOut {
		t.Fatalf("returned before aws-node enforced on every node: %+v, %v", st, err)
	}
	if !strings.Contains(said, "before kube-system/aws-node") || !strings.Contains(said, "--enable-network-policy=false") || !strings.Contains(said, "--enable-network-policy=true") || len(r.Waits()) != 1 {
		t.Errorf("switch said %q, waits %+v", said, r.Waits())
	}
}
