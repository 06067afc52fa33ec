package vpccni

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

func awsNode(t *testing.T, enforcing bool) *appsv1.DaemonSet {
	t.Helper()
	ds, err := FixtureDaemonSet(filepath.Join("testdata", "aws-node.yaml"), enforcing)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// The agent's flag as its pflag parser reads it: last wins, bare is true,
// absent is the default false; a value that is no bool is an error naming
// it and the accepted forms.
func TestEnforcingFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--enable-ipv6=false"}, false},
		{[]string{"--enable-network-policy=true"}, true},
		{[]string{"--enable-network-policy=false"}, false},
		{[]string{"--enable-network-policy"}, true},
		{[]string{"--enable-network-policy=true", "--enable-network-policy=false"}, false},
		{[]string{"--enable-network-policy-controller=true"}, false}, // another flag's prefix
	} {
		got, _, err := enforcing(c.args)
		if err != nil || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.args, got, err, c.want)
		}
	}
	if _, _, err := enforcing([]string{"--enable-network-policy=yes"}); err == nil || !strings.Contains(err.Error(), `"--enable-network-policy=yes"`) || !strings.Contains(err.Error(), "accepted: --enable-network-policy=true") {
		t.Errorf("bad value: %v", err)
	}
}

// Against a real API server: no DaemonSet is ErrNotVPCCNI; the release
// manifest's DaemonSet reads as not enforcing; switched on (a new
// generation) it reads as enforcing but not rolled out until the status
// says every node runs the new template; aws-node without the agent is
// ErrNoAgent.
func TestReadOnARealAPIServer(t *testing.T) {
	c := apiserver.ClientsetForTest(t)
	ctx := context.Background()
	dss := c.AppsV1().DaemonSets(Namespace)
	del := func() { _ = dss.Delete(ctx, DaemonSet, metav1.DeleteOptions{}) }
	t.Cleanup(del)
	del()

	if _, err := Read(ctx, c); !errors.Is(err, ErrNotVPCCNI) {
		t.Fatalf("no DaemonSet: %v; want ErrNotVPCCNI", err)
	}
	created, err := dss.Create(ctx, awsNode(t, false), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setStatus := func(ds *appsv1.DaemonSet, observed int64, desired, updated, available int32) *appsv1.DaemonSet {
		t.Helper()
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: observed, DesiredNumberScheduled: desired, CurrentNumberScheduled: desired,
			NumberReady: available, NumberAvailable: available, UpdatedNumberScheduled: updated}
		out, err := dss.UpdateStatus(ctx, ds, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	off := setStatus(created, created.Generation, 3, 3, 3)
	st, err := Read(ctx, c)
	if err != nil || st.Enforcing || !st.RolledOut || !strings.Contains(st.Seen, "--enable-network-policy=false") {
		t.Fatalf("release manifest: %+v, %v; want not enforcing, rolled out", st, err)
	}
	on := awsNode(t, true)
	off.Spec = on.Spec
	switched, err := dss.Update(ctx, off, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if switched.Generation <= created.Generation {
		t.Fatalf("a template change kept generation %d", switched.Generation)
	}
	// The controller has not seen it yet, then it has but one node still
	// runs the old pod: enforcing in the template, not on every node.
	switched = setStatus(switched, created.Generation, 3, 3, 3)
	if st, err := Read(ctx, c); err != nil || !st.Enforcing || st.RolledOut {
		t.Errorf("switched, not observed: %+v, %v", st, err)
	}
	switched = setStatus(switched, switched.Generation, 3, 2, 3)
	if st, err := Read(ctx, c); err != nil || !st.Enforcing || st.RolledOut {
		t.Errorf("switched, 2 of 3 updated: %+v, %v", st, err)
	}
	switched = setStatus(switched, switched.Generation, 3, 3, 3)
	if st, err := Read(ctx, c); err != nil || !st.Enforcing || !st.RolledOut || !strings.Contains(st.Seen, "3 of 3 nodes updated") {
		t.Errorf("switched, rolled out: %+v, %v", st, err)
	}

	noAgent := switched.DeepCopy()
	noAgent.Spec.Template.Spec.Containers = noAgent.Spec.Template.Spec.Containers[:1]
	if _, err := dss.Update(ctx, noAgent, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, c); !errors.Is(err, ErrNoAgent) || errors.Is(err, ErrNotVPCCNI) {
		t.Errorf("no agent: %v; want ErrNoAgent", err)
	}
}

// policyEndpoint is a PolicyEndpoint as the controller writes it for
// NetworkPolicy ns/policy (manager.go newPolicyEndpoint: generateName
// <policy>-, owned by the policy, policyRef naming it), listing pods.
func policyEndpoint(ns, policy, name string, pods map[string]string) *unstructured.Unstructured {
	var eps []any
	for pod, ip := range pods {
		eps = append(eps, map[string]any{"hostIP": "192.168.40.12", "podIP": ip, "name": pod, "namespace": ns})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.aws/v1alpha1", "kind": "PolicyEndpoint",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"podSelector":          map[string]any{"matchLabels": map[string]any{"app": "echo"}},
			"policyRef":            map[string]any{"name": policy, "namespace": ns},
			"podIsolation":         []any{"Ingress"},
			"podSelectorEndpoints": eps,
			"ingress":              []any{map[string]any{"cidr": "0.0.0.0/0", "ports": []any{map[string]any{"protocol": "TCP", "port": int64(9999)}}}},
		},
	}}
}

// Against a real API server with the PolicyEndpoint CRD: the IPs of every
// PolicyEndpoint naming the policy, none of another policy's; none at all
// before the controller wrote one; and an error on a cluster without the
// CRD (a negative control: not "no pods").
func TestPolicyPodsOnARealAPIServer(t *testing.T) {
	srv := apiserver.NewForTestWith(t, apiserver.Options{ExtraCRDPaths: []string{filepath.Join("testdata", "policyendpoints-crd.yaml")}})
	c, err := client.New(srv.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "meshclaims-netpol-retro"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if ips, err := PolicyPods(ctx, c, ns, "echo-port-9999-only"); err != nil || len(ips) != 0 {
		t.Fatalf("before the controller: %v, %v", ips, err)
	}
	for _, pe := range []*unstructured.Unstructured{
		policyEndpoint(ns, "echo-port-9999-only", "echo-port-9999-only-x7k2p", map[string]string{"echo-6f7d9c8b5-abcde": "192.168.14.21"}),
		policyEndpoint(ns, "echo-port-9999-only", "echo-port-9999-only-q9m4t", map[string]string{"echo-7c9d8f6b4-fghij": "192.168.31.7"}),
		policyEndpoint(ns, "another", "another-b8s3d", map[string]string{"client-5d4c9b7f6-zzzzz": "192.168.2.9"}),
	} {
		if err := c.Create(ctx, pe); err != nil {
			t.Fatal(err)
		}
	}
	ips, err := PolicyPods(ctx, c, ns, "echo-port-9999-only")
	if err != nil || strings.Join(ips, ",") != "192.168.14.21,192.168.31.7" {
		t.Fatalf("got %v, %v", ips, err)
	}

	bare, err := client.New(apiserver.ForTest(t).Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PolicyPods(ctx, bare, ns, "echo-port-9999-only"); err == nil || !strings.Contains(err.Error(), "listing PolicyEndpoints") {
		t.Errorf("no CRD: %v; want an error", err)
	}
}
