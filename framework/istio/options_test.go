package istio

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/mode"
)

func TestProfileForEachMode(t *testing.T) {
	want := map[mode.Mode]Profile{mode.Sidecar: ProfileDefault, mode.AmbientL4: ProfileAmbient, mode.AmbientL7: ProfileAmbient}
	for m, p := range want {
		got, err := ProfileFor(m)
		if err != nil || got != p {
			t.Errorf("ProfileFor(%s) = %q, %v; want %q", m, got, err, p)
		}
	}
	if _, err := ProfileFor(mode.None); err == nil {
		t.Error("mode none got a profile; it runs no Istio")
	}
	if _, err := ProfileFor("ambient-l9"); err == nil || !strings.Contains(err.Error(), `"ambient-l9"`) {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestProfileForModes(t *testing.T) {
	cases := []struct {
		modes []mode.Mode
		want  Profile
		ok    bool
	}{
		{[]mode.Mode{mode.None}, "", false},
		{[]mode.Mode{mode.None, mode.Sidecar}, ProfileDefault, true},
		{[]mode.Mode{mode.Sidecar, mode.AmbientL4}, ProfileAmbient, true},
		{[]mode.Mode{mode.AmbientL7, mode.Sidecar}, ProfileAmbient, true},
		{mode.All(), ProfileAmbient, true},
	}
	for _, c := range cases {
		p, ok, err := ProfileForModes(c.modes)
		if err != nil || p != c.want || ok != c.ok {
			t.Errorf("ProfileForModes(%v) = %q, %v, %v; want %q, %v", c.modes, p, ok, err, c.want, c.ok)
		}
	}
}

func TestParseRejectsWithTheBadValue(t *testing.T) {
	if _, err := ParseProfile("minimal"); err == nil || !strings.Contains(err.Error(), `"minimal"`) || !strings.Contains(err.Error(), "default, ambient") {
		t.Errorf("ParseProfile: %v", err)
	}
	for _, bad := range []string{"", "v1.30.2", "1.30", "latest", "1.30.2.1", "01.30.2", "1.30.x"} {
		if _, err := ParseVersion(bad); err == nil || !strings.Contains(err.Error(), "malformed") || !strings.Contains(err.Error(), "1.30.2") {
			t.Errorf("ParseVersion(%q) = %v, want a malformed-version error", bad, err)
		}
	}
	for _, good := range []string{"1.30.2", "1.31.0-beta.1", "1.0.0"} {
		if _, err := ParseVersion(good); err != nil {
			t.Errorf("ParseVersion(%q): %v", good, err)
		}
	}
	if _, err := ParseMethod("istioctl"); err == nil || !strings.Contains(err.Error(), `"istioctl"`) {
		t.Errorf("ParseMethod: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Profile: ProfileAmbient, Charts: ChartSource{RepoURL: DefaultRepoURL}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	bad := Options{Profile: "ambiant", Version: "1.30", Charts: ChartSource{RepoURL: "x", Dir: t.TempDir()}}
	err := bad.Validate()
	for _, want := range []string{`"ambiant"`, `"1.30"`, "exactly one"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v does not name %s", err, want)
		}
	}
	if err := (ChartSource{Dir: "/does/not/exist"}).Validate(); err == nil || !strings.Contains(err.Error(), "/does/not/exist") {
		t.Errorf("missing dir: %v", err)
	}
}

func TestChartsFor(t *testing.T) {
	d, _ := ChartsFor(ProfileDefault)
	a, _ := ChartsFor(ProfileAmbient)
	if len(d) != 2 || d[0] != ChartBase || d[1] != ChartIstiod {
		t.Errorf("default charts %v", d)
	}
	if len(a) != 4 || a[2] != ChartCNI || a[3] != ChartZtunnel {
		t.Errorf("ambient charts %v", a)
	}
	if _, err := ChartsFor("demo"); err == nil {
		t.Error("unknown profile got charts")
	}
}

func TestCheckImageVersions(t *testing.T) {
	good := map[string]string{
		"deployment/istiod/discovery":   "docker.io/istio/pilot:1.30.2",
		"daemonset/ztunnel/istio-proxy": "docker.io/istio/ztunnel:1.30.2-distroless",
		"daemonset/cni/install-cni":     "localhost:5000/istio/install-cni:1.30.2@sha256:abc",
	}
	if err := CheckImageVersions(good, "1.30.2"); err != nil {
		t.Errorf("matching images refused: %v", err)
	}
	// Negative controls: each must make the check fire.
	for name, img := range map[string]string{
		"other patch":     "docker.io/istio/pilot:1.30.1",
		"pre-release":     "docker.io/istio/pilot:1.30.2-beta.1",
		"latest":          "docker.io/istio/pilot:latest",
		"digest only":     "docker.io/istio/pilot@sha256:abc",
		"registry port":   "localhost:5000/istio/pilot",
		"prefix of other": "docker.io/istio/pilot:1.30.20",
	} {
		err := CheckImageVersions(map[string]string{"deployment/istiod/discovery": img}, "1.30.2")
		if err == nil || !strings.Contains(err.Error(), img) {
			t.Errorf("%s: %s accepted as 1.30.2 (err %v)", name, img, err)
		}
	}
	if err := CheckImageVersions(nil, "1.30.2"); err == nil {
		t.Error("no workloads accepted")
	}
}

func TestLoadValuesFile(t *testing.T) {
	v, err := LoadValuesFile(repoFile(t, "testdata/istio/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v[ChartIstiod]["autoscaleEnabled"]; !ok {
		t.Errorf("istiod values lost: %v", v)
	}
	if _, err := LoadValuesFile(repoFile(t, "testdata/istio/values-eks-arm64.yaml")); err != nil {
		t.Error(err)
	}
	bad := writeTemp(t, "istio-discovery:\n  pilot: {}\n")
	if _, err := LoadValuesFile(bad); err == nil || !strings.Contains(err.Error(), `"istio-discovery"`) {
		t.Errorf("unknown chart key: %v", err)
	}
}

func TestValuesSetProfileAndVersion(t *testing.T) {
	o := Options{Profile: ProfileAmbient, Version: "1.30.2"}
	v := Values(ChartIstiod, o, map[string]any{"global": map[string]any{"hub": "my.registry/istio"}, "pilot": map[string]any{"replicaCount": 2}})
	g := v["global"].(map[string]any)
	if v["profile"] != "ambient" || g["tag"] != "1.30.2" || v["tag"] != "1.30.2" {
		t.Errorf("values %v", v)
	}
	if g["hub"] != "my.registry/istio" || g["istioNamespace"] != DefaultNamespace {
		t.Errorf("user values not merged over defaults: %v", g)
	}
}

// A build from source or a mirror sets its own tag and hub; the cluster's
// values sit under the user's, and merging leaves the Options untouched.
func TestValuesTagAndClusterValues(t *testing.T) {
	cluster := map[Chart]map[string]any{
		ChartIstiod: {"autoscaleEnabled": false, "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}},
		ChartCNI:    {"cniBinDir": "/usr/lib/cni"},
	}
	o := Options{Profile: ProfileDefault, Version: "1.30.3-dev", Tag: "1.30.3-dev-local", Hub: "localhost/istio", ClusterValues: cluster}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	v := Values(ChartIstiod, o, map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "200m"}}})
	g := v["global"].(map[string]any)
	if g["tag"] != "1.30.3-dev-local" || v["tag"] != "1.30.3-dev-local" || g["hub"] != "localhost/istio" {
		t.Errorf("tag/hub: %v", v)
	}
	if v["autoscaleEnabled"] != false {
		t.Errorf("cluster values lost: %v", v)
	}
	if cpu := v["resources"].(map[string]any)["requests"].(map[string]any)["cpu"]; cpu != "200m" {
		t.Errorf("user value did not win over the cluster's: cpu %v", cpu)
	}
	if cpu := cluster[ChartIstiod]["resources"].(map[string]any)["requests"].(map[string]any)["cpu"]; cpu != "100m" {
		t.Errorf("merging wrote into Options.ClusterValues: cpu %v", cpu)
	}
	if got := (Options{Version: "1.30.2"}).ImageTag(); got != "1.30.2" {
		t.Errorf("ImageTag without Tag = %q, want the version", got)
	}
	bad := o
	bad.ClusterValues = map[Chart]map[string]any{"istio-discovery": {}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `"istio-discovery"`) {
		t.Errorf("cluster values for an unknown chart: %v", err)
	}
}
