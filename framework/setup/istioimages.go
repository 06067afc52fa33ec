package setup

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/cluster"
	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/report"
)

// loadArchives loads every image archive of -image-archives into the
// cluster's nodes before Istio is installed, or pushes them to
// -image-registry. Each image's reference and config digest go into the
// environment. Istio's images must be named as the charts will ask for them
// (<hub>/<image>:<tag>); an archive of Istio's under another hub or tag is
// refused here rather than leaving a pod in ImagePullBackOff.
func (s *Suite) loadArchives(ctx context.Context) error {
	dir := s.Cfg.ImageArchives
	if dir == "" {
		return nil
	}
	tars, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil || len(tars) == 0 {
		return fmt.Errorf("-image-archives=%q: no *.tar archives", dir)
	}
	sort.Strings(tars)
	hub, tag := s.istioHub(), s.istioTag()
	pushing := s.Cfg.Registry != ""
	if pushing && s.Cfg.IstioHub != "" && s.Cfg.IstioHub != s.Cfg.Registry {
		return fmt.Errorf("-istio-hub=%q, but -image-archives are pushed to -image-registry=%q, where the charts must find them: leave -istio-hub unset (or equal to the registry)", s.Cfg.IstioHub, s.Cfg.Registry)
	}
	// Every archive is read and checked before any is loaded, so a
	// refusal leaves the nodes as they were.
	type load struct {
		tar    string
		images []images.Archive
	}
	var loads []load
	for _, tar := range tars {
		arch, err := images.ReadArchive(tar)
		if err != nil {
			return fmt.Errorf("-image-archives: %w", err)
		}
		for _, a := range arch {
			if err := checkIstioRef(s.archiveTarget(a.Refs[0]), hub, tag); err != nil {
				return fmt.Errorf("-image-archives: %s: %w", tar, err)
			}
			pa, err := readProxyArchive(a)
			if err != nil {
				return fmt.Errorf("-image-archives: %s: %w", tar, err)
			}
			if pa != nil {
				s.proxy = pa
			}
		}
		loads = append(loads, load{tar, arch})
	}
	opts, err := s.pushOptions()
	if err != nil {
		return err
	}
	for _, l := range loads {
		where := "archive " + filepath.Base(l.tar)
		if !pushing {
			if err := s.Provider().LoadImage(ctx, l.tar); err != nil {
				return err
			}
			for _, a := range l.images {
				s.envInfo.Images = append(s.envInfo.Images, report.ImageRan{Where: where, Image: a.Refs[0], ID: a.ConfigDigest.String()})
			}
			s.logf("image archives: loaded %s into the nodes", filepath.Base(l.tar))
			continue
		}
		for _, a := range l.images {
			target := s.archiveTarget(a.Refs[0])
			d, err := images.Push(ctx, a.Image, target, opts)
			if err != nil {
				return err
			}
			s.logf("image archives: pushed %s as %s", a.Refs[0], d)
			s.envInfo.Images = append(s.envInfo.Images, report.ImageRan{Where: where + ", pushed", Image: target, ID: d.DigestStr()})
		}
	}
	return nil
}

// archiveTarget is where an archive's image ends up: its own name when
// loaded into nodes, <registry>/<name>:<tag> when pushed.
func (s *Suite) archiveTarget(ref string) string {
	if s.Cfg.Registry == "" {
		return ref
	}
	return s.Cfg.Registry + "/" + ref[strings.LastIndex(ref, "/")+1:]
}

// istioImageNames are the images Istio's charts name <hub>/<name>:<tag>.
var istioImageNames = []string{"pilot", "proxyv2", "install-cni", "ztunnel"}

// checkIstioRef refuses an Istio image whose hub or tag is not the one the
// charts will be given; other images pass.
func checkIstioRef(ref, hub, tag string) error {
	repo, t, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	for _, n := range istioImageNames {
		if repo != n {
			continue
		}
		if want := hub + "/" + n + ":" + tag; ref != want && !strings.HasPrefix(ref, want+"-") {
			return fmt.Errorf("Istio image %s would not be found: the charts will ask for %s (tag %q; set -istio-hub and -istio-tag to the archive's, e.g. -istio-hub=%s -istio-tag=%s)",
				ref, want, tag, strings.TrimSuffix(ref[:strings.LastIndex(ref, ":")], "/"+n), t)
		}
	}
	return nil
}

// istioHub is the hub the charts get: -istio-hub, else -image-registry
// when archives are pushed there, else docker.io/istio.
func (s *Suite) istioHub() string {
	switch {
	case s.Cfg.IstioHub != "":
		return s.Cfg.IstioHub
	case s.Cfg.ImageArchives != "" && s.Cfg.Registry != "":
		return s.Cfg.Registry
	}
	return istio.DefaultHub
}

// istioTag is the tag the charts get: -istio-tag, else the -istio-version.
func (s *Suite) istioTag() string {
	if s.Cfg.IstioTag != "" {
		return s.Cfg.IstioTag
	}
	return s.Cfg.IstioVersion
}

// recordIstioImages puts every container image Istio's pods run, with the
// image ID the node reports, into the environment.
func (s *Suite) recordIstioImages(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(s.Provider().RESTConfig())
	if err != nil {
		return err
	}
	// Beside a running Istio, the revision's pods alone: the other
	// Istio's images are in istio-found.json.
	sel := ""
	if s.Cfg.IstioRevision != "" {
		sel = istio.LabelRevision + "=" + s.Cfg.IstioRevision
	}
	pods, err := cs.CoreV1().Pods(istio.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("listing Istio's pods: %w", err)
	}
	for _, p := range pods.Items {
		for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			s.envInfo.Images = append(s.envInfo.Images, report.ImageRan{
				Where: "pod " + p.Namespace + "/" + p.Name + "/" + st.Name, Image: st.Image, ID: st.ImageID,
			})
		}
		if p.Labels["app"] == "ztunnel" && s.envInfo.Ztunnel == "" {
			s.envInfo.Ztunnel = ztunnelBuild(ctx, cs, p)
			s.logf("ztunnel: %s", s.envInfo.Ztunnel)
		}
	}
	return s.Results.SaveEnvironment(s.envInfo)
}

// ztunnelLogHead is how much of ztunnel's log is read for its BuildInfo,
// which it logs among its first lines.
const ztunnelLogHead = 64 << 10

// ztunnelBuild is what ztunnel pod p said of its build at start, or why it
// could not be read (the report says that instead).
func ztunnelBuild(ctx context.Context, cs kubernetes.Interface, p corev1.Pod) string {
	limit := int64(ztunnelLogHead)
	raw, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: istio.ZtunnelContainer, LimitBytes: &limit}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("build not read from pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	b, err := istio.ParseZtunnelBuild(string(raw))
	if err != nil {
		return fmt.Sprintf("build not read from pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	return b.String() + ", from pod " + p.Namespace + "/" + p.Name
}

// Environment is what the run's environment record says so far.
func (s *Suite) Environment() report.Environment { return s.envInfo }

// checkSidecarImage refuses, before Istio is installed, sidecar mode on the
// local provider when no archive holds the proxy image the injector will
// name: the node can pull nothing, so every sidecar pod would wait for an
// image forever and the run would fail only at the workloads' timeout.
func (s *Suite) checkSidecarImage(modes []mode.Mode) error {
	if s.Cfg.Provider != cluster.LocalName || !slices.Contains(modes, mode.Sidecar) {
		return nil
	}
	want := s.istioHub() + "/proxyv2:" + s.istioTag()
	for _, im := range s.envInfo.Images {
		if im.Image == want {
			return nil
		}
	}
	return fmt.Errorf("-mode=sidecar on -provider=local needs the proxy image %s in -image-archives (the node pulls from no registry; make istio-images writes proxyv2.tar: pilot-agent with upstream Envoy)", want)
}

// istioClusterValues are the provider's chart values and, on a cluster the
// suite did not create (-provider=existing), istiod's discovery limited to
// the run's namespaces and Istio's own. istiod writes its root certificate
// ConfigMap (istio-ca-root-cert) into every namespace it discovers, and
// nothing removes those after the run: on someone else's cluster that is
// a write into every team's namespace. The report says so beside the
// numbers (discoverySelectorsNote).
func (s *Suite) istioClusterValues() map[istio.Chart]map[string]any {
	out := clusterValues(s.Provider())
	if s.Cfg.Provider != "existing" {
		return out
	}
	if out == nil {
		out = map[istio.Chart]map[string]any{}
	}
	istiod := out[istio.ChartIstiod]
	if istiod == nil {
		istiod = map[string]any{}
	}
	istiod["meshConfig"] = map[string]any{"discoverySelectors": DiscoverySelectors(s.Cfg.RunID, istio.DefaultNamespace)}
	out[istio.ChartIstiod] = istiod
	s.note(discoverySelectorsNote(s.Cfg.RunID, istio.DefaultNamespace))
	return out
}

// DiscoverySelectors selects the run's namespaces (fixtures.LabelRun) and
// Istio's namespace, by the name label the API server puts on every
// namespace.
func DiscoverySelectors(run, istioNamespace string) []any {
	return []any{
		map[string]any{"matchLabels": map[string]any{fixtures.LabelRun: run}},
		map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": istioNamespace}},
	}
}

func discoverySelectorsNote(run, istioNamespace string) string {
	return fmt.Sprintf("istiod's meshConfig.discoverySelectors: namespaces labelled %s=%s and %s only (-provider=existing: "+
		"istiod writes istio-ca-root-cert into every namespace it discovers, and the cluster's other namespaces are not the suite's); "+
		"a default install discovers every namespace", fixtures.LabelRun, run, istioNamespace)
}
