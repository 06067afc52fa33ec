package cluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func daemonSet(images ...string) appsv1.DaemonSet {
	var ds appsv1.DaemonSet
	for _, im := range images {
		ds.Spec.Template.Spec.Containers = append(ds.Spec.Template.Spec.Containers, corev1.Container{Image: im})
	}
	return ds
}

// Only a kube-router before v2.6.1 rewrites other programs' ipsets; the
// node image's v2.1.0 is found wherever its registry is, and kind's own
// kindnetd, a fixed kube-router, or a tag that is not a version are not.
func TestIpsetRewritingKubeRouter(t *testing.T) {
	for _, c := range []struct {
		images []string
		want   string
	}{
		{[]string{"localhost/meshclaims/kube-router:v2.1.0"}, "localhost/meshclaims/kube-router:v2.1.0"},
		{[]string{"localhost:5000/cloudnativelabs/kube-router:v2.5.0@sha256:0123"}, "localhost:5000/cloudnativelabs/kube-router:v2.5.0@sha256:0123"},
		{[]string{"busybox:1.36", "docker.io/cloudnativelabs/kube-router:1.6.0"}, "docker.io/cloudnativelabs/kube-router:1.6.0"},
		// negative controls: nothing found
		{[]string{"docker.io/cloudnativelabs/kube-router:v2.6.1"}, ""},
		{[]string{"docker.io/cloudnativelabs/kube-router:v2.7.0"}, ""},
		{[]string{"docker.io/cloudnativelabs/kube-router:latest"}, ""},
		{[]string{"docker.io/cloudnativelabs/kube-router@sha256:0123"}, ""},
		{[]string{"docker.io/kindest/kindnetd:v20250512-df8de77b"}, ""},
		{[]string{"localhost:5000/not-kube-router:v2.1.0"}, ""},
	} {
		if got := ipsetRewritingKubeRouter([]appsv1.DaemonSet{daemonSet(c.images...)}); got != c.want {
			t.Errorf("%v: got %q, want %q", c.images, got, c.want)
		}
	}
}
