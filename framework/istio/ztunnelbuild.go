package istio

import (
	"fmt"
	"regexp"
	"strings"
)

// ZtunnelBuild is what a running ztunnel says of itself when it starts:
// ztunnel's main logs `version: <BuildInfo>` once (src/main.rs), in the
// Display form of src/version.rs:
//
//	version.BuildInfo{Version:"1.30.2", GitRevision:"…", RustVersion:"1.90.0", BuildProfile:"release", BuildStatus:"Clean", IstioVersion:"1.30.2", CryptoProvider:"tls-aws-lc"}
//
// The image's tag says which ztunnel was asked for; this says which one ran,
// and for a hand-built binary it is the only record of its build.
type ZtunnelBuild struct {
	Version, GitRevision, RustVersion, BuildProfile, BuildStatus, IstioVersion, CryptoProvider string
}

// ZtunnelContainer is the ztunnel chart's container name.
const ZtunnelContainer = "istio-proxy"

var (
	ztunnelBuildInfo  = regexp.MustCompile(`version\.BuildInfo\{([^}]*)\}`)
	ztunnelBuildField = regexp.MustCompile(`(\w+):"([^"]*)"`)
)

// ParseZtunnelBuild finds ztunnel's BuildInfo in its log (the first one, as
// a restarted container's log starts again with its own).
func ParseZtunnelBuild(log string) (ZtunnelBuild, error) {
	m := ztunnelBuildInfo.FindStringSubmatch(log)
	if m == nil {
		return ZtunnelBuild{}, fmt.Errorf("istio: no ztunnel version.BuildInfo{...} line in %d bytes of log (ztunnel logs it once at start; a log rotated since holds none)", len(log))
	}
	var b ZtunnelBuild
	fields := map[string]*string{"Version": &b.Version, "GitRevision": &b.GitRevision, "RustVersion": &b.RustVersion,
		"BuildProfile": &b.BuildProfile, "BuildStatus": &b.BuildStatus, "IstioVersion": &b.IstioVersion, "CryptoProvider": &b.CryptoProvider}
	for _, f := range ztunnelBuildField.FindAllStringSubmatch(m[1], -1) {
		if p, ok := fields[f[1]]; ok {
			*p = f[2]
		}
	}
	if b.Version == "" || b.GitRevision == "" {
		return ZtunnelBuild{}, fmt.Errorf("istio: ztunnel BuildInfo without Version or GitRevision: %s", m[0])
	}
	return b, nil
}

// String is the report's line, e.g. "ztunnel 1.30.2 (git 1a2b3c4, Clean,
// release, Rust 1.90.0, tls-aws-lc)". "unknown" is what a build outside
// ztunnel's git tree says: the report shows it as it is.
func (b ZtunnelBuild) String() string {
	var parts []string
	add := func(label, v string) {
		if v != "" {
			parts = append(parts, label+v)
		}
	}
	add("git ", b.GitRevision)
	add("", b.BuildStatus)
	add("", b.BuildProfile)
	add("Rust ", b.RustVersion)
	add("", b.CryptoProvider)
	if b.IstioVersion != "" && b.IstioVersion != "unknown" {
		add("Istio ", b.IstioVersion)
	}
	return fmt.Sprintf("ztunnel %s (%s)", b.Version, strings.Join(parts, ", "))
}
