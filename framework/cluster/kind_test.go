package cluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// fakeEngine puts a `docker` on PATH that stands in for a running daemon
// just far enough for kind's Go API to get through its own config loading
// and validation: it answers `docker -v`, `docker info`, an empty
// `docker ps` and `docker inspect`, logs every call, and refuses anything
// else (first of all `docker network`, kind's first step of provisioning).
// Reaching `docker network` therefore proves kind accepted the config.
func fakeEngine(t *testing.T) (logPath string) {
	t.Helper()
	dir := t.TempDir()
	logPath = filepath.Join(dir, "calls.log")
	script := `#!/bin/sh
echo "$*" >> "` + logPath + `"
case "$1" in
  -v) echo "Docker version 99.0.0, build fake"; exit 0 ;;
  info) echo '{"CgroupDriver":"systemd","CgroupVersion":"2","MemoryLimit":true,"PidsLimit":true,"CPUShares":true,"SecurityOptions":[]}'; exit 0 ;;
  ps) exit 0 ;;
  inspect) exit 0 ;;
esac
echo "fake docker refuses: $*" >&2
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
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
func TestKindsOwnLoaderAcceptsShippedConfig(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no /bin/sh for the fake engine")
	}
	shipped, err := findUp(DefaultKindConfig)
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := exec.LookPath("sh")
	t.Run("shipped config reaches provisioning", func(t *testing.T) {
		log := fakeEngine(t)
		t.Setenv("PATH", os.Getenv("PATH")+":"+filepath.Dir(sh))
		k := NewKind(Options{KindConfig: shipped, KubeconfigOut: filepath.Join(t.TempDir(), "kc")})
		err := k.Start(context.Background())
		if err == nil {
			t.Fatal("Start succeeded against a fake engine")
		}
		if !strings.Contains(calls(t, log), "network") {
			t.Fatalf("kind stopped before provisioning, so it rejected the config: %v\ncalls:\n%s", err, calls(t, log))
		}
	})
	// Negative control: a config our quick loader accepts but kind's
	// validation refuses (no control-plane node) must stop before network.
	t.Run("config kind rejects stops before provisioning", func(t *testing.T) {
		log := fakeEngine(t)
		t.Setenv("PATH", os.Getenv("PATH")+":"+filepath.Dir(sh))
		bad := filepath.Join(t.TempDir(), "kind.yaml")
		if err := os.WriteFile(bad, []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: worker\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		k := NewKind(Options{KindConfig: bad, KubeconfigOut: filepath.Join(t.TempDir(), "kc")})
		err := k.Start(context.Background())
		if err == nil {
			t.Fatal("Start accepted a config without a control-plane node")
		}
		if strings.Contains(calls(t, log), "network") {
			t.Fatalf("kind provisioned with a config it should reject; calls:\n%s", calls(t, log))
		}
		if !strings.Contains(err.Error(), "control-plane") {
			t.Errorf("error does not come from kind's validation: %v", err)
		}
	})
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
		t.Setenv("PATH", t.TempDir())
		err := NewKind(Options{}).Start(context.Background())
		check(t, err, "docker: not installed")
	})
	t.Run("docker CLI without daemon", func(t *testing.T) {
		dir := t.TempDir()
		script := "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n"
		if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		sh, err := exec.LookPath("sh")
		if err != nil {
			t.Skip("no sh")
		}
		t.Setenv("PATH", dir+":"+filepath.Dir(sh))
		_, _, err = DetectContainerEngine(context.Background())
		check(t, err, "Cannot connect to the Docker daemon")
	})
	t.Run("this machine", func(t *testing.T) {
		// Where a real engine runs, there is nothing to check here.
		if _, _, err := DetectContainerEngine(context.Background()); err == nil {
			t.Skip("a container engine runs on this machine")
		}
		err := NewKind(Options{}).Start(context.Background())
		check(t, err, "docker")
	})
}

// BenchmarkNoContainerEngine measures how fast the kind provider gives up
// where no engine runs (the claim is "at once"; speed is measured here,
// never asserted in a test).
func BenchmarkNoContainerEngine(b *testing.B) {
	if _, _, err := DetectContainerEngine(context.Background()); err == nil {
		b.Skip("a container engine runs on this machine")
	}
	for b.Loop() {
		if _, _, err := DetectContainerEngine(context.Background()); err == nil {
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
