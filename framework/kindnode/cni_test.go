package kindnode

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	yaml3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestCNIManifest checks what kind's install-CNI step relies on: the
// patch marker (kind then adds CONTROL_PLANE_ENDPOINT to the first
// container's env, a JSON patch that fails if that container has no env
// list) and a DaemonSet whose images are the preloaded kube-router, never
// pulled, with the endpoint in its --master flag.
func TestCNIManifest(t *testing.T) {
	m := CNIManifest()
	if !strings.HasPrefix(string(m), "# would you kindly patch this file") {
		t.Error("no kind patch marker at the top")
	}
	dec := yaml3.NewDecoder(bytes.NewReader(m))
	var ds *appsv1.DaemonSet
	kinds := map[string]bool{}
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := doc["kind"].(string)
		kinds[kind] = true
		if kind == "DaemonSet" {
			b, err := yaml3.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			ds = &appsv1.DaemonSet{}
			if err := yaml.UnmarshalStrict(b, ds); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"} {
		if !kinds[k] {
			t.Errorf("no %s in the manifest", k)
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet")
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) == 0 || spec.Containers[0].Env == nil {
		t.Fatal("the first container has no env list for kind's CONTROL_PLANE_ENDPOINT patch")
	}
	if !strings.Contains(strings.Join(spec.Containers[0].Args, " "), "--master=https://$(CONTROL_PLANE_ENDPOINT)") {
		t.Errorf("kube-router args %v do not use CONTROL_PLANE_ENDPOINT", spec.Containers[0].Args)
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.Image != KubeRouterImage || c.ImagePullPolicy != "Never" {
			t.Errorf("container %s: image %s pull %s; want the preloaded %s, never pulled", c.Name, c.Image, c.ImagePullPolicy, KubeRouterImage)
		}
	}
	if !spec.HostNetwork {
		t.Error("kube-router must run in the node's network namespace")
	}
}
