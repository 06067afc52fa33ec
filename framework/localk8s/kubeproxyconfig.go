package localk8s

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/kubeproxymode"
)

// PublishKubeProxyConfig stores the KubeProxyConfiguration the host-process
// kube-proxy runs from (conf, the very bytes of its --config file) where
// kubeadm stores its kube-proxy's: ConfigMap kube-system/kube-proxy, key
// config.conf. Claims documented per kube-proxy mode read the mode from
// there (framework/kubeproxymode), on kind and here alike; publishing the
// file that runs, not a description of it, keeps the two from drifting.
// An existing ConfigMap (a restart on kept state) is replaced.
func PublishKubeProxyConfig(ctx context.Context, cs kubernetes.Interface, conf []byte) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      kubeproxymode.ConfigMap,
			Namespace: kubeproxymode.Namespace,
			Labels:    map[string]string{"app": "kube-proxy", kubeproxymode.PublisherLabel: kubeproxymode.LocalPublisher},
		},
		Data: map[string]string{kubeproxymode.ConfigKey: string(conf)},
	}
	_, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cs.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("localk8s: publishing kube-proxy's configuration as ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}
