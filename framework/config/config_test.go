package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/mode"
)

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

func parse(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return c, c.Validate(repoRoot(), time.Date(2026, 11, 29, 21, 48, 0, 0, time.UTC))
}

func TestDefaults(t *testing.T) {
	c, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Modes) != 1 || c.Modes[0] != mode.AmbientL4 || c.IstioVersion != "1.30.2" || c.Timeouts.RolloutComplete != time.Minute {
		t.Fatalf("defaults: %+v", c)
	}
	if c.RunID != "20261129-214800" || c.ResultsDir != filepath.Join(repoRoot(), "results", "20261129-214800") {
		t.Fatalf("run dir: %s %s", c.RunID, c.ResultsDir)
	}
}

func TestRejectsBadValues(t *testing.T) {
	cases := map[string][]string{
		`unknown mode "bogus"`: {"-mode=bogus"},
		`-provider="docker" is not known; accepted: kind, existing, local`: {"-provider=docker"},
		`-istio-install="operator"`:                                        {"-istio-install=operator"},
		`-istio-version="latest"`:                                          {"-istio-version=latest"},
		`-repeats=0`:                                                       {"-repeats=0"},
		`-filter-chain-drain-timeout=100ms must be at least the poll interval 1s`: {"-filter-chain-drain-timeout=100ms"},
		`-duration-scale=0`:                  {"-duration-scale=0"},
		`apply to -provider=existing only`:   {"-context=prod"},
		`-cluster-name="Mesh_Claims"`:        {"-cluster-name=Mesh_Claims"},
		`-claims="/nonexistent/claims.yaml"`: {"-claims=/nonexistent/claims.yaml"},
		`-istio-charts="/nonexistent"`:       {"-istio-charts=/nonexistent"},
		// A digest that is not 64 hex digits, and an upper-case repository.
		`-kind-node-image="kindest/node:v1.36.4@sha256:099e" is not an image reference`:  {"-kind-node-image=kindest/node:v1.36.4@sha256:099e"},
		`-kind-node-image="Kindest/Node:v1.36.4" is not an image reference`:              {"-kind-node-image=Kindest/Node:v1.36.4"},
		`-kind-node-image applies to -provider=kind only`:                                {"-provider=existing", "-kind-node-image=kindest/node:v1.36.4"},
		`-kind-config applies to -provider=kind only`:                                    {"-provider=local", "-kind-config=testdata/kind/podman.yaml"},
		`-kind-kube-proxy-mode="none"; accepted: iptables, ipvs, nftables`:               {"-kind-kube-proxy-mode=none"},
		`-kind-kube-proxy-mode="IPVS"; accepted: iptables, ipvs, nftables`:               {"-kind-kube-proxy-mode=IPVS"},
		`-kind-kube-proxy-mode applies to -provider=kind only`:                           {"-provider=existing", "-kind-kube-proxy-mode=ipvs"},
		`-netpol-enable-command applies to -provider=existing only (got -provider=kind)`: {"-netpol-enable-command=true"},
		`-netpol-enable-command="  " is blank; accepted: one sh command line`:            {"-provider=existing", "-netpol-enable-command=  "},
		// The JSON's closing quote forgotten: sh cannot parse it.
		`-netpol-enable-command="aws eks update-addon --configuration-values '{\"enableNetworkPolicy\":\"true\"}" is not a command line sh can parse`: {"-provider=existing", `-netpol-enable-command=aws eks update-addon --configuration-values '{"enableNetworkPolicy":"true"}`},
		`-netpol-enable-timeout=0s must be positive`:                                                          {"-netpol-enable-timeout=0"},
		`-netpol-enforcer applies to -provider=existing only (got -provider=local)`:                           {"-provider=local", "-netpol-enforcer=calico"},
		`-netpol-enforcer="  " is blank; accepted: the enforcer's name`:                                       {"-provider=existing", "-netpol-enforcer=  "},
		`-concurrent-modes needs two or more modes to run at once, got -mode=sidecar; accepted: a comma list`: {"-mode=sidecar", "-concurrent-modes"},
		`-concurrent-modes needs two or more modes to run at once, got -mode=none,none`:                       {"-mode=none,none", "-concurrent-modes"},
		`-istio-revision="Canary": accepted: lower-case letters`:                                              {"-mode=sidecar", "-istio-revision=Canary"},
		`-istio-revision="default": "default" is the name of the default revision`:                            {"-mode=sidecar", "-istio-revision=default"},
		`-istio-revision="qual" with -istio-install=skip`:                                                     {"-mode=sidecar", "-istio-revision=qual", "-istio-install=skip"},
		`-istio-revision="qual" with -mode ambient-l4: a revision is for sidecar mode`:                        {"-mode=sidecar,ambient-l4", "-istio-revision=qual"},
	}
	for want, args := range cases {
		_, err := parse(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v does not contain %q", args, err, want)
		}
	}
}

// Positive control for the rejections above: references kind accepts (by
// digest as its release notes list them, by tag, or a locally built image)
// pass and are kept as given.
func TestAcceptsKindNodeImages(t *testing.T) {
	for _, ref := range []string{
		"kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
		"kindest/node:v1.35.8",
		"registry.example.com:5000/me/node:dev",
	} {
		c, err := parse(t, "-kind-node-image="+ref)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			continue
		}
		if c.KindNodeImage != ref {
			t.Errorf("KindNodeImage = %q, want %q", c.KindNodeImage, ref)
		}
	}
}

// Positive control for -concurrent-modes' rejection: two modes or all
// pass; off by default.
func TestAcceptsConcurrentModes(t *testing.T) {
	if c, err := parse(t); err != nil || c.ConcurrentModes {
		t.Fatalf("default: %v, ConcurrentModes %v; want off", err, c.ConcurrentModes)
	}
	for _, m := range []string{"none,sidecar", "all"} {
		c, err := parse(t, "-mode="+m, "-concurrent-modes")
		if err != nil || !c.ConcurrentModes {
			t.Errorf("-mode=%s -concurrent-modes: %v", m, err)
		}
	}
}

// Positive control for -istio-revision's rejections: a revision name with
// the sidecar and none modes passes and is kept; none by default.
func TestAcceptsIstioRevision(t *testing.T) {
	if c, err := parse(t, "-mode=sidecar"); err != nil || c.IstioRevision != "" {
		t.Fatalf("default: %v, IstioRevision %q; want none", err, c.IstioRevision)
	}
	c, err := parse(t, "-mode=none,sidecar", "-istio-revision=1-30-3")
	if err != nil || c.IstioRevision != "1-30-3" {
		t.Errorf("-istio-revision=1-30-3: %v, kept %q", err, c.IstioRevision)
	}
}

func TestScale(t *testing.T) {
	c, _ := parse(t, "-duration-scale=0.01")
	if got := c.Scale(600*time.Second, 10*time.Second); got != 10*time.Second {
		t.Fatalf("600s x 0.01 with a 10s floor = %v", got)
	}
	if got := c.Scale(60*time.Minute, time.Second); got != 36*time.Second {
		t.Fatalf("1h x 0.01 = %v", got)
	}
}

// controller-runtime defines -kubeconfig on the command line when linked in;
// Register must share it, not panic.
func TestSharesAnExistingKubeconfigFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("kubeconfig", "", "someone else's")
	c := Register(fs)
	if err := fs.Parse([]string{"-provider=existing", "-kubeconfig=kubeconfigs/qual.yaml"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(repoRoot(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if c.Kubeconfig != "kubeconfigs/qual.yaml" {
		t.Fatalf("kubeconfig = %q", c.Kubeconfig)
	}
}

// -istio-values: the provider's default, an explicit file, none, and the
// failures a user can make, each naming the value before any cluster exists.
func TestIstioValues(t *testing.T) {
	smallRequests := filepath.Join(repoRoot(), "testdata", "istio", "values.yaml")
	for _, p := range []string{"kind", "local"} {
		c, err := parse(t, "-provider="+p)
		if err != nil {
			t.Fatal(err)
		}
		if c.IstioValues != smallRequests {
			t.Errorf("-provider=%s: values %q, want %s", p, c.IstioValues, smallRequests)
		}
	}
	c, err := parse(t, "-provider=existing")
	if err != nil || c.IstioValues != "" {
		t.Errorf("-provider=existing: values %q (%v), want none: an EKS cluster keeps the charts' requests", c.IstioValues, err)
	}
	eks := filepath.Join(repoRoot(), "testdata", "istio", "values-eks-arm64.yaml")
	if c, err := parse(t, "-provider=existing", "-istio-values="+eks); err != nil || c.IstioValues != eks {
		t.Errorf("explicit file: %q, %v", c.IstioValues, err)
	}
	if c, err := parse(t, "-istio-values=none"); err != nil || c.IstioValues != "" {
		t.Errorf("-istio-values=none on kind: %q, %v", c.IstioValues, err)
	}

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notYAML := write("broken.yaml", "istiod:\n  resources: [unclosed\n")
	typo := write("typo.yaml", "istio-discovery:\n  replicaCount: 1\n")
	missing := filepath.Join(dir, "absent.yaml")
	for path, want := range map[string]string{
		missing: "no such file",
		notYAML: "yaml",
		typo:    `unknown chart "istio-discovery"`,
	} {
		_, err := parse(t, "-istio-values="+path)
		if err == nil || !strings.Contains(err.Error(), `-istio-values="`+path+`"`) || !strings.Contains(err.Error(), want) {
			t.Errorf("-istio-values=%s: error %v, want it to name the value and say %q", path, err, want)
		}
	}
}

// -images was never read (the workload image is always built from this
// checkout, so its digest names the code that ran); it is gone rather than
// silently ignored.
func TestImagesFlagIsGone(t *testing.T) {
	if _, err := parse(t, "-images="+t.TempDir()); err == nil || !strings.Contains(err.Error(), "-images") {
		t.Fatalf("-images accepted (%v) though nothing uses it", err)
	}
}

func TestImageSourceFlags(t *testing.T) {
	archives := t.TempDir()
	if err := os.WriteFile(filepath.Join(archives, "pilot.tar"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := parse(t, "-istio-hub=localhost/istio", "-istio-tag=1.30.3-dev", "-image-archives="+archives, "-provider=local")
	if err != nil {
		t.Fatal(err)
	}
	if c.IstioHub != "localhost/istio" || c.IstioTag != "1.30.3-dev" || c.ImageArchives != archives {
		t.Fatalf("parsed %q %q %q", c.IstioHub, c.IstioTag, c.ImageArchives)
	}
	if c, err := parse(t); err != nil || c.IstioHub != "" || c.IstioTag != "" || c.ImageArchives != "" {
		t.Fatalf("defaults: %v %+v", err, c)
	}
	empty := t.TempDir()
	cases := map[string][]string{
		`-istio-hub="Docker.io/Istio" is not an image repository prefix; accepted:`: {"-istio-hub=Docker.io/Istio"},
		`-istio-hub="docker.io/istio:1.30"`:                                         {"-istio-hub=docker.io/istio:1.30"},
		`-istio-tag="1.30/2" is not an image tag; accepted:`:                        {"-istio-tag=1.30/2"},
		`-istio-tag="-dev"`: {"-istio-tag=-dev"},
		`-image-archives="/nonexistent-meshclaims" is not a directory`:  {"-image-archives=/nonexistent-meshclaims"},
		`holds no *.tar image archive`:                                  {"-image-archives=" + empty},
		`-image-archives with -provider=existing needs -image-registry`: {"-image-archives=" + archives, "-provider=existing"},
	}
	for want, args := range cases {
		_, err := parse(t, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want it to contain %q", args, err, want)
		}
	}
	if _, err := parse(t, "-image-archives="+archives, "-provider=existing", "-image-registry=registry.example.com/mirror"); err != nil {
		t.Errorf("archives pushed to a registry of an existing cluster: %v", err)
	}
}

// Positive control for the kube-proxy mode rejections: each mode kind runs
// passes and is kept.
func TestAcceptsKindKubeProxyModes(t *testing.T) {
	for _, m := range []string{"iptables", "ipvs", "nftables"} {
		c, err := parse(t, "-kind-kube-proxy-mode="+m)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if c.KindKubeProxyMode != m {
			t.Errorf("KindKubeProxyMode = %q, want %q", c.KindKubeProxyMode, m)
		}
	}
}

// Positive control for the -netpol-enable-command rejections: GUIDE's own
// command (appendix E) with a wait after it parses on an existing cluster
// and is kept as given, unrun.
func TestAcceptsNetPolEnableCommand(t *testing.T) {
	cmd := `aws eks update-addon --cluster-name mesh-isolated-test --addon-name vpc-cni --region ap-northeast-2 --configuration-values '{"enableNetworkPolicy":"true"}' --resolve-conflicts OVERWRITE && aws eks wait addon-active --cluster-name mesh-isolated-test --addon-name vpc-cni --region ap-northeast-2`
	c, err := parse(t, "-provider=existing", "-netpol-enable-command="+cmd)
	if err != nil {
		t.Fatal(err)
	}
	if c.NetPolEnableCommand != cmd || c.Timeouts.NetPolEnable != 15*time.Minute {
		t.Errorf("NetPolEnableCommand = %q, timeout %s", c.NetPolEnableCommand, c.Timeouts.NetPolEnable)
	}
}

// A -run-id whose directory holds a run is refused unless -overwrite, which
// deletes it; an absent or empty directory is taken as it is.
func TestClaimResultsDir(t *testing.T) {
	root := t.TempDir()
	c, err := parse(t, "-results="+root, "-run-id=r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ClaimResultsDir(); err != nil {
		t.Fatalf("absent directory refused: %v", err)
	}
	if err := os.MkdirAll(c.ResultsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.ClaimResultsDir(); err != nil {
		t.Fatalf("empty directory refused: %v", err)
	}
	if err := os.WriteFile(filepath.Join(c.ResultsDir, "environment.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = c.ClaimResultsDir()
	if err == nil || !strings.Contains(err.Error(), `-run-id="r1"`) || !strings.Contains(err.Error(), "already holds a run") || !strings.Contains(err.Error(), "-overwrite") {
		t.Fatalf("earlier run not refused: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.ResultsDir, "environment.json")); err != nil {
		t.Fatalf("a refused run touched the earlier one: %v", err)
	}
	c, err = parse(t, "-results="+root, "-run-id=r1", "-overwrite")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ClaimResultsDir(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.ResultsDir); !os.IsNotExist(err) {
		t.Fatalf("-overwrite left the earlier run: %v", err)
	}
}

// -requirements is read and validated with the other flags, before any
// cluster work: a good file is kept parsed, a bad one is refused naming the
// flag, the file's line and field, and what the field accepts.
func TestRequirementsFlag(t *testing.T) {
	good := filepath.Join(repoRoot(), "testdata", "requirements", "tiers.yaml")
	c, err := parse(t, "-requirements", good)
	if err != nil || c.Requirements == nil || len(c.Requirements.Tiers) != 2 || c.Requirements.Tiers[0].Name != "edge-api" {
		t.Fatalf("good file: %v, %+v", err, c)
	}
	c, err = parse(t)
	if err != nil || c.Requirements != nil {
		t.Fatalf("no flag: %v, %+v", err, c.Requirements)
	}
	bad := filepath.Join(t.TempDir(), "tiers.yaml")
	os.WriteFile(bad, []byte("version: 1\ntiers:\n  - name: api\n    networkpolicy: closed\n"), 0o644)
	_, err = parse(t, "-requirements", bad)
	if err == nil || !strings.Contains(err.Error(), `-requirements="`+bad+`": `+bad+`:4: tier "api": field "networkpolicy": "closed" is not known; accepted: existing-rules, hbone-allowed or any`) {
		t.Fatalf("bad file: %v", err)
	}
	_, err = parse(t, "-requirements", filepath.Join(t.TempDir(), "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("absent file: %v", err)
	}
}
