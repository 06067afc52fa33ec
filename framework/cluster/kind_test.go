package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	yaml "go.yaml.in/yaml/v3"
	kinddefaults "sigs.k8s.io/kind/pkg/apis/config/defaults"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/meshclaims/meshclaims/framework/images"
)

func TestShippedKindConfigLoads(t *testing.T) {
	path, err := findUp(DefaultKindConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadKindConfig(path)
	if err != nil {
		t.Fatalf("shipped kind config rejected: %v", err)
	}
	if cfg.Networking.DisableDefaultCNI {
		t.Error("shipped config disables kindnet, the NetworkPolicy-enforcing CNI")
	}
	roles := map[string]int{}
	for _, n := range cfg.Nodes {
		roles[string(n.Role)]++
	}
	if roles["control-plane"] != 1 || roles["worker"] != 3 {
		t.Errorf("nodes = %v, want 1 control-plane and 3 workers (GUIDE's 3 worker nodes)", roles)
	}
}

// The Podman config (testdata/kind/podman.yaml) loads, keeps the node
// image's default CNI (kube-router in make kind-node-image's image), has
// one control plane and two workers, and patches the kubelet to start on
// cgroup v1 hosts.
func TestShippedPodmanConfigLoads(t *testing.T) {
	path, err := findUp("testdata/kind/podman.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadKindConfig(path)
	if err != nil {
		t.Fatalf("podman kind config rejected: %v", err)
	}
	roles := map[string]int{}
	for _, n := range cfg.Nodes {
		roles[string(n.Role)]++
	}
	if roles["control-plane"] != 1 || roles["worker"] != 2 {
		t.Errorf("nodes = %v, want 1 control-plane and 2 workers", roles)
	}
	if len(cfg.KubeadmConfigPatches) != 1 || !strings.Contains(cfg.KubeadmConfigPatches[0], "failCgroupV1: false") {
		t.Errorf("kubeadm patches %q, want the KubeletConfiguration failCgroupV1: false patch", cfg.KubeadmConfigPatches)
	}
}

func TestLoadKindConfigRejects(t *testing.T) {
	cases := map[string]struct{ yaml, wantInErr string }{
		"unknown field": {"kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworkin:\n  disableDefaultCNI: false\n", "networkin"},
		"cni disabled":  {"kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking:\n  disableDefaultCNI: true\n", "disableDefaultCNI"},
		"old version":   {"kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha3\n", "kind.x-k8s.io/v1alpha3"},
		"wrong kind":    {"kind: Pod\napiVersion: kind.x-k8s.io/v1alpha4\n", `"Pod"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "kind.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadKindConfig(p)
			if err == nil || !strings.Contains(err.Error(), c.wantInErr) {
				t.Fatalf("error = %v, want one naming %q", err, c.wantInErr)
			}
		})
	}
}

// fakeCLI writes an executable script named cli into dir that logs every
// call to dir/<cli>.log and then runs body (a sh case on "$1"). The script
// starts with #!/bin/sh, so it runs with a PATH that holds only dir: the
// engines a test sees are exactly the ones it writes, whatever this machine
// has installed (Docker, Podman, both or none).
func fakeCLI(t *testing.T, dir, cli, body string) (logPath string) {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the fake engine")
	}
	logPath = filepath.Join(dir, cli+".log")
	script := "#!/bin/sh\necho \"$*\" >> \"" + logPath + "\"\n" + body + "\necho \"fake " + cli + " refuses: $*\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, cli), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return logPath
}

// onlyPath makes dir the whole PATH and clears the variables that would
// choose or redirect an engine behind the test's back.
func onlyPath(t *testing.T, dir string) {
	t.Helper()
	t.Setenv("PATH", dir)
	t.Setenv(KindProviderEnv, "")
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("CONTAINER_HOST", "")
}

// fakeDockerUp stands in for a running Docker just far enough for kind's Go
// API to get through its config loading and validation: it answers
// `docker -v`, `docker info` (the fields kind reads from
// `docker info --format '{{json .}}'`), an empty `docker ps` and
// `docker inspect` (so node images count as present and nothing is pulled),
// and refuses anything else, first of all `docker network`, kind's first
// step of provisioning. Reaching `docker network` proves kind accepted the
// config.
const fakeDockerUp = `case "$1" in
  -v) echo "Docker version 99.0.0, build fake"; exit 0 ;;
  info) echo '{"CgroupDriver":"systemd","CgroupVersion":"2","MemoryLimit":true,"PidsLimit":true,"CPUShares":true,"SecurityOptions":[]}'; exit 0 ;;
  ps) exit 0 ;;
  inspect) exit 0 ;;
esac`

// fakeDockerDown is a docker CLI whose daemon is not running: the CLI
// answers `docker -v` (all kind's own detection checks) and every command
// that needs the daemon fails with the real CLI's message.
const fakeDockerDown = `case "$1" in
  -v) echo "Docker version 99.0.0, build fake"; exit 0 ;;
esac
echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2
exit 1`

// fakePodmanUp is a running Podman, as far as kind's Podman provider asks
// before provisioning: `podman -v`/`--version` in the real CLI's format,
// `podman info --format json` with the fields kind's podmanInfo reads, an
// empty `podman ps`, `podman inspect` (node images present); it refuses
// `podman network`.
const fakePodmanUp = `case "$1" in
  -v|--version) echo "podman version 4.3.1"; exit 0 ;;
  info) echo '{"host":{"cgroupVersion":"v2","cgroupControllers":["cpuset","cpu","io","memory","pids"],"security":{"rootless":false}}}'; exit 0 ;;
  ps) exit 0 ;;
  inspect) exit 0 ;;
esac`

func fakeEngine(t *testing.T) (logPath string) {
	t.Helper()
	dir := t.TempDir()
	logPath = fakeCLI(t, dir, "docker", fakeDockerUp)
	onlyPath(t, dir)
	return logPath
}

func calls(t *testing.T, logPath string) string {
	b, err := os.ReadFile(logPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestKindsOwnLoaderAcceptsShippedConfig runs the kind provider's Start, so
// kind's Create reads the config with its internal loader and validates it;
// kind gets as far as provisioning (docker network) only if both accept it.
// On the way kind checks that the node image is present, which shows the
// image the cluster would be created from: the pinned one, or the override.
func TestKindsOwnLoaderAcceptsShippedConfig(t *testing.T) {
	shipped, err := findUp(DefaultKindConfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ override, want string }{
		"shipped config reaches provisioning with the pinned image": {"", DefaultNodeImage},
		"-kind-node-image overrides the pinned image":               {"kindest/node:v1.35.8@sha256:07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0", "kindest/node:v1.35.8@sha256:07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0"},
	} {
		t.Run(name, func(t *testing.T) {
			log := fakeEngine(t)
			k := NewKind(Options{KindConfig: shipped, NodeImage: c.override, KubeconfigOut: filepath.Join(t.TempDir(), "kc")})
			err := k.Start(context.Background())
			if err == nil {
				t.Fatal("Start succeeded against a fake engine")
			}
			got := calls(t, log)
			if !strings.Contains(got, "network") {
				t.Fatalf("kind stopped before provisioning, so it rejected the config: %v\ncalls:\n%s", err, got)
			}
			if !strings.Contains(got, "inspect --type=image "+c.want) {
				t.Errorf("kind did not look for node image %s; calls:\n%s", c.want, got)
			}
			if c.want != DefaultNodeImage && strings.Contains(got, DefaultNodeImage) {
				t.Errorf("the pinned image is still asked for despite the override; calls:\n%s", got)
			}
			if strings.Contains(got, "pull") {
				t.Errorf("kind pulled an image; calls:\n%s", got)
			}
		})
	}
	// Negative control: a config our quick loader accepts but kind's
	// validation refuses (no control-plane node) must stop before network.
	t.Run("config kind rejects stops before provisioning", func(t *testing.T) {
		log := fakeEngine(t)
		bad := filepath.Join(t.TempDir(), "kind.yaml")
		if err := os.WriteFile(bad, []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: worker\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		k := NewKind(Options{KindConfig: bad, KubeconfigOut: filepath.Join(t.TempDir(), "kc")})
		err := k.Start(context.Background())
		if err == nil {
			t.Fatal("Start accepted a config without a control-plane node")
		}
		if strings.Contains(kindsOwnCalls(calls(t, log)), "network") {
			t.Fatalf("kind provisioned with a config it should reject; calls:\n%s", calls(t, log))
		}
		if !strings.Contains(err.Error(), "control-plane") {
			t.Errorf("error does not come from kind's validation: %v", err)
		}
	})
}

// kindsOwnCalls is the part of an engine call log from kind's Create on
// (its provider info call): before it, the provider itself asks whether
// kind's network exists (to remove it on Delete if the run creates it).
func kindsOwnCalls(log string) string {
	if i := strings.Index(log, "info --format"); i >= 0 {
		return log[i:]
	}
	return log
}

// The shipped config and the provider pin the same Kubernetes 1.36 image,
// by digest, as kind v0.33.0's release notes list it; kind's own default
// (1.37.0 at v0.33.0) is what the pin exists to avoid.
func TestNodeImagePinnedToKubernetes136(t *testing.T) {
	pinned := regexp.MustCompile(`^kindest/node:v1\.36\.[0-9]+@sha256:[0-9a-f]{64}$`)
	if !pinned.MatchString(DefaultNodeImage) {
		t.Fatalf("DefaultNodeImage = %q, want kindest/node:v1.36.x@sha256:<digest>", DefaultNodeImage)
	}
	if pinned.MatchString(kinddefaults.Image) {
		t.Fatalf("kind's default %s is already 1.36; the pin and this test are stale", kinddefaults.Image)
	}
	path, err := findUp(DefaultKindConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadKindConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range cfg.Nodes {
		if n.Image != DefaultNodeImage {
			t.Errorf("node %d (%s) of %s runs %q, want %s", i, n.Role, DefaultKindConfig, n.Image, DefaultNodeImage)
		}
	}
	if got := NewKind(Options{}).RequestedNodeImage(); got != DefaultNodeImage {
		t.Errorf("RequestedNodeImage() = %q, want the pin", got)
	}
	if got := NewKind(Options{NodeImage: "kindest/node:v1.35.8"}).RequestedNodeImage(); got != "kindest/node:v1.35.8" {
		t.Errorf("RequestedNodeImage() with an override = %q", got)
	}
}

// fakeHost is an injected EngineHost: installed CLIs and whether each one's
// daemon answers `info`; it records which CLIs were asked.
type fakeHost struct {
	installed map[string]bool // CLI -> daemon answers
	env       map[string]string
	asked     []string
}

func (f *fakeHost) host() EngineHost {
	return EngineHost{
		LookPath: func(cli string) (string, error) {
			if _, ok := f.installed[cli]; ok {
				return "/fake/bin/" + cli, nil
			}
			return "", &exec.Error{Name: cli, Err: exec.ErrNotFound}
		},
		Info: func(_ context.Context, cli string) ([]string, error) {
			f.asked = append(f.asked, cli)
			if f.installed[cli] {
				return []string{"Server Version: fake"}, nil
			}
			// The real `docker info` prints the client's section first.
			return []string{"Client:", " Version:    28.2.2", "Cannot connect to the " + cli + " daemon", ""}, errors.New("exit status 1")
		},
		Getenv: func(k string) string { return f.env[k] },
	}
}

func TestDetectContainerEngine(t *testing.T) {
	cases := map[string]struct {
		installed map[string]bool
		env       string // KIND_EXPERIMENTAL_PROVIDER
		want      string // engine CLI, or "" for ErrNoContainerEngine
		wantWhy   []string
		asked     string
	}{
		"docker running":                     {map[string]bool{"docker": true}, "", "docker", nil, "docker"},
		"docker and podman running":          {map[string]bool{"docker": true, "podman": true}, "", "docker", nil, "docker"},
		"only podman":                        {map[string]bool{"podman": true}, "", "podman", nil, "podman"},
		"docker CLI without daemon, podman":  {map[string]bool{"docker": false, "podman": true}, "", "podman", nil, "docker podman"},
		"KIND_EXPERIMENTAL_PROVIDER=podman":  {map[string]bool{"docker": true, "podman": true}, "podman", "podman", nil, "podman"},
		"KIND_EXPERIMENTAL_PROVIDER=docker":  {map[string]bool{"docker": true, "podman": true}, "docker", "docker", nil, "docker"},
		"none":                               {map[string]bool{}, "", "", []string{"docker: not installed", "nerdctl: not installed", "podman: not installed"}, ""},
		"docker CLI without daemon only":     {map[string]bool{"docker": false}, "", "", []string{"docker: CLI at /fake/bin/docker, but `docker info` failed: Cannot connect to the docker daemon", "podman: not installed"}, "docker"},
		"podman chosen but absent":           {map[string]bool{"docker": true}, "podman", "", []string{"podman: not installed (KIND_EXPERIMENTAL_PROVIDER=podman chose it)"}, ""},
		"podman chosen but its service down": {map[string]bool{"docker": true, "podman": false}, "podman", "", []string{"`podman info` failed (KIND_EXPERIMENTAL_PROVIDER=podman chose it)"}, "podman"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeHost{installed: c.installed, env: map[string]string{KindProviderEnv: c.env}}
			e, err := f.host().Detect(context.Background())
			if got := strings.Join(f.asked, " "); got != c.asked {
				t.Errorf("asked `info` of %q, want %q", got, c.asked)
			}
			if c.want == "" {
				if !errors.Is(err, ErrNoContainerEngine) {
					t.Fatalf("engine %v, error %v; want ErrNoContainerEngine", e, err)
				}
				for _, w := range append(c.wantWhy, "-provider=existing", "-provider=local", "Podman") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not say %q: %v", w, err)
					}
				}
				return
			}
			if err != nil || e.CLI != c.want {
				t.Fatalf("engine %v, error %v; want %s", e, err, c.want)
			}
			if c.want == "podman" && e.String() != "podman (kind's experimental Podman provider)" {
				t.Errorf("String() = %q", e.String())
			}
			if e.Option() == nil {
				t.Error("no kind provider option")
			}
		})
	}
	t.Run("unknown KIND_EXPERIMENTAL_PROVIDER", func(t *testing.T) {
		f := &fakeHost{installed: map[string]bool{"docker": true}, env: map[string]string{KindProviderEnv: "lxc"}}
		_, err := f.host().Detect(context.Background())
		if err == nil || errors.Is(err, ErrNoContainerEngine) || !strings.Contains(err.Error(), `KIND_EXPERIMENTAL_PROVIDER="lxc" is not known`) ||
			!strings.Contains(err.Error(), "docker, nerdctl, podman, finch, nerdctl.lima") {
			t.Fatalf("error = %v, want one naming the value and the accepted ones", err)
		}
		if len(f.asked) != 0 {
			t.Errorf("asked engines %v after refusing the variable", f.asked)
		}
	})
}

// On a machine with a docker CLI whose daemon is down and a running Podman
// (Debian's podman next to a docker CLI, a common laptop), the provider
// takes Podman, says so, creates the cluster with Podman and loads images
// with Podman too; docker is asked `info` and nothing else.
func TestKindUsesTheEngineItDetected(t *testing.T) {
	dir := t.TempDir()
	dockerLog := fakeCLI(t, dir, "docker", fakeDockerDown)
	podmanLog := fakeCLI(t, dir, "podman", fakePodmanUp)
	onlyPath(t, dir)
	shipped, err := findUp(DefaultKindConfig)
	if err != nil {
		t.Fatal(err)
	}
	k := NewKind(Options{KindConfig: shipped, KubeconfigOut: filepath.Join(t.TempDir(), "kc")})
	if err := k.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "podman") {
		t.Fatalf("Start = %v, want the fake podman's refusal of `podman network`", err)
	}
	if got := k.Engine().String(); got != "podman (kind's experimental Podman provider)" {
		t.Errorf("engine = %q, want podman", got)
	}
	if d := k.Describe(); !strings.Contains(d, "on podman (kind's experimental Podman provider)") || !strings.Contains(d, "kind v0.33.0") {
		t.Errorf("Describe() = %q, want the engine and kind's version", d)
	}
	// kind's Podman provider drops the tag of a reference that has a
	// digest and names Docker Hub (podman/images.go, sanitizeImage).
	_, digest, _ := strings.Cut(DefaultNodeImage, "@")
	if got := calls(t, podmanLog); !strings.Contains(got, "inspect --type=image docker.io/kindest/node@"+digest) || !strings.Contains(got, "network") {
		t.Errorf("kind did not provision with podman and the pinned image; podman calls:\n%s", got)
	}

	tar := filepath.Join(t.TempDir(), "img.tar")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag("localhost/meshclaims/test:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(tar, ref, img); err != nil {
		t.Fatal(err)
	}
	if err := k.LoadImage(context.Background(), tar); !errors.Is(err, images.ErrNoKindNodes) {
		t.Fatalf("LoadImage = %v, want ErrNoKindNodes from podman's empty `ps`", err)
	}
	if got := calls(t, podmanLog); !strings.Contains(got, "ps -a --filter label=io.x-k8s.kind.cluster=meshclaims") {
		t.Errorf("LoadImage did not list nodes with podman; podman calls:\n%s", got)
	}
	if got := strings.TrimSpace(calls(t, dockerLog)); got != "info" {
		t.Errorf("docker was asked more than `info`:\n%s", got)
	}
}

// The node image the report records is read back from the node containers,
// one entry per distinct image (a reused cluster runs what it was created
// with, not what this run would request).
func TestNodeImagesReadBackFromEngine(t *testing.T) {
	dir := t.TempDir()
	log := fakeCLI(t, dir, "docker", `case "$1" in
  ps) echo meshclaims-control-plane; echo meshclaims-worker; echo meshclaims-worker2; exit 0 ;;
  inspect) case "$4" in meshclaims-worker2) echo kindest/node:v1.35.8 ;; *) echo `+DefaultNodeImage+` ;; esac; exit 0 ;;
esac`)
	onlyPath(t, dir)
	k := NewKind(Options{})
	k.engine = containerEngines[0]
	k.kind = kindcluster.NewProvider(k.engine.Option())
	got, err := k.nodeImages()
	if err != nil {
		t.Fatal(err)
	}
	if want := "kindest/node:v1.35.8, " + DefaultNodeImage; got != want {
		t.Errorf("nodeImages() = %q, want %q", got, want)
	}
	if !strings.Contains(calls(t, log), "inspect --format {{.Config.Image}} meshclaims-worker2") {
		t.Errorf("calls:\n%s", calls(t, log))
	}
}

func TestNoContainerEngineFailsAtOnce(t *testing.T) {
	check := func(t *testing.T, err error, wantWhy string) {
		t.Helper()
		if !errors.Is(err, ErrNoContainerEngine) {
			t.Fatalf("error = %v, want ErrNoContainerEngine", err)
		}
		for _, want := range []string{"-provider=existing", "-provider=local", wantWhy} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not mention %q: %v", want, err)
			}
		}
	}
	t.Run("no engine CLI at all", func(t *testing.T) {
		onlyPath(t, t.TempDir())
		err := NewKind(Options{}).Start(context.Background())
		check(t, err, "docker: not installed")
	})
	t.Run("docker CLI without daemon", func(t *testing.T) {
		dir := t.TempDir()
		fakeCLI(t, dir, "docker", fakeDockerDown)
		onlyPath(t, dir)
		err := NewKind(Options{}).Start(context.Background())
		check(t, err, "Cannot connect to the Docker daemon")
	})
	// The real docker CLI, where one is installed, alone on PATH (a link in
	// a directory of its own: its own directory may hold podman too) and
	// pointed at a socket that does not exist.
	t.Run("real docker CLI without daemon", func(t *testing.T) {
		docker, err := exec.LookPath("docker")
		if err != nil {
			t.Skip("no docker CLI installed; the fake one above covers this case")
		}
		dir := t.TempDir()
		if err := os.Symlink(docker, filepath.Join(dir, "docker")); err != nil {
			t.Fatal(err)
		}
		onlyPath(t, dir)
		t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "absent.sock"))
		t.Setenv("DOCKER_CONFIG", t.TempDir())
		err = NewKind(Options{}).Start(context.Background())
		check(t, err, "docker: CLI at "+dir)
		check(t, err, "Cannot connect to the Docker daemon at unix://")
	})
}

// BenchmarkNoContainerEngine measures how fast the kind provider gives up
// where no engine runs (the claim is "at once"; speed is measured here,
// never asserted in a test). The host is injected, so it measures the same
// path on every machine.
func BenchmarkNoContainerEngine(b *testing.B) {
	f := &fakeHost{installed: map[string]bool{"docker": false}}
	h := f.host()
	for b.Loop() {
		if _, err := h.Detect(context.Background()); err == nil {
			b.Fatal("engine appeared")
		}
	}
}

func TestNewRejectsUnknownProvider(t *testing.T) {
	_, err := New("minikube", Options{})
	if err == nil || !strings.Contains(err.Error(), `"minikube"`) || !strings.Contains(err.Error(), "kind, existing") {
		t.Fatalf("error = %v, want one naming the value and the accepted ones", err)
	}
}

// The config a kind cluster is created from: the shipped file with the
// requested kube-proxy mode, rendered as kind reads it; empty keeps the
// file's iptables; a mode kind cannot run here is refused naming it.
func TestKindClusterConfigKubeProxyMode(t *testing.T) {
	path, err := findUp(DefaultKindConfig)
	if err != nil {
		t.Fatal(err)
	}
	for req, want := range map[string]string{"": "iptables", "iptables": "iptables", "ipvs": "ipvs", "nftables": "nftables"} {
		cfg, err := KindClusterConfig(path, req)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		raw, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Rendered and read back the way kind's loader does (strict).
		p := filepath.Join(t.TempDir(), "kind.yaml")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := LoadKindConfig(p)
		if err != nil {
			t.Fatalf("%q: the rendered config does not load: %v\n%s", req, err, raw)
		}
		if got := string(back.Networking.KubeProxyMode); got != want || !strings.Contains(string(raw), "kubeProxyMode: "+want) {
			t.Errorf("%q: kubeProxyMode %q, want %q\n%s", req, got, want, raw)
		}
		if len(back.Nodes) != 4 || back.Networking.DisableDefaultCNI {
			t.Errorf("%q: the rest of the shipped config changed: %d nodes, disableDefaultCNI %v", req, len(back.Nodes), back.Networking.DisableDefaultCNI)
		}
	}
	for _, bad := range []string{"none", "IPVS", "userspace"} {
		if _, err := KindClusterConfig(path, bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("kind kube-proxy mode %q; accepted: iptables, ipvs, nftables", bad)) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
