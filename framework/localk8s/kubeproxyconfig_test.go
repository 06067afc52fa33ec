package localk8s

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/kubeproxymode"
)

// On a real API server: before publishing, the reader finds nothing (the
// state the kube-proxy claims' need treats as unmet); after, it reads the mode of
// the file the local kube-proxy runs, and publishing again (a restart on
// kept state) replaces the ConfigMap instead of failing.
func TestPublishKubeProxyConfigOnARealAPIServer(t *testing.T) {
	cs := apiserver.ClientsetForTest(t)
	ctx := context.Background()
	del := func() {
		_ = cs.CoreV1().ConfigMaps(kubeproxymode.Namespace).Delete(ctx, kubeproxymode.ConfigMap, metav1.DeleteOptions{})
	}
	del()
	t.Cleanup(del)
	if _, err := kubeproxymode.Read(ctx, cs); err == nil {
		t.Fatal("negative control: a mode was read before anything was published")
	}
	files, err := ConfigFiles(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := PublishKubeProxyConfig(ctx, cs, files["kube-proxy.yaml"]); err != nil {
			t.Fatalf("publish #%d: %v", i+1, err)
		}
	}
	if m, err := kubeproxymode.Read(ctx, cs); err != nil || m != claims.KubeProxyIPTables {
		t.Errorf("mode read back: %q, %v; want iptables", m, err)
	}
	if set, err := kubeproxymode.ReadSettings(ctx, cs); err != nil || set.PublishedBy != kubeproxymode.LocalPublisher || !strings.Contains(set.String(), "host-process kube-proxy with kind's settings") {
		t.Errorf("settings read back: %v, %v", set, err)
	}
	cm, err := cs.CoreV1().ConfigMaps(kubeproxymode.Namespace).Get(ctx, kubeproxymode.ConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data[kubeproxymode.ConfigKey]; got != string(files["kube-proxy.yaml"]) {
		t.Errorf("published config.conf differs from kube-proxy.yaml:\n%s", got)
	}
}
