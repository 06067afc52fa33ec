package istio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshclaims/meshclaims/framework/kube"
)

// WriteGuard is checked before every phase that writes; framework/cluster's
// Guard satisfies it.
type WriteGuard interface {
	Check(ctx context.Context) error
}

// Installer installs, verifies and uninstalls Istio on one cluster.
type Installer struct {
	cfg   *rest.Config
	guard WriteGuard
	opts  Options
	// Logf receives Helm's progress lines; nil discards them.
	Logf func(format string, args ...any)
	// GatewayCRDs is what Install found and did with the Gateway API CRDs
	// (for the report: a foreign bundle's versions and the warning).
	GatewayCRDs GatewayCRDs
	// before is the Istio CRDs and GatewayClasses the cluster had when
	// Install began (uninstallLeftovers); nil until then.
	before *istioState
	// revisionBefore is the ConfigMaps and Leases of Istio's namespace
	// before a revision's install (revision.go); nil until then.
	revisionBefore map[string]bool
}

// NewInstaller validates o and returns an installer that talks to the
// cluster only through cfg, the run's pinned REST config (Helm never reads a
// kubeconfig here), and checks guard before each write.
func NewInstaller(cfg *rest.Config, guard WriteGuard, o Options) (*Installer, error) {
	if cfg == nil {
		return nil, errors.New("istio installer: nil REST config")
	}
	if guard == nil {
		return nil, errors.New("istio installer: nil write guard; every install writes to a cluster and must be guarded")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Installer{cfg: rest.CopyConfig(cfg), guard: guard, opts: o.withDefaults()}, nil
}

func (i *Installer) logf(format string, args ...any) {
	if i.Logf != nil {
		i.Logf(format, args...)
	}
}

// Install brings Istio to o.Version in o.Profile: Gateway API CRDs, then each
// chart (install, or upgrade when the release exists) waiting for its
// workloads to be ready, then VerifyVersion. With MethodSkip it installs
// nothing and only verifies.
func (i *Installer) Install(ctx context.Context) error {
	if i.opts.Method == MethodSkip {
		i.logf("istio: -istio-install=skip: verifying the installed Istio only")
		return i.VerifyVersion(ctx)
	}
	charts, err := i.charts()
	if err != nil {
		return err
	}
	if err := i.install(ctx, charts, charts); err != nil {
		return err
	}
	return i.VerifyVersion(ctx)
}

// InstallCharts installs only the given charts of o.Profile, in the
// profile's order, each waiting for its workloads; it verifies nothing
// else. A check of one part (istio-cni in ambient mode without ztunnel,
// whose image no registry this project builds from ships) uses it.
func (i *Installer) InstallCharts(ctx context.Context, only ...Chart) error {
	charts, err := i.charts()
	if err != nil {
		return err
	}
	for _, c := range only {
		if !slices.Contains(charts, c) {
			return fmt.Errorf("istio: chart %s is not part of profile %s (%v)", c, i.opts.Profile, charts)
		}
	}
	return i.install(ctx, charts, only)
}

// charts are what an install writes, in order: the profile's charts, or
// for a revision beside a running Istio, istiod alone (the CRDs, CNI and
// ztunnel of that Istio stay its own).
func (i *Installer) charts() ([]Chart, error) { return i.opts.InstallCharts() }

// install writes the charts of profile (the profile's order) that are in
// only: the namespace first, since a foreign one stops the install before
// the Gateway API CRDs or any chart is written; then the CRDs, each chart
// waiting for its workloads, and the marks on Istio's CRDs.
func (i *Installer) install(ctx context.Context, profile, only []Chart) error {
	user, err := LoadValuesFile(i.opts.ValuesFile)
	if err != nil {
		return err
	}
	if err := i.refuseForeignReleases(ctx, only); err != nil {
		return err
	}
	if err := i.ensureNamespace(ctx, only); err != nil {
		return err
	}
	if err := i.recordBefore(ctx); err != nil {
		return err
	}
	if i.opts.Revision == "" {
		crds, err := i.InstallGatewayAPICRDs(ctx)
		i.GatewayCRDs = crds
		if err != nil {
			return err
		}
	} else if err := i.recordRevisionBefore(ctx); err != nil {
		return err
	}
	for _, c := range profile {
		if !slices.Contains(only, c) {
			continue
		}
		if err := i.installChart(ctx, c, user[c]); err != nil {
			return err
		}
	}
	return i.markIstioCRDs(ctx, *i.before)
}

// refuseForeignReleases stops an install, before its first write, when a
// release it would write is there and not this suite's: upgrading it would
// change someone's control plane. (installChart checks again, per chart.)
func (i *Installer) refuseForeignReleases(ctx context.Context, charts []Chart) error {
	cfg, err := i.helmConfig()
	if err != nil {
		return err
	}
	for _, c := range charts {
		name := i.opts.ReleaseOf(c)
		rel, err := cfg.Releases.Last(name)
		switch {
		case errors.Is(err, driver.ErrReleaseNotFound):
		case err != nil:
			return fmt.Errorf("istio: release %s: %w", name, err)
		case rel.Labels[LabelManagedBy] != ManagedBy:
			return foreignReleaseError(i.opts.Namespace, name, rel)
		}
	}
	return nil
}

func foreignReleaseError(ns, name string, rel *release.Release) error {
	return fmt.Errorf("istio: %w: release %s/%s (chart %s %s, Helm revision %d) was not installed by meshclaims; "+
		"it is not upgraded and nothing was written. Qualify it as it is with -istio-install=skip, or install beside it with -istio-revision=NAME (sidecar mode)",
		ErrForeignIstio, ns, name, rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Version)
}

// installChart installs chart c, or upgrades its release when it exists
// (a re-run on a kept cluster), and waits for its workloads to be ready.
func (i *Installer) installChart(ctx context.Context, c Chart, user map[string]any) error {
	if err := i.guard.Check(ctx); err != nil {
		return fmt.Errorf("istio: before installing %s: %w", c, err)
	}
	ch, err := i.opts.Charts.Load(c, i.opts.Version)
	if err != nil {
		return err
	}
	cfg, err := i.helmConfig()
	if err != nil {
		return err
	}
	vals := Values(c, i.opts, user)
	name := i.opts.ReleaseOf(c)
	rel, err := cfg.Releases.Last(name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		in := action.NewInstall(cfg)
		in.ReleaseName = name
		in.Namespace = i.opts.Namespace
		in.CreateNamespace = true
		// Adopt objects that exist without Helm's ownership marks, above all
		// Istio's CRDs on a cluster where they came from istioctl or from
		// istio.io/api: the CRDs must match the version being qualified.
		// Never beside a running Istio: there every object that exists is
		// that Istio's, and adopting one would change it.
		in.TakeOwnership = i.opts.Revision == ""
		// The mark that makes Uninstall remove this release after the run;
		// a release someone else installed never carries it.
		in.Labels = map[string]string{LabelManagedBy: ManagedBy}
		in.Wait = true
		in.Timeout = i.opts.Timeout
		i.logf("istio: installing chart %s %s as %s", c, ch.Metadata.Version, name)
		if _, err := in.RunWithContext(ctx, ch, vals); err != nil {
			return fmt.Errorf("istio: install %s: %w", c, err)
		}
	case err != nil:
		return fmt.Errorf("istio: release %s: %w", name, err)
	case rel.Labels[LabelManagedBy] != ManagedBy:
		// Upgrading it would change someone's control plane (its version,
		// its values): the run stops instead, with nothing written.
		return foreignReleaseError(i.opts.Namespace, name, rel)
	default:
		// A release of an earlier run that kept its cluster.
		up := action.NewUpgrade(cfg)
		up.Namespace = i.opts.Namespace
		up.TakeOwnership = i.opts.Revision == ""
		up.Wait = true
		up.Timeout = i.opts.Timeout
		i.logf("istio: upgrading release %s (installed by an earlier run) to chart %s %s", name, c, ch.Metadata.Version)
		if _, err := up.RunWithContext(ctx, name, ch, vals); err != nil {
			return fmt.Errorf("istio: upgrade %s: %w", c, err)
		}
	}
	return i.waitNodeAgents(ctx, c)
}

// nodeAgents names the DaemonSets a chart runs on every node.
var nodeAgents = map[Chart][]string{ChartCNI: {"istio-cni-node"}, ChartZtunnel: {"ztunnel"}}

// waitNodeAgents waits until chart c's DaemonSets run a ready pod on every
// node. Helm's own wait does not: with the charts' maxUnavailable 1 it
// calls a one-node DaemonSet ready with no pod ready (kube.DaemonSetRolledOut),
// and ambient workloads created then start before istio-cni's node agent can
// enroll them.
func (i *Installer) waitNodeAgents(ctx context.Context, c Chart) error {
	names := nodeAgents[c]
	if len(names) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(i.cfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := kube.WaitDaemonSets(ctx, cs, i.opts.Namespace, i.opts.Timeout, names...); err != nil {
		return fmt.Errorf("istio: %s installed but its node agent is not ready: %w", c, err)
	}
	i.logf("istio: %s ready on every node (%s)", strings.Join(names, ", "), time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// VerifyVersion checks that istiod (and, for ambient, istio-cni and
// ztunnel) run images tagged o.ImageTag() (the Version unless Tag is set).
func (i *Installer) VerifyVersion(ctx context.Context) error {
	images, err := i.runningImages(ctx)
	if err != nil {
		return err
	}
	return CheckImageVersions(images, i.opts.ImageTag())
}

func (i *Installer) runningImages(ctx context.Context) (map[string]string, error) {
	cs, err := kubernetes.NewForConfig(i.cfg)
	if err != nil {
		return nil, err
	}
	ns := i.opts.Namespace
	images := map[string]string{}
	sel := "app=istiod"
	if i.opts.Revision != "" {
		// Only the revision this run installed: the running Istio's istiod
		// is of its own version.
		sel += ",istio.io/rev=" + i.opts.Revision
	}
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("istio: listing istiod in %s: %w", ns, err)
	}
	if len(deps.Items) == 0 {
		return nil, fmt.Errorf("istio: no istiod Deployment (labels %s) in namespace %s", sel, ns)
	}
	for _, d := range deps.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			images["deployment/"+d.Name+"/"+c.Name] = c.Image
		}
	}
	if i.opts.Profile == ProfileAmbient {
		for _, name := range []string{"ztunnel", "istio-cni-node"} {
			ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("istio: ambient needs DaemonSet %s/%s: %w", ns, name, err)
			}
			for _, c := range ds.Spec.Template.Spec.Containers {
				images["daemonset/"+name+"/"+c.Name] = c.Image
			}
		}
	}
	return images, nil
}

// Uninstall removes what this package installed, and only that: the
// releases carrying LabelManagedBy (installed by this run, or by an earlier
// run that kept its cluster) in reverse install order, waiting for their
// resources to go, then the Gateway API CRDs carrying it, then Istio's
// namespace when this package created it. A release someone
// else installed, which Install only upgraded, and Gateway API CRDs the
// cluster had before, stay. With MethodSkip nothing is ours.
func (i *Installer) Uninstall(ctx context.Context) error {
	if i.opts.Method == MethodSkip {
		return nil
	}
	charts, err := i.charts()
	if err != nil {
		return err
	}
	var errs []error
	for j := len(charts) - 1; j >= 0; j-- {
		if err := i.uninstallChart(ctx, charts[j]); err != nil {
			if errors.Is(err, errGuard) {
				return err
			}
			errs = append(errs, err)
		}
	}
	// What the revision's istiod wrote at run time beside the running
	// Istio (its leader-election leases), once it is gone.
	if len(errs) == 0 && i.opts.Revision != "" {
		if err := i.uninstallRevisionLeftovers(ctx); err != nil {
			if errors.Is(err, errGuard) {
				return err
			}
			errs = append(errs, err)
		}
	}
	// What Helm keeps (Istio's CRDs) or never knew (istiod's
	// GatewayClasses), once istiod is gone and cannot recreate it.
	if len(errs) == 0 {
		if err := i.uninstallLeftovers(ctx); err != nil {
			if errors.Is(err, errGuard) {
				return err
			}
			errs = append(errs, err)
		}
	}
	if err := i.uninstallGatewayAPICRDs(ctx); err != nil {
		if errors.Is(err, errGuard) {
			return err
		}
		errs = append(errs, err)
	}
	// Only once its releases are gone: Helm keeps their records there.
	if len(errs) == 0 {
		if err := i.uninstallNamespace(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// recordBefore reads, once per Installer, what the cluster holds before
// any chart (a second Install on the same Installer keeps the first
// reading: what this run found is what it must leave).
func (i *Installer) recordBefore(ctx context.Context) error {
	if i.before != nil {
		return nil
	}
	st, err := i.readIstioState(ctx)
	if err != nil {
		return err
	}
	i.before = &st
	return nil
}

// errGuard marks a guard refusal, which stops everything.
var errGuard = errors.New("write guard refused")

func (i *Installer) uninstallChart(ctx context.Context, c Chart) error {
	if err := i.guard.Check(ctx); err != nil {
		return fmt.Errorf("istio: before uninstalling %s: %w: %w", c, errGuard, err)
	}
	cfg, err := i.helmConfig()
	if err != nil {
		return err
	}
	name := i.opts.ReleaseOf(c)
	rel, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("istio: release %s: %w", name, err)
	}
	if rel.Labels[LabelManagedBy] != ManagedBy {
		i.logf("istio: release %s was not installed by meshclaims; left installed", name)
		return nil
	}
	un := action.NewUninstall(cfg)
	un.Wait = true
	un.Timeout = i.opts.Timeout
	un.IgnoreNotFound = true
	if _, err := un.Run(name); err != nil {
		return fmt.Errorf("istio: uninstall %s: %w", name, err)
	}
	return nil
}

// helmConfig builds Helm's action configuration on the pinned REST config.
func (i *Installer) helmConfig() (*action.Configuration, error) {
	return HelmConfiguration(i.cfg, i.opts.Namespace, i.logf)
}

// HelmConfiguration is Helm's action configuration for namespace on cfg
// alone (no kubeconfig is read), its releases kept in Secrets as Helm's
// CLI keeps them: what `helm get` and `helm install` would see.
func HelmConfiguration(cfg *rest.Config, namespace string, logf func(string, ...any)) (*action.Configuration, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	out := &action.Configuration{}
	getter := &pinnedGetter{cfg: rest.CopyConfig(cfg), namespace: namespace}
	if err := out.Init(getter, namespace, "secret", logf); err != nil {
		return nil, fmt.Errorf("istio: helm: %w", err)
	}
	return out, nil
}

// pinnedGetter hands Helm the run's pinned REST config. Helm's usual getter
// (genericclioptions.ConfigFlags) would read the kubeconfig, which is what a
// run must never do after start.
type pinnedGetter struct {
	cfg       *rest.Config
	namespace string
}

var _ genericclioptions.RESTClientGetter = (*pinnedGetter)(nil)

func (g *pinnedGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *pinnedGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.cfg))
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g *pinnedGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}

// ToRawKubeConfigLoader serves only the namespace: an in-memory config, so
// nothing falls back to reading a kubeconfig from disk.
func (g *pinnedGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(),
		&clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}
