package cluster

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

type guardKey struct{}
type providerKey struct{}

// Setup is the env.Func that starts p, pins its REST config into the
// environment's config and stores a Guard in the context (GuardFrom).
//
// It deliberately does not use e2e-framework's envfuncs.CreateCluster: that
// sets only cfg.WithKubeconfigFile, and envconf.Config.Client() then builds
// a new client from the kubeconfig file on every call, re-reading it, which
// is exactly the drift this package exists to prevent. Here cfg gets one
// client built from the pinned REST config, so cfg.Client() never reads the
// kubeconfig.
func Setup(p Provider) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if err := p.Start(ctx); err != nil {
			return ctx, err
		}
		rc := p.RESTConfig()
		client, err := klient.New(rc)
		if err != nil {
			return ctx, fmt.Errorf("client for %s: %w", rc.Host, err)
		}
		sel := p.KubeConfig()
		guard, err := NewGuard(ctx, rc, sel)
		if err != nil {
			return ctx, err
		}
		cfg.WithClient(client)
		// The file path is informational (e.g. for tools a user runs);
		// cfg.Client() returns the pinned client set above.
		cfg.WithKubeconfigFile(sel.Path)
		if sel.Context != "" {
			cfg.WithKubeContext(sel.Context)
		}
		ctx = context.WithValue(ctx, guardKey{}, guard)
		ctx = context.WithValue(ctx, providerKey{}, p)
		return ctx, nil
	}
}

// Finish is the env.Func that exports logs into logDir when failed reports
// the run failed (logDir "" skips it), then deletes the cluster unless keep.
func Finish(p Provider, logDir string, failed func() bool, keep bool) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		var errs []error
		if logDir != "" && failed != nil && failed() {
			if err := p.ExportLogs(ctx, logDir); err != nil {
				errs = append(errs, fmt.Errorf("exporting logs to %s: %w", logDir, err))
			}
		}
		if !keep {
			if err := p.Delete(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		return ctx, errors.Join(errs...)
	}
}

// GuardFrom returns the Guard Setup stored in ctx.
func GuardFrom(ctx context.Context) (*Guard, bool) {
	g, ok := ctx.Value(guardKey{}).(*Guard)
	return g, ok
}

// ProviderFrom returns the Provider Setup stored in ctx.
func ProviderFrom(ctx context.Context) (Provider, bool) {
	p, ok := ctx.Value(providerKey{}).(Provider)
	return p, ok
}
