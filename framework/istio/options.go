// Package istio installs Istio with Helm's Go SDK in the profile a mode
// needs (default for sidecar, ambient for ambient-l4/l7), installs the
// Gateway API CRDs waypoints need, waits for readiness, verifies the running
// version, uninstalls, and applies waypoints. It writes only through the
// pinned REST config it is given and checks the cluster guard before every
// phase that writes.
package istio

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
)

// DefaultVersion is the Istio version GUIDE measured.
const DefaultVersion = "1.30.2"

// DefaultRepoURL is Istio's Helm chart repository.
const DefaultRepoURL = "https://istio-release.storage.googleapis.com/charts"

// DefaultNamespace is where Istio's control plane, CNI and ztunnel run.
const DefaultNamespace = "istio-system"

// DefaultHub is where Istio's release images are published.
const DefaultHub = "docker.io/istio"

// Profile is an Istio Helm profile (the charts' `profile` value).
type Profile string

const (
	// ProfileDefault is sidecar mode: istiod injects envoy sidecars.
	ProfileDefault Profile = "default"
	// ProfileAmbient is ambient mode: istio-cni and ztunnel on every node.
	ProfileAmbient Profile = "ambient"
)

// ParseProfile accepts "default" and "ambient".
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(s); p {
	case ProfileDefault, ProfileAmbient:
		return p, nil
	}
	return "", fmt.Errorf("unknown Istio profile %q; accepted: %s, %s", s, ProfileDefault, ProfileAmbient)
}

// ProfileFor is the profile a mode needs. Mode none runs no Istio and has
// no profile.
func ProfileFor(m mode.Mode) (Profile, error) {
	switch {
	case m == mode.Sidecar:
		return ProfileDefault, nil
	case m.Ambient():
		return ProfileAmbient, nil
	case m == mode.None:
		return "", fmt.Errorf("mode %q runs no Istio, so it needs no profile; modes with a profile: %s, %s, %s",
			m, mode.Sidecar, mode.AmbientL4, mode.AmbientL7)
	}
	return "", fmt.Errorf("unknown mode %q; accepted: %s", m, mode.Accepted())
}

// ProfileForModes is the one profile that serves every meshed mode of a
// run. Ambient's profile also serves sidecar namespaces (GUIDE ran sidecar,
// ambient-l4 and ambient-l7 side by side in one ambient install:
// mtls.mixed-namespaces); sidecar-only runs get the default profile.
// A run of only mode none needs no Istio (ok false).
func ProfileForModes(modes []mode.Mode) (p Profile, ok bool, err error) {
	for _, m := range modes {
		if !m.Valid() {
			return "", false, fmt.Errorf("unknown mode %q; accepted: %s", m, mode.Accepted())
		}
		if !m.Meshed() {
			continue
		}
		mp, err := ProfileFor(m)
		if err != nil {
			return "", false, err
		}
		if !ok || mp == ProfileAmbient {
			p, ok = mp, true
		}
	}
	return p, ok, nil
}

var versionRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z][0-9A-Za-z.-]*)?$`)

// ParseVersion checks an Istio release version: MAJOR.MINOR.PATCH with an
// optional pre-release suffix, as Istio's image tags and chart versions
// spell it (no leading "v").
func ParseVersion(s string) (string, error) {
	if !versionRE.MatchString(s) {
		return "", fmt.Errorf("malformed Istio version %q; accepted: MAJOR.MINOR.PATCH such as %s, optionally with a pre-release suffix such as 1.31.0-beta.1 (no leading v)", s, DefaultVersion)
	}
	return s, nil
}

// Method is how Istio gets onto the cluster (-istio-install).
type Method string

const (
	// MethodHelm installs (or upgrades) with Helm's Go SDK.
	MethodHelm Method = "helm"
	// MethodSkip installs nothing: the cluster already has Istio. The
	// installed version is still verified.
	MethodSkip Method = "skip"
)

// ParseMethod accepts "helm" and "skip".
func ParseMethod(s string) (Method, error) {
	switch m := Method(s); m {
	case MethodHelm, MethodSkip:
		return m, nil
	}
	return "", fmt.Errorf("unknown -istio-install=%q; accepted: %s, %s", s, MethodHelm, MethodSkip)
}

// Options configures an Installer.
type Options struct {
	Profile Profile
	// Version is the Istio version to install and to find running.
	Version string
	Method  Method
	// Charts is where the charts come from.
	Charts ChartSource
	// ValuesFile optionally holds per-chart values, keyed by chart name
	// (base, istiod, cni, ztunnel); see testdata/istio/values.yaml.
	ValuesFile string
	// Namespace defaults to istio-system.
	Namespace string
	// Hub is the image registry, default docker.io/istio.
	Hub string
	// GatewayCRDDir holds the Gateway API standard-channel CRDs; default
	// GatewayAPICRDDir (the pinned GatewayAPIVersion, not the version of
	// the Go types this suite is built with).
	GatewayCRDDir string
	// Timeout bounds the wait for each chart's readiness (default 5m).
	Timeout time.Duration

	// Tag is the image tag (global.tag); empty means Version. A mirror or
	// a build from source (make istio-images) tags its images its own way.
	Tag string
	// ClusterValues are per-chart values the cluster itself needs (the
	// local provider: its CNI directories, one small istiod), merged under
	// the ValuesFile's.
	ClusterValues map[Chart]map[string]any
	// ExactImages says Istio's images are named exactly <Hub>/<image>:<Tag>
	// (image archives packed that way), without the variant a profile
	// selects (ambient's distroless). The charts then get full image
	// references, which they use as given: a variant cannot be cleared
	// through values, since the charts merge the profile with
	// mustMergeOverwrite, which skips empty strings.
	ExactImages bool
	// TerminatingNamespaceIsGone counts Istio's namespace as removed once
	// it is being deleted: under envtest no namespace controller empties
	// it. A real cluster leaves it false.
	TerminatingNamespaceIsGone bool
	// Proxy is the Envoy build the proxyv2 image carries; empty is
	// ProxyIstio. ProxyUpstreamEnvoy adds UpstreamEnvoyIstiodValues to
	// istiod's values.
	Proxy ProxyKind
	// Revision installs the qualified release beside an Istio already
	// running (Istio's canary upgrade): only the istiod chart, as release
	// istiod-<Revision> with revision <Revision>, adopting nothing. Istio's
	// CRDs, its namespace, the default revision and revision tags stay the
	// running Istio's. Empty installs the profile's every chart.
	Revision string
}

// revisionRE is a revision name as Istio accepts it: a DNS label (it
// becomes part of object names, istiod-<rev>, and a label value).
var revisionRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ParseRevision checks an -istio-revision value.
func ParseRevision(s string) (string, error) {
	switch {
	case s == "":
		return "", nil
	case s == "default":
		return "", fmt.Errorf("-istio-revision=%q: %q is the name of the default revision, which belongs to the Istio already running; accepted: a revision name of your own such as canary or 1-30-3", s, s)
	case len(s) > 40 || !revisionRE.MatchString(s):
		return "", fmt.Errorf("-istio-revision=%q: accepted: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 40 characters (it becomes istiod-<name>), such as canary or 1-30-3", s)
	}
	return s, nil
}

// InstallCharts are the charts an install writes, in order: the
// profile's, or for a revision beside a running Istio, istiod alone (that
// Istio's CRDs, CNI and ztunnel stay its own).
func (o Options) InstallCharts() ([]Chart, error) {
	if o.Revision != "" {
		return []Chart{ChartIstiod}, nil
	}
	return ChartsFor(o.Profile)
}

// ReleaseOf is the Helm release chart c is installed as: the names Istio's
// Helm documentation uses, istiod-<revision> for a revision's istiod.
func (o Options) ReleaseOf(c Chart) string {
	if c == ChartIstiod && o.Revision != "" {
		return "istiod-" + o.Revision
	}
	return c.Release()
}

// ImageTag is the tag Istio's images are installed and verified with.
func (o Options) ImageTag() string {
	if o.Tag != "" {
		return o.Tag
	}
	if o.Version == "" {
		return DefaultVersion
	}
	return o.Version
}

func (o Options) withDefaults() Options {
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.Method == "" {
		o.Method = MethodHelm
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Hub == "" {
		o.Hub = DefaultHub
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Charts == (ChartSource{}) {
		o.Charts = ChartSource{RepoURL: DefaultRepoURL}
	}
	return o
}

// Validate checks every option and names the bad value.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []string
	if _, err := ParseProfile(string(o.Profile)); err != nil {
		errs = append(errs, err.Error())
	}
	if _, err := ParseVersion(o.Version); err != nil {
		errs = append(errs, err.Error())
	}
	if _, err := ParseMethod(string(o.Method)); err != nil {
		errs = append(errs, err.Error())
	}
	if err := o.Charts.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if _, err := ParseProxyKind(string(o.Proxy)); err != nil {
		errs = append(errs, err.Error())
	}
	if _, err := ParseRevision(o.Revision); err != nil {
		errs = append(errs, err.Error())
	}
	if o.Revision != "" && o.Profile != ProfileDefault {
		errs = append(errs, fmt.Sprintf("-istio-revision=%q with profile %s: a revision installs istiod only, for sidecar mode; ambient's ztunnel and istio-cni run one per node and cannot run beside another's", o.Revision, o.Profile))
	}
	for c := range o.ClusterValues {
		if _, ok := sourceTreeDirs[c]; !ok {
			errs = append(errs, fmt.Sprintf("cluster values for unknown chart %q; accepted: base, istiod, cni, ztunnel", c))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("istio options: %s", strings.Join(errs, "; "))
	}
	return nil
}
