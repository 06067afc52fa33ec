package steps

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshclaims/meshclaims/framework/rollout"
)

// NewDeploymentDriver is the Kubernetes rollout driver for one Deployment;
// every restart is a write and passes the cluster guard first.
func NewDeploymentDriver(m *Mesh, ns, name string) rollout.Driver {
	return &deploymentDriver{m: m, ns: ns, name: name}
}

type deploymentDriver struct {
	m        *Mesh
	ns, name string
}

// Restart is `kubectl rollout restart`: a new restartedAt annotation on the
// pod template.
func (d *deploymentDriver) Restart(ctx context.Context) error {
	if err := d.m.K.CheckWrite(ctx); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	_, err := d.m.K.Client.AppsV1().Deployments(d.ns).Patch(ctx, d.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "meshclaims"})
	return err
}

// WaitComplete is `kubectl rollout status --timeout`.
func (d *deploymentDriver) WaitComplete(ctx context.Context, timeout time.Duration) error {
	return d.m.K.WaitAvailable(ctx, d.ns, timeout, d.name)
}
