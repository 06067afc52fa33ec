package setup

import (
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
	"github.com/meshclaims/meshclaims/framework/istioimages"
	"github.com/meshclaims/meshclaims/framework/report"
)

// proxyArchive is what a proxyv2 image from -image-archives says about its
// proxy (its labels), and the Istio commit it was built from.
type proxyArchive struct {
	info     istioimages.ProxyImageInfo
	revision string
}

// readProxyArchive returns the proxy of an archive's image when it is
// proxyv2, nil otherwise.
func readProxyArchive(a images.Archive) (*proxyArchive, error) {
	ref := a.Refs[0]
	name, _, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	if name != "proxyv2" {
		return nil, nil
	}
	cfg, err := a.Image.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", ref, err)
	}
	info, err := istioimages.ProxyInfoFromLabels(cfg.Config.Labels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	return &proxyArchive{info: info, revision: cfg.Config.Labels[images.LabelRevision]}, nil
}

// proxyKind is the proxy istiod is installed for: the archive's proxyv2
// says, and a run without one (kind, EKS: Istio's release images) keeps
// istio-proxy and istiod's defaults.
func proxyKind(pa *proxyArchive) istio.ProxyKind {
	if pa == nil {
		return istio.ProxyIstio
	}
	return pa.info.Kind
}

// noSidecarHBONE says why this run's sidecars accept no HBONE, or "" when
// they run as Istio's defaults make them (an installed istiod with the
// upstream-Envoy settings is the one case; -istio-install=skip leaves
// whatever the cluster's istiod does).
func (s *Suite) noSidecarHBONE() string {
	if istio.Method(s.Cfg.IstioInstall) == istio.MethodSkip || proxyKind(s.proxy).SidecarHBONE() {
		return ""
	}
	return "the sidecars are upstream Envoy (proxy kind " + string(istio.ProxyUpstreamEnvoy) + ") installed with PILOT_ENABLE_SIDECAR_LISTENING_HBONE=false and ISTIO_META_ENABLE_HBONE=false: no HBONE inbound, so ztunnel's calls into a sidecar pod are not answered as under Istio's ambient profile with istio-proxy"
}

// proxyRan is the environment's account of the proxy: the image the
// charts inject, its Envoy and pilot-agent, and istiod's settings for it.
func proxyRan(pa *proxyArchive, hub, tag, istioVersion string) *report.ProxyRan {
	kind := proxyKind(pa)
	pr := &report.ProxyRan{Kind: string(kind), Image: hub + "/proxyv2:" + tag, IstiodSettings: kind.IstiodSettings(), Waypoint: kind.WaypointAdaptations()}
	if pa == nil || kind == istio.ProxyIstio {
		pr.Envoy = "istio-proxy of Istio " + istioVersion + " (Istio's proxyv2 image)"
		if pa != nil {
			pr.IstioCommit = pa.revision
		}
		return pr
	}
	pr.IstioCommit = pa.revision
	pr.PilotAgent = pa.info.PilotAgentVersion
	pr.Envoy = pa.info.EnvoyVersion
	pr.EnvoySource = pa.info.EnvoySource
	return pr
}

// notInstalled rewrites pr for a run that installs no istiod
// (-istio-install=skip): istiod runs with whatever it was given, so its
// settings, the waypoint's among them, are not this run's; the waypoint's
// EnvoyFilters and the image's template still are.
func notInstalled(pr *report.ProxyRan) {
	pr.IstiodSettings = []string{"not set by this run (-istio-install=skip): the installed istiod's own"}
	for i, w := range pr.Waypoint {
		if strings.Contains(w, "AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT") {
			pr.Waypoint[i] = "istiod's AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT not set by this run (-istio-install=skip): upstream Envoy refuses the waypoint's inner_connect_originate unless the installed istiod has it false"
		}
	}
}
