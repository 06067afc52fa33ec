package steps

import (
	"context"
	"time"

	"github.com/meshclaims/meshclaims/framework/rollout"
	"github.com/meshclaims/meshclaims/framework/rollout/deployment"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// NewDeploymentDriver is the Kubernetes rollout driver for one Deployment
// (framework/rollout/deployment), with the cluster guard asked before every
// restart: each restart is a write.
func NewDeploymentDriver(m *spec.Cluster, ns, name string) (rollout.Driver, error) {
	d, err := deployment.New(m.Kube.Client, ns, name)
	if err != nil {
		return nil, err
	}
	return guardedDriver{d: d, m: m}, nil
}

type guardedDriver struct {
	d rollout.Driver
	m *spec.Cluster
}

func (g guardedDriver) Restart(ctx context.Context) error {
	if err := g.m.Kube.CheckWrite(ctx); err != nil {
		return err
	}
	return g.d.Restart(ctx)
}

func (g guardedDriver) WaitComplete(ctx context.Context, timeout time.Duration) error {
	return g.d.WaitComplete(ctx, timeout)
}
