package istio

import (
	"strings"
	"testing"
)

// The log line as ztunnel 1.30 writes it: kubelet's timestamp, then
// tracing's own, level and target, then src/version.rs's Display form.
// The first is the hand-built ztunnel of this project's trial run (built
// outside a git tree, so every build field is "unknown").
const (
	handBuiltZtunnelLog = "2026-12-01T11:51:25.541596893Z 2026-12-01T11:51:25.541204Z\tinfo\tztunnel\tversion: version.BuildInfo{Version:\"unknown\", GitRevision:\"unknown\", RustVersion:\"1.95.0\", BuildProfile:\"release\", BuildStatus:\"Modified\", IstioVersion:\"unknown\", CryptoProvider:\"tls-aws-lc\"}\t\n" +
		"2026-12-01T11:51:25.541700000Z 2026-12-01T11:51:25.541650Z\tinfo\tapp\tin-pod mode enabled\n"
	releaseZtunnelLine = "2026-11-20T08:00:00.000000000Z 2026-11-20T08:00:00.000000Z\tinfo\tztunnel\tversion: version.BuildInfo{Version:\"1.30.2\", GitRevision:\"0123456789abcdef0123456789abcdef01234567\", RustVersion:\"1.90.0\", BuildProfile:\"release\", BuildStatus:\"Clean\", IstioVersion:\"1.30.2\", CryptoProvider:\"tls-aws-lc\"}\t\n"
)

func TestParseZtunnelBuild(t *testing.T) {
	b, err := ParseZtunnelBuild(handBuiltZtunnelLog)
	if err != nil {
		t.Fatal(err)
	}
	want := ZtunnelBuild{Version: "unknown", GitRevision: "unknown", RustVersion: "1.95.0", BuildProfile: "release", BuildStatus: "Modified", IstioVersion: "unknown", CryptoProvider: "tls-aws-lc"}
	if b != want {
		t.Errorf("got %+v, want %+v", b, want)
	}
	if s := b.String(); s != "ztunnel unknown (git unknown, Modified, release, Rust 1.95.0, tls-aws-lc)" {
		t.Errorf("String() = %q", s)
	}
	r, err := ParseZtunnelBuild(releaseZtunnelLine + releaseZtunnelLine)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "1.30.2" || !strings.Contains(r.String(), "git 0123456789abcdef") || !strings.Contains(r.String(), "Istio 1.30.2") {
		t.Errorf("release ztunnel: %+v, %s", r, r)
	}
	// Negative controls: a log without the line (rotated, or not ztunnel's),
	// and a BuildInfo that lacks what identifies the build.
	for _, bad := range []string{
		"",
		"2026-12-01T11:51:25Z info app in-pod mode enabled\n",
		`version: version.BuildInfo{RustVersion:"1.95.0"}`,
	} {
		if _, err := ParseZtunnelBuild(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
