// Package setup is the suite's before-all and after-all: bring up (or attach
// to) the cluster, pin it, build and load the workload image, install Istio in
// the profile the selected modes need, deploy every selected mode's namespace
// plus the no-mesh baseline and the client outside the mesh, and afterwards
// rebuild the report, clean up and delete what the run created.
package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/cleanup"
	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/steps"
)

// WorkloadVersion tags the workload image; the digest, not the tag, proves
// which build ran (it is recorded in the report's environment).
const WorkloadVersion = "dev"

// Suite is one run's set-up.
type Suite struct {
	Cfg      *config.Config
	Registry *claims.Registry
	Results  *report.Dir
	Provider cluster.Provider
	Env      *spec.Env
	Mesh     *steps.Mesh
	cleaner  *cleanup.Cleaner
	guard    *cluster.Guard
	envInfo  report.Environment
	out      io.Writer
}

// Modes are the namespaces a run deploys: the selected modes plus the
// no-mesh baseline the overhead claims measure against.
func Modes(selected []mode.Mode) []mode.Mode {
	out := []mode.Mode{mode.None}
	for _, m := range selected {
		if m != mode.None {
			out = append(out, m)
		}
	}
	return out
}

// Results creates the run's results directory and records where it runs;
// it is called before anything touches a cluster, so even a failed set-up
// leaves a report saying why.
func Results(cfg *config.Config, reg *claims.Registry) (*report.Dir, report.Environment, error) {
	d, err := report.Create(cfg.ResultsDir)
	if err != nil {
		return nil, report.Environment{}, err
	}
	env := report.Environment{
		RunID: cfg.RunID, Started: time.Now().UTC(), Provider: cfg.Provider, Cluster: cfg.ClusterName,
		Istio: istioLabel(cfg), Fortio: "1.75.3 (library, in the workload image)", Modes: cfg.Modes,
		DurationScale: cfg.DurationScale, Repeats: cfg.Repeats, Registry: reg.File,
	}
	if cfg.DurationScale != 1 {
		env.Notes = append(env.Notes, fmt.Sprintf("Durations scaled by %g from the documented setups.", cfg.DurationScale))
	}
	return d, env, d.SaveEnvironment(env)
}

// Up runs the before-all. On error the caller still calls Down, which
// removes whatever was created.
func Up(ctx context.Context, cfg *config.Config, reg *claims.Registry, out io.Writer) (*Suite, error) {
	s := &Suite{Cfg: cfg, Registry: reg, out: out}
	var err error
	if s.Results, s.envInfo, err = Results(cfg, reg); err != nil {
		return s, err
	}
	s.logf("results: %s", cfg.ResultsDir)
	if err := checkZtunnelImage(cfg); err != nil {
		return s, err
	}

	// 1. The cluster, pinned once. cluster.Setup is e2e-framework's env.Func.
	s.Provider, err = cluster.New(cfg.Provider, cluster.Options{
		ClusterName: cfg.ClusterName, Reuse: cfg.ReuseCluster,
		Kubeconfig: cluster.KubeconfigSelector{Path: cfg.Kubeconfig, Context: cfg.Context},
	})
	if err != nil {
		return s, err
	}
	s.logf("cluster: starting provider %s", cfg.Provider)
	ctx, err = cluster.Setup(s.Provider)(ctx, envconf.New())
	if err != nil {
		return s, fmt.Errorf("provider %s: %w", cfg.Provider, err)
	}
	guard, _ := cluster.GuardFrom(ctx)
	rc := s.Provider.RESTConfig()
	k, err := kube.New(rc, guard)
	if err != nil {
		return s, err
	}
	applier, err := apply.New(rc, guard)
	if err != nil {
		return s, err
	}
	s.cleaner, err = cleanup.New(rc, cleanup.Options{Run: cfg.RunID, Guard: guard, Timeout: cfg.Timeouts.Cleanup})
	if err != nil {
		return s, err
	}
	s.envInfo.Cluster = rc.Host
	if d, ok := s.Provider.(cluster.Describer); ok {
		s.envInfo.Notes = append(s.envInfo.Notes, d.Describe())
	}
	s.envInfo.Kubernetes = k.ServerVersion()
	s.logf("cluster: %s, Kubernetes %s, pinned (%s)", rc.Host, s.envInfo.Kubernetes, guard.Pinned())

	// 2. The workload image, built here and loaded into the nodes (or pushed).
	arch, err := nodeArch(ctx, k)
	if err != nil {
		return s, err
	}
	img, err := s.image(ctx, arch)
	if err != nil {
		return s, err
	}
	opts := fixtures.Options{Run: cfg.RunID, Images: img}
	s.Mesh = &steps.Mesh{K: k, Applier: applier, Options: opts}
	s.guard = guard
	if err := s.loadArchives(ctx); err != nil {
		return s, err
	}

	// 3. Istio, in the one profile that serves every selected mode.
	if p, ok, err := istio.ProfileForModes(cfg.Modes); err != nil {
		return s, err
	} else if ok {
		if err := s.checkSidecarImage(cfg.Modes); err != nil {
			return s, err
		}
		if err := s.InstallIstio(ctx, p); err != nil {
			return s, err
		}
	}

	// 4. Workloads: every mode's namespace, the baseline and the outside client.
	var objs []client.Object
	for _, m := range Modes(cfg.Modes) {
		set, err := fixtures.ForMode(m, opts)
		if err != nil {
			return s, err
		}
		objs = append(objs, set...)
	}
	outside, err := fixtures.OutsideSet(opts)
	if err != nil {
		return s, err
	}
	objs = append(objs, outside...)
	s.logf("workloads: applying %d objects", len(objs))
	if err := applier.Apply(ctx, objs...); err != nil {
		return s, err
	}
	for _, o := range objs {
		if _, ok := o.(*appsv1.Deployment); ok {
			s.logf("workloads: waiting for %s/%s", o.GetNamespace(), o.GetName())
			if err := k.WaitAvailable(ctx, o.GetNamespace(), cfg.Timeouts.WorkloadsReady, o.GetName()); err != nil {
				return s, err
			}
		}
	}
	where := fmt.Sprintf("%s (%s), Kubernetes %s, Istio %s", cfg.Provider, rc.Host, s.envInfo.Kubernetes, istioLabel(cfg))
	if err := s.Results.SaveEnvironment(s.envInfo); err != nil {
		return s, err
	}
	s.Env = &spec.Env{Config: cfg, Registry: reg, Results: s.Results, Cluster: s.Mesh, Where: where}
	return s, nil
}

func (s *Suite) image(ctx context.Context, arch string) (fixtures.Images, error) {
	root, err := repo.Root()
	if err != nil {
		return fixtures.Images{}, err
	}
	ref := images.ImageRef("workload", WorkloadVersion)
	s.logf("image: building %s for linux/%s from ./fixtures/workload", ref, arch)
	img, err := images.Build(ctx, images.Spec{MainPackage: "./fixtures/workload", Dir: root, GOARCH: arch, Version: WorkloadVersion, Source: "github.com/meshclaims/meshclaims"})
	if err != nil {
		return fixtures.Images{}, err
	}
	s.envInfo.Notes = append(s.envInfo.Notes, fmt.Sprintf("workload image %s, config digest %s", ref, img.ConfigDigest))
	if s.Cfg.Registry != "" {
		pushed := s.Cfg.Registry + "/meshclaims/workload:" + WorkloadVersion
		d, err := images.Push(ctx, img.Image, pushed, images.PushOptions{})
		if err != nil {
			return fixtures.Images{}, err
		}
		s.logf("image: pushed %s", d)
		return fixtures.Images{Workload: d.String(), PullPolicy: "IfNotPresent"}, nil
	}
	// The tarball is only a vehicle into the nodes: kept out of the results
	// directory (CI uploads it) and removed once loaded; the report keeps
	// the image's config digest.
	tmp, err := os.MkdirTemp("", "meshclaims-image-")
	if err != nil {
		return fixtures.Images{}, err
	}
	defer os.RemoveAll(tmp)
	tar := filepath.Join(tmp, "workload.tar")
	if err := images.WriteTarball(img.Image, ref, tar); err != nil {
		return fixtures.Images{}, err
	}
	if err := s.Provider.LoadImage(ctx, tar); err != nil {
		return fixtures.Images{}, err
	}
	s.logf("image: loaded %s into the nodes", ref)
	return fixtures.Images{Workload: ref, PullPolicy: "IfNotPresent"}, nil
}

// InstallIstio installs Istio in profile p with the run's chart source,
// version, hub and tag and the provider's own values, waits for it, and
// records the images its pods run. Up calls it for meshed modes; a test of
// the control plane alone calls it after an Up of mode none.
func (s *Suite) InstallIstio(ctx context.Context, p istio.Profile) error {
	return s.installIstio(ctx, p, nil)
}

// InstallIstioCharts installs only the given charts of profile p, as
// InstallIstio would (same values), and records the images.
func (s *Suite) InstallIstioCharts(ctx context.Context, p istio.Profile, charts ...istio.Chart) error {
	return s.installIstio(ctx, p, charts)
}

func (s *Suite) installIstio(ctx context.Context, p istio.Profile, only []istio.Chart) error {
	guard := s.guard
	if p == istio.ProfileAmbient && (only == nil || slices.Contains(only, istio.ChartZtunnel)) {
		// Up checked this for the ambient modes; a test of mode none
		// installing the ambient profile itself is checked here.
		if err := ztunnelImageError(s.Cfg, "Istio's ambient profile"); err != nil {
			return err
		}
	}
	src := istio.ChartSource{RepoURL: istio.DefaultRepoURL}
	if s.Cfg.IstioCharts != "" {
		src = istio.ChartSource{Dir: s.Cfg.IstioCharts}
	}
	in, err := istio.NewInstaller(s.Provider.RESTConfig(), guard, istio.Options{
		Profile: p, Version: s.Cfg.IstioVersion, Method: istio.Method(s.Cfg.IstioInstall), Charts: src, Timeout: s.Cfg.Timeouts.IstioReady,
		Hub: s.istioHub(), Tag: s.istioTag(), ClusterValues: clusterValues(s.Provider),
		ExactImages: s.Cfg.ImageArchives != "",
	})
	if err != nil {
		return err
	}
	in.Logf = s.logf
	s.logf("istio: %s %s profile %s, images %s/*:%s", s.Cfg.IstioInstall, s.Cfg.IstioVersion, p, s.istioHub(), s.istioTag())
	if only != nil {
		err = in.InstallCharts(ctx, only...)
	} else {
		err = in.Install(ctx)
	}
	if err != nil {
		return err
	}
	return s.recordIstioImages(ctx)
}

// Down rebuilds the report, removes the run's objects (unless -keep-cluster)
// and deletes a cluster the provider created. It runs after failures too.
func (s *Suite) Down(ctx context.Context, failed bool) error {
	var errs []error
	if s.Results != nil {
		s.envInfo.Finished = time.Now().UTC()
		if err := s.Results.SaveEnvironment(s.envInfo); err != nil {
			errs = append(errs, err)
		}
		if res, err := s.Results.Rebuild(s.Registry); err != nil {
			errs = append(errs, fmt.Errorf("report: %w", err))
		} else {
			s.logf("report: %s (%v)", filepath.Join(s.Results.Path, "report.md"), res.Summary)
		}
	}
	if s.Provider == nil {
		return errors.Join(errs...)
	}
	if failed {
		dir := filepath.Join(s.Cfg.ResultsDir, "evidence", "cluster-logs")
		if err := s.Provider.ExportLogs(ctx, dir); err != nil {
			s.logf("exporting cluster logs: %v", err)
		}
	}
	if s.cleaner != nil && !s.Cfg.KeepCluster {
		rep, err := s.cleaner.Run(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("clean-up: %w", err))
		}
		s.logf("clean-up: %d deleted, %d remaining", len(rep.Deleted), len(rep.Remaining))
	}
	if !s.Cfg.KeepCluster {
		if err := s.Provider.Delete(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Cleaner exposes the run's cleaner (for the interrupt hook).
func (s *Suite) Cleaner() *cleanup.Cleaner { return s.cleaner }

func (s *Suite) logf(format string, a ...any) {
	fmt.Fprintf(s.out, "[meshclaims %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// istioLabel is the Istio a run uses: none when only the no-mesh mode runs.
func istioLabel(cfg *config.Config) string {
	for _, m := range cfg.Modes {
		if m.Meshed() {
			return cfg.IstioVersion + " (" + cfg.IstioInstall + ")"
		}
	}
	return "none (mode none only)"
}

// nodeArch is the CPU architecture of the cluster's nodes, so the workload
// image runs on them (GUIDE's EKS nodes are arm64 m7g; a laptop builds amd64).
// Mixed architectures are refused: one single-platform image serves a run.
func nodeArch(ctx context.Context, k *kube.Cluster) (string, error) {
	nodes, err := k.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	arch := ""
	for _, n := range nodes.Items {
		a := n.Status.NodeInfo.Architecture
		if a == "" {
			continue
		}
		if arch != "" && a != arch {
			return "", fmt.Errorf("nodes of different architectures (%s and %s, node %s); the suite builds one single-platform image", arch, a, n.Name)
		}
		arch = a
	}
	if arch == "" {
		return runtime.GOARCH, nil
	}
	for _, ok := range images.SupportedArchitectures {
		if arch == ok {
			return arch, nil
		}
	}
	return "", fmt.Errorf("nodes are %s; the workload image builds for %v", arch, images.SupportedArchitectures)
}
