package inventory_test

import (
	"context"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/inventory"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

// On a real API server: two snapshots with nothing written in between
// compare equal (the comparison is not noisy), and each kind of change a
// run could make (an object added, a foreign one written, one deleted,
// cluster-scoped or namespaced) is reported as exactly that.
func TestCompareSeesEveryKindOfChange(t *testing.T) {
	srv := apiserver.ForTest(t)
	cs := apiserver.ClientsetForTest(t)
	ctx := context.Background()
	mk := func(ns, name string) {
		t.Helper()
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "inv-foreign"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk("inv-foreign", "kept")
	mk("inv-foreign", "written")
	mk("inv-foreign", "deleted")

	before, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(before.Resources, "v1/configmaps") || !slices.Contains(before.Resources, "apiextensions.k8s.io/v1/customresourcedefinitions") {
		t.Fatalf("resource types listed: %v; want configmaps and CRDs among them", before.Resources)
	}
	again, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if d := inventory.Compare(before, again); len(d.Added)+len(d.Removed)+len(d.Changed) != 0 {
		t.Fatalf("two snapshots with no write between differ: %+v", d)
	}

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "inv-ours"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps("inv-foreign").Get(ctx, "written", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Data["k"] = "changed"
	if _, err := cs.CoreV1().ConfigMaps("inv-foreign").Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("inv-foreign").Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	d := inventory.Compare(before, after)
	has := func(objs []inventory.Object, key string) bool { return slices.Contains(inventory.Keys(objs), key) }
	// A new namespace also gets its kube-root-ca.crt ConfigMap and default
	// ServiceAccount on a cluster with controllers; envtest has none, so
	// only the namespace itself is certain.
	if !has(d.Added, "v1/namespaces /inv-ours") {
		t.Errorf("added = %v; want the new namespace", inventory.Keys(d.Added))
	}
	if got := inventory.Keys(d.Changed); !slices.Equal(got, []string{"v1/configmaps inv-foreign/written"}) {
		t.Errorf("changed = %v; want only the written ConfigMap", got)
	}
	if got := inventory.Keys(d.Removed); !slices.Equal(got, []string{"v1/configmaps inv-foreign/deleted"}) {
		t.Errorf("removed = %v; want only the deleted ConfigMap", got)
	}
	for _, o := range d.Changed {
		var names []string
		for _, w := range o.WritersSince(before.TakenAt) {
			names = append(names, w.Manager+" "+w.Operation)
		}
		// client-go's default field manager is the program's name.
		if !slices.Contains(names, "inventory.test Update") {
			t.Errorf("writers of %s since the first snapshot = %v; want this test's client (inventory.test Update)", o.Key(), names)
		}
	}
	if has(d.Changed, "v1/configmaps inv-foreign/kept") {
		t.Errorf("an untouched ConfigMap was reported changed")
	}
}
