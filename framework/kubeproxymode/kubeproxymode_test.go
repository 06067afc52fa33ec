package kubeproxymode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/claims"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

// kubeadmConfigMap is testdata/kube-proxy-configmap.yaml, kubeadm's
// kube-proxy ConfigMap, with mode set to mode ("" leaves it empty, as
// kubeadm does unless told otherwise).
func kubeadmConfigMap(t *testing.T, mode string) *corev1.ConfigMap {
	t.Helper()
	cm, err := FixtureConfigMap(filepath.Join("testdata", "kube-proxy-configmap.yaml"), mode)
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// The reader against a real API server: kubeadm's ConfigMap in each mode
// gives that mode, an empty mode gives kube-proxy's Linux default; no
// ConfigMap is ErrNotPublished (an unmet need, not a mode); an unknown mode
// and a ConfigMap without config.conf are errors naming what was found.
func TestReadOnARealAPIServer(t *testing.T) {
	c := apiserver.ClientsetForTest(t)
	ctx := context.Background()
	put := func(cm *corev1.ConfigMap) {
		t.Helper()
		_ = c.CoreV1().ConfigMaps(Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		if _, err := c.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	del := func() { _ = c.CoreV1().ConfigMaps(Namespace).Delete(ctx, ConfigMap, metav1.DeleteOptions{}) }
	t.Cleanup(del)

	// Negative control first: nothing published.
	del()
	if m, err := Read(ctx, c); !errors.Is(err, ErrNotPublished) || m != "" {
		t.Errorf("no ConfigMap: mode %q, error %v; want ErrNotPublished", m, err)
	}
	for mode, want := range map[string]claims.KubeProxyMode{
		"iptables": claims.KubeProxyIPTables, "ipvs": claims.KubeProxyIPVS, "nftables": claims.KubeProxyNFTables,
		"": claims.KubeProxyIPTables,
	} {
		put(kubeadmConfigMap(t, mode))
		got, err := Read(ctx, c)
		if err != nil || got != want {
			t.Errorf("mode %q: got %q, %v; want %q", mode, got, err, want)
		}
	}
	put(kubeadmConfigMap(t, "kernelspace"))
	if _, err := Read(ctx, c); err == nil || !strings.Contains(err.Error(), `mode "kernelspace"`) || !strings.Contains(err.Error(), "accepted: iptables, ipvs, nftables") {
		t.Errorf("unknown mode: %v; want an error naming it and the accepted modes", err)
	}
	cm := kubeadmConfigMap(t, "ipvs")
	delete(cm.Data, ConfigKey)
	put(cm)
	if _, err := Read(ctx, c); err == nil || errors.Is(err, ErrNotPublished) || !strings.Contains(err.Error(), "has no key config.conf (keys: kubeconfig.conf)") {
		t.Errorf("no config.conf: %v", err)
	}
}

func TestParseRefusesOtherDocuments(t *testing.T) {
	for raw, want := range map[string]string{
		"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n": `kind "KubeletConfiguration"`,
		"mode: ipvs\n": `apiVersion "" kind ""`,
		"mode: [":      "kube-proxy config.conf",
	} {
		if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want an error containing %q", raw, err, want)
		}
	}
}

// kind's kube-proxy (kubeadm's fixture): iptables says minSyncPeriod 1s
// itself; nftables and ipvs leave it 0s, which kube-proxy defaults (1s for
// nftables, none for ipvs). A value that is no duration is an error naming it.
func TestParseSettingsOfKindsKubeProxy(t *testing.T) {
	for mode, want := range map[string]Settings{
		"iptables": {Mode: claims.KubeProxyIPTables, MinSyncPeriod: time.Second},
		"nftables": {Mode: claims.KubeProxyNFTables, MinSyncPeriod: time.Second, MinSyncDefaulted: true},
		"ipvs":     {Mode: claims.KubeProxyIPVS, MinSyncPeriod: 0, MinSyncDefaulted: true},
	} {
		got, err := ParseSettings(kubeadmConfigMap(t, mode).Data[ConfigKey])
		if err != nil || got != want {
			t.Errorf("mode %s: %+v, %v; want %+v", mode, got, err, want)
		}
	}
	raw := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\niptables:\n  minSyncPeriod: soon\n"
	if _, err := ParseSettings(raw); err == nil || !strings.Contains(err.Error(), `iptables.minSyncPeriod "soon"`) {
		t.Errorf("bad minSyncPeriod: %v", err)
	}
	if s := (Settings{Mode: claims.KubeProxyNFTables, MinSyncPeriod: time.Second, MinSyncDefaulted: true}).String(); s != "mode nftables, minSyncPeriod 1s (kube-proxy's default)" {
		t.Errorf("String() = %q", s)
	}
}
