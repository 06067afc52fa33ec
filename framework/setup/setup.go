// Package setup is the suite's before-all and after-all: bring up (or attach
// to) the cluster, pin it, build and load the workload image, install Istio in
// the profile the selected modes need, deploy every selected mode's namespace
// plus the no-mesh baseline and the client outside the mesh, and afterwards
// rebuild the report, clean up and delete what the run created.
package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/claims"
	"github.com/meshclaims/meshclaims/framework/cleanup"
	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/kube"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/report"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// WorkloadVersion tags the workload image; the digest, not the tag, proves
// which build ran (it is recorded in the report's environment).
const WorkloadVersion = "dev"

// Suite is one run's set-up. Make it with New and publish it before Up, so
// that Down (from the after-all or from an interrupt) finds whatever Up had
// created by then: the provider and the cleaner are published the moment
// each exists, the Istio installer before it installs anything.
type Suite struct {
	Cfg      *config.Config
	Registry *claims.Registry
	Results  *report.Dir
	Env      *spec.Env
	Cluster  *spec.Cluster
	// TerminatingNamespaceIsGone is handed to the cleaner (see
	// cleanup.Options): only for API servers that run no controllers.
	TerminatingNamespaceIsGone bool
	// NetPolSpecs names the selected specs that need NetworkPolicy
	// enforcement (spec.Needing): on -provider=existing the cluster is
	// looked at for an enforcer before any write when there are any.
	NetPolSpecs []string
	// Selected are the specs the selection runs (spec.Env.Selected).
	Selected []spec.Planned
	// EarlierParts are, in a resumed run (-resume), the run's parts
	// before this one (report.Environment.Parts).
	EarlierParts []report.RunPart
	// Phase, when set, is told as each part of the set-up begins (the
	// console prints each with its duration: progress.Printer.Phase).
	Phase func(name string)

	out io.Writer

	mu        sync.Mutex // guards what Up publishes and Down reads
	provider  cluster.Provider
	cleaner   *cleanup.Cleaner
	installer *istio.Installer
	guard     *cluster.Guard
	envInfo   report.Environment
	// proxy is the proxyv2 image of -image-archives, nil without one.
	proxy    *proxyArchive
	upCancel func()
	upDone   chan struct{}
	// inventoryBefore is the cluster before the first write
	// (-provider=existing only; inventory.go).
	inventoryBefore *inventory.Snapshot
	// foundIstio: the cluster ran an Istio the run did not install
	// (foreign.go), whose own writes the inventory can then tell apart.
	foundIstio bool

	downOnce sync.Once
	downDone chan struct{}
	downErr  error
	downing  chan struct{} // closed when a Down starts
	downMark sync.Once
	onSignal sync.WaitGroup // a TearDownOn teardown and its done callback
}

// New makes a run's Suite; nothing is created until Up.
func New(cfg *config.Config, reg *claims.Registry, out io.Writer) *Suite {
	return &Suite{Cfg: cfg, Registry: reg, out: out, downDone: make(chan struct{}), downing: make(chan struct{})}
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
		Undeclared: spec.Unspecified(reg, spec.Defs(), cfg.Modes),
	}
	if cfg.DurationScale != 1 {
		env.Notes = append(env.Notes, fmt.Sprintf("Durations scaled by %g from the documented setups.", cfg.DurationScale))
	}
	// The plan, written before any cluster work, so the report can set the
	// actual wall time beside it.
	planned, err := spec.Plan(reg, spec.Defs(), cfg.Modes)
	if err != nil {
		return nil, report.Environment{}, err
	}
	var plan bytes.Buffer
	est, err := spec.WritePlan(context.Background(), &plan, planned, &spec.Env{Config: cfg, Registry: reg})
	if err != nil {
		return nil, report.Environment{}, err
	}
	env.Planned = est.Total()
	if err := os.WriteFile(filepath.Join(d.Path, "plan.txt"), plan.Bytes(), 0o644); err != nil {
		return nil, report.Environment{}, err
	}
	return d, env, d.SaveEnvironment(env)
}

// Up is New followed by (*Suite).Up, for callers that publish nothing.
func Up(ctx context.Context, cfg *config.Config, reg *claims.Registry, out io.Writer) (*Suite, error) {
	s := New(cfg, reg, out)
	return s, s.Up(ctx)
}

// Up runs the before-all. On error the caller still calls Down, which
// removes whatever was created. Down may also run while Up does (an
// interrupt): it cancels Up's context and waits for Up to stop first.
func (s *Suite) Up(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	s.mu.Lock()
	if s.upDone != nil {
		s.mu.Unlock()
		return errors.New("setup: Up called twice")
	}
	s.upCancel, s.upDone = func() { cancel(errTornDown) }, done
	s.mu.Unlock()
	select {
	case <-s.downing:
		return errors.New("setup: Up after Down started")
	default:
	}
	err := s.up(ctx)
	if err != nil && ctx.Err() != nil {
		// Waits report a cancellation as their own timeout; say what ended it.
		err = fmt.Errorf("set-up stopped: %w (it was at: %v)", context.Cause(ctx), err)
	}
	if err != nil {
		// Down writes the report with it: a failed set-up is stated
		// in report.md and report.html, not only in JUnit.
		s.mu.Lock()
		s.envInfo.SetupError = err.Error()
		s.mu.Unlock()
	}
	return err
}

// errTornDown is why Down cancels a running Up.
var errTornDown = errors.New("tear-down started (interrupt or after-all)")

// upPhase is one named part of the set-up: the console shows its name as
// it begins and, when the next begins, how long it took (Suite.Phase).
type upPhase struct {
	name string
	// needed, when set, is asked just before the phase would begin:
	// false skips it unannounced, an error stops the set-up there.
	needed func() (bool, error)
	run    func(ctx context.Context) error
}

// upRun is what the set-up's phases hand on to the ones after them.
type upRun struct {
	*Suite
	rc      *rest.Config
	k       *kube.Cluster
	applier *apply.Applier
	mesh    *spec.Cluster
	// profile is the Istio profile serving every selected mode.
	profile istio.Profile
}

// phases are the set-up's parts, in the order they run.
func (u *upRun) phases() []upPhase {
	return []upPhase{
		{name: "results directory and checks", run: u.resultsAndChecks},
		{name: "cluster", run: u.startCluster},
		{name: "workload image", run: u.workloadImage},
		{name: "istio", needed: u.istioNeeded, run: u.installMesh},
		{name: "workloads", run: u.deployWorkloads},
	}
}

func (s *Suite) up(ctx context.Context) error {
	u := &upRun{Suite: s}
	for _, p := range u.phases() {
		if p.needed != nil {
			if ok, err := p.needed(); err != nil {
				return err
			} else if !ok {
				continue
			}
		}
		s.phase(p.name)
		if err := p.run(ctx); err != nil {
			return err
		}
	}
	return u.recordSetUp()
}

// resultsAndChecks creates the results directory (so even a failed set-up
// leaves a report) and makes the checks that need no cluster.
func (u *upRun) resultsAndChecks(ctx context.Context) error {
	s, cfg := u.Suite, u.Cfg
	results, envInfo, err := Results(cfg, s.Registry)
	if err == nil && len(s.EarlierParts) > 0 {
		envInfo.Parts = s.EarlierParts
		err = results.SaveEnvironment(envInfo)
	}
	s.mu.Lock()
	s.Results, s.envInfo = results, envInfo
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.logf("results: %s", cfg.ResultsDir)
	if err := checkZtunnelImage(cfg); err != nil {
		return err
	}
	return s.checkRegistry(ctx)
}

// startCluster brings up (or attaches to) the cluster, pinned once, and
// makes every check that must pass before the first write.
func (u *upRun) startCluster(ctx context.Context) error {
	s, cfg := u.Suite, u.Cfg
	// cluster.Setup is e2e-framework's env.Func. The provider is
	// published before it starts: an interrupt during a kind create must
	// still delete the cluster.
	provider, err := cluster.New(cfg.Provider, cluster.Options{
		ClusterName: cfg.ClusterName, Reuse: cfg.ReuseCluster, NodeImage: cfg.KindNodeImage, KindConfig: cfg.KindConfig, KubeProxyMode: cfg.KindKubeProxyMode,
		Kubeconfig: cluster.KubeconfigSelector{Path: cfg.Kubeconfig, Context: cfg.Context},
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.provider = provider
	s.mu.Unlock()
	s.logf("cluster: starting provider %s", cfg.Provider)
	ctx, err = cluster.Setup(provider)(ctx, envconf.New())
	if err != nil {
		return fmt.Errorf("provider %s: %w", cfg.Provider, err)
	}
	guard, _ := cluster.GuardFrom(ctx)
	s.mu.Lock()
	s.guard = guard
	s.mu.Unlock()
	u.rc = provider.RESTConfig()
	if u.k, err = kube.New(u.rc, guard); err != nil {
		return err
	}
	if u.applier, err = apply.New(u.rc, guard); err != nil {
		return err
	}
	cleaner, err := cleanup.New(u.rc, cleanup.Options{Run: cfg.RunID, Guard: guard, Timeout: cfg.Timeouts.Cleanup,
		TerminatingNamespaceIsGone: s.TerminatingNamespaceIsGone})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cleaner = cleaner
	s.envInfo.Cluster = u.rc.Host
	if d, ok := provider.(cluster.Describer); ok {
		s.envInfo.Notes = append(s.envInfo.Notes, d.Describe())
		s.logf("cluster: %s", d.Describe())
	}
	if n, ok := provider.(cluster.NodeImager); ok {
		s.envInfo.NodeImage = n.NodeImage()
	}
	s.envInfo.Kubernetes = u.k.ServerVersion()
	s.mu.Unlock()
	s.logf("cluster: %s, Kubernetes %s, pinned (%s)", u.rc.Host, u.k.ServerVersion(), guard.Pinned())
	// Before the image is built and pushed and before any object is written.
	if err := s.checkNetPolEnforcer(ctx, u.k.Client); err != nil {
		return err
	}
	if err := s.checkForeignIstio(ctx); err != nil {
		return err
	}
	if err := s.checkAccess(ctx); err != nil {
		return err
	}
	return s.takeInventoryBefore(ctx)
}

// workloadImage builds the workload image and loads it into the nodes (or
// pushes it), sized to the nodes, and loads -image-archives.
func (u *upRun) workloadImage(ctx context.Context) error {
	s, cfg := u.Suite, u.Cfg
	arch, err := nodeArch(ctx, u.k)
	if err != nil {
		return err
	}
	provider := s.Provider()
	img, err := s.image(ctx, provider, arch)
	if err != nil {
		return err
	}
	// "" where the nodes hold GUIDE's requests.
	facts := provider.Facts()
	if q := facts.Sizing.CPURequest; q != "" {
		img.CPURequest = q
		s.note(sizingNote(facts))
	}
	opts := fixtures.Options{Run: cfg.RunID, Images: img, SidecarRevision: s.sidecarRevision()}
	u.mesh = &spec.Cluster{Kube: u.k, Applier: u.applier, Options: opts, NodesShareHost: facts.NodesShareHost}
	s.mu.Lock()
	s.Cluster = u.mesh
	s.mu.Unlock()
	if err := s.loadArchives(ctx); err != nil {
		return err
	}
	// The proxyv2 just read from the archives decides whether ambient-l7's
	// waypoint needs upstream Envoy's EnvoyFilters (fixtures.ForMode puts
	// them before its Gateway); Istio's release images get none.
	u.mesh.Options.UpstreamEnvoyWaypoint = proxyKind(s.proxy) == istio.ProxyUpstreamEnvoy
	return nil
}

// istioNeeded says whether a selected mode is meshed, and refuses sidecar
// mode without the proxy image the local node would need.
func (u *upRun) istioNeeded() (bool, error) {
	p, ok, err := istio.ProfileForModes(u.Cfg.Modes)
	if err != nil || !ok {
		return false, err
	}
	if err := u.checkSidecarImage(u.Cfg.Modes); err != nil {
		return false, err
	}
	u.profile = p
	return true, nil
}

// installMesh installs Istio in the one profile that serves every selected
// mode.
func (u *upRun) installMesh(ctx context.Context) error {
	return u.InstallIstio(ctx, u.profile)
}

// deployWorkloads deploys every mode's namespace, the baseline and the
// outside client, and waits for them.
func (u *upRun) deployWorkloads(ctx context.Context) error {
	s, cfg, k := u.Suite, u.Cfg, u.k
	var objs []client.Object
	for _, m := range Modes(cfg.Modes) {
		set, err := fixtures.ForMode(m, u.mesh.Options)
		if err != nil {
			return err
		}
		objs = append(objs, set...)
	}
	outside, err := fixtures.OutsideSet(u.mesh.Options)
	if err != nil {
		return err
	}
	objs = append(objs, outside...)
	s.logf("workloads: applying %d objects", len(objs))
	if err := u.applier.Apply(ctx, objs...); err != nil {
		return err
	}
	for _, o := range objs {
		if _, ok := o.(*appsv1.Deployment); ok {
			s.logf("workloads: waiting for %s/%s", o.GetNamespace(), o.GetName())
			if err := k.WaitAvailable(ctx, o.GetNamespace(), cfg.Timeouts.WorkloadsReady, o.GetName()); err != nil {
				return s.diagnoseNotReady(ctx, k, o.GetNamespace(), err)
			}
		}
	}
	// istiod deploys each waypoint itself; ambient-l7 specs must not start
	// while ztunnel still bypasses it.
	if err := istio.WaitWaypoints(ctx, u.mesh.Kube, u.mesh.Applier.Client(), objs, cfg.Timeouts.GatewayReady, s.logf); err != nil {
		return err
	}
	// Where echo's replicas landed: on several nodes, whether a request
	// could cross nodes at all (HBONE between two ztunnels, kube-proxy's
	// rules on the client's node) is part of what a number means.
	for _, m := range Modes(cfg.Modes) {
		sp, err := k.Spread(ctx, m.Namespace(), fixtures.LabelApp+"="+fixtures.EchoName)
		if err != nil {
			return fmt.Errorf("placement of echo in %s: %w", m.Namespace(), err)
		}
		s.note(fmt.Sprintf("echo in %s: %s", m.Namespace(), sp))
		s.logf("workloads: echo in %s: %s", m.Namespace(), sp)
	}
	return nil
}

// recordSetUp saves the environment with the set-up's time and makes the
// specs' Env.
func (u *upRun) recordSetUp() error {
	s, cfg := u.Suite, u.Cfg
	where := fmt.Sprintf("%s (%s), Kubernetes %s, Istio %s", cfg.Provider, u.rc.Host, u.k.ServerVersion(), istioLabel(cfg))
	s.mu.Lock()
	s.envInfo.SetUp = time.Since(s.envInfo.Started).Round(time.Millisecond)
	env := s.envInfo
	s.mu.Unlock()
	if err := s.Results.SaveEnvironment(env); err != nil {
		return err
	}
	s.Env = &spec.Env{Config: cfg, Registry: s.Registry, Results: s.Results, Cluster: u.mesh, Where: where, Proxy: env.Proxy.Summary(), WaypointProxy: env.Proxy.SummaryFor(mode.AmbientL7), NoSidecarHBONE: s.noSidecarHBONE(), Selected: s.Selected, Note: s.note, Out: s.out}
	return nil
}

func (s *Suite) image(ctx context.Context, provider cluster.Provider, arch string) (fixtures.Images, error) {
	root, err := repo.Root()
	if err != nil {
		return fixtures.Images{}, err
	}
	ref := images.ImageRef("workload", WorkloadVersion)
	s.logf("image: building %s for linux/%s from ./fixtures/workload", ref, arch)
	img, err := images.Build(ctx, images.Spec{MainPackage: "./fixtures/workload", Dir: root,
		ImageConfig: images.ImageConfig{GOARCH: arch, Version: WorkloadVersion, Source: "github.com/meshclaims/meshclaims"}})
	if err != nil {
		return fixtures.Images{}, err
	}
	s.note(fmt.Sprintf("workload image %s, config digest %s", ref, img.ConfigDigest))
	if s.Cfg.Registry != "" {
		pushed := s.Cfg.Registry + "/meshclaims/workload:" + WorkloadVersion
		opts, err := s.pushOptions()
		if err != nil {
			return fixtures.Images{}, err
		}
		d, err := images.Push(ctx, img.Image, pushed, opts)
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
	if err := provider.LoadImage(ctx, tar); err != nil {
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

// chartSource is where the run's Istio charts come from.
func (s *Suite) chartSource() istio.ChartSource {
	if s.Cfg.IstioCharts != "" {
		return istio.ChartSource{Dir: s.Cfg.IstioCharts}
	}
	return istio.ChartSource{RepoURL: istio.DefaultRepoURL}
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
	in, err := istio.NewInstaller(s.Provider().RESTConfig(), guard, istio.Options{
		Profile: p, Version: s.Cfg.IstioVersion, Method: istio.Method(s.Cfg.IstioInstall), Charts: s.chartSource(), Revision: s.Cfg.IstioRevision,
		ValuesFile: s.Cfg.IstioValues, Timeout: s.Cfg.Timeouts.IstioReady,
		Hub: s.istioHub(), Tag: s.istioTag(), ClusterValues: s.istioClusterValues(), Proxy: proxyKind(s.proxy),
		ExactImages: s.Cfg.ImageArchives != "", TerminatingNamespaceIsGone: s.TerminatingNamespaceIsGone,
	})
	if err != nil {
		return err
	}
	in.Logf = s.logf
	// Published before Install writes anything: a half-done install is
	// uninstalled too.
	s.mu.Lock()
	s.installer = in
	s.envInfo.Proxy = proxyRan(s.proxy, s.istioHub(), s.istioTag(), s.Cfg.IstioVersion)
	if istio.Method(s.Cfg.IstioInstall) == istio.MethodSkip {
		// Nothing is installed: istiod runs with whatever it was given.
		notInstalled(s.envInfo.Proxy)
	}
	proxySummary := s.envInfo.Proxy.Summary()
	s.mu.Unlock()
	values := s.Cfg.IstioValues
	if values == "" {
		values = "the charts' defaults"
	}
	s.logf("istio: %s %s profile %s, values %s, images %s/*:%s, %s", s.Cfg.IstioInstall, s.Cfg.IstioVersion, p, values, s.istioHub(), s.istioTag(), proxySummary)
	if only != nil {
		err = in.InstallCharts(ctx, only...)
	} else {
		err = in.Install(ctx)
	}
	if w := in.GatewayCRDs.Warning; w != "" {
		s.note("Gateway API: " + w)
	}
	if err != nil {
		return err
	}
	if p == istio.ProfileAmbient && (only == nil || slices.Contains(only, istio.ChartCNI)) {
		s.recordIstioCNI(ctx)
	}
	return s.recordIstioImages(ctx)
}

// Down rebuilds the report, removes what the run created (unless
// -keep-cluster): the run's labelled objects, the Istio releases and Gateway
// API CRDs this suite installed, and a cluster the provider created. It runs
// after failures too, and once: a second call (the after-all after an
// interrupt already tore down) waits for the first and returns its result.
// A Up still running is cancelled and waited for (at most the clean-up
// timeout) so nothing is created behind the clean-up's back.
func (s *Suite) Down(ctx context.Context, failed bool) error {
	s.downMark.Do(func() { close(s.downing) })
	s.downOnce.Do(func() {
		defer close(s.downDone)
		s.downErr = s.down(ctx, failed)
	})
	<-s.downDone
	return s.downErr
}

// Wait returns once a Down that has started has finished (with the done
// callback of TearDownOn); at once when none has started. A process calls it before exiting, so an interrupt's
// clean-up is not cut short by the exit.
func (s *Suite) Wait() {
	select {
	case <-s.downing:
		<-s.downDone
		s.onSignal.Wait()
	default:
	}
}

// TearDownOn runs Down (as for a failed run) when the first signal arrives
// on sigs (cleanup.Interrupts, or a channel a test feeds), then calls done
// with the signal and Down's error. stop ends the watch, waiting for a
// teardown already started.
func (s *Suite) TearDownOn(sigs <-chan os.Signal, done func(os.Signal, error)) (stop func()) {
	// Bounded: stopping Up, the clean-up's own wait, Helm's uninstall wait.
	limit := 2*s.Cfg.Timeouts.Cleanup + s.Cfg.Timeouts.IstioReady
	return cleanup.Watch(sigs, limit, func(ctx context.Context, sig os.Signal) {
		// Counted before Down starts, so a Wait that sees Down started
		// also waits for done.
		s.onSignal.Add(1)
		defer s.onSignal.Done()
		s.logf("%v: deleting what this run created", sig)
		err := s.Down(ctx, true)
		if done != nil {
			done(sig, err)
		}
	})
}

func (s *Suite) stopUp() {
	s.mu.Lock()
	cancel, done := s.upCancel, s.upDone
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-done:
	case <-time.After(s.Cfg.Timeouts.Cleanup):
		s.logf("set-up did not stop within %s; cleaning up while it runs", s.Cfg.Timeouts.Cleanup)
	}
}

func (s *Suite) down(ctx context.Context, failed bool) error {
	s.stopUp()
	s.mu.Lock()
	provider, cleaner, installer, results, guard, mesh, started := s.provider, s.cleaner, s.installer, s.Results, s.guard, s.Cluster, s.envInfo.Started
	s.mu.Unlock()
	if mesh != nil && provider != nil && provider.RESTConfig() != nil {
		s.recordHBONECrossings(ctx, mesh.Kube, started)
	}
	s.mu.Lock()
	env := s.envInfo
	s.mu.Unlock()
	var errs []error
	if results != nil {
		env.Finished = time.Now().UTC()
		if err := results.SaveEnvironment(env); err != nil {
			errs = append(errs, err)
		}
		if res, err := results.Rebuild(s.Registry); err != nil {
			errs = append(errs, fmt.Errorf("report: %w", err))
		} else {
			s.logf("report: %s (%s)", filepath.Join(results.Path, "report.md"), report.SummaryText(res.Summary))
		}
	}
	if provider == nil {
		return errors.Join(errs...)
	}
	if failed && provider.RESTConfig() != nil {
		dir := filepath.Join(s.Cfg.ResultsDir, "evidence", "cluster-logs")
		if err := provider.ExportLogs(ctx, dir); err != nil {
			s.logf("exporting cluster logs: %v", err)
		}
	}
	if s.Cfg.KeepCluster {
		return errors.Join(errs...)
	}
	if cleaner != nil && installer == nil && guard != nil && guard.WritePhases() == 0 {
		// Set-up stopped before its first write (a refused cluster, say):
		// a sweep of every resource type would find nothing and takes
		// half a minute on a cluster with many CRDs.
		s.logf("clean-up: nothing to delete (no write phase began; the write guard was never asked)")
	} else if cleaner != nil {
		rep, err := cleaner.Run(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("clean-up: %w", err))
		}
		s.logf("clean-up: %d deleted, %d remaining", len(rep.Deleted), len(rep.Remaining))
	}
	if installer != nil {
		if err := installer.Uninstall(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := provider.Delete(ctx); err != nil {
		errs = append(errs, err)
	}
	// After every removal: what the run leaves of itself, and of what it
	// found, is now on the cluster to be listed.
	if changes, err := s.inventoryAfter(ctx); err != nil {
		errs = append(errs, err)
	} else if changes != nil && results != nil {
		env.ClusterChanges = changes.Summary()
		env.ClusterChangesFile = InventoryChangesFile
		if err := results.SaveEnvironment(env); err != nil {
			errs = append(errs, err)
		} else if _, err := results.Rebuild(s.Registry); err != nil {
			errs = append(errs, fmt.Errorf("report: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (s *Suite) note(n string) {
	s.mu.Lock()
	s.envInfo.Notes = append(s.envInfo.Notes, n)
	s.mu.Unlock()
}

// Cleaner is the run's cleaner once Up has made it; nil before.
func (s *Suite) Cleaner() *cleanup.Cleaner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cleaner
}

// Provider is the run's cluster provider once Up has made it; nil before.
func (s *Suite) Provider() cluster.Provider {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.provider
}

func (s *Suite) phase(name string) {
	if s.Phase != nil {
		s.Phase(name)
	}
}

func (s *Suite) logf(format string, a ...any) {
	fmt.Fprintf(s.out, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
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
