package images

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests exercise LoadIntoKind's failure paths only: this machine has
// no container engine, so a real load cannot run here. Each one controls
// PATH so kind's engine detection sees exactly what the test intends.

func writeTinyTarball(t *testing.T) string {
	t.Helper()
	img := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v1.0.0"))
	p := filepath.Join(t.TempDir(), "tiny.tar")
	if err := WriteTarball(img.Image, ImageRef("tiny", "v1.0.0"), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeDocker puts a `docker` script on an otherwise empty PATH. It answers
// `docker -v` like the real CLI (which is all kind's detection checks) and
// runs psScript for `docker ps`.
func fakeDocker(t *testing.T, psScript string) {
	t.Helper()
	bin := t.TempDir()
	script := "#!/bin/sh\ncase \"$1\" in\n-v) echo 'Docker version 99.0.0, build fake';;\nps) " + psScript + ";;\n*) echo \"fake docker: unexpected $*\" >&2; exit 1;;\nesac\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("KIND_EXPERIMENTAL_PROVIDER", "")
}

func TestLoadIntoKindWithoutEngine(t *testing.T) {
	tarPath := writeTinyTarball(t)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("KIND_EXPERIMENTAL_PROVIDER", "")
	err := LoadIntoKind(context.Background(), "meshclaims", tarPath)
	if !errors.Is(err, ErrNoContainerEngine) {
		t.Fatalf("err = %v, want ErrNoContainerEngine", err)
	}
	if !strings.Contains(err.Error(), `"meshclaims"`) {
		t.Errorf("error %q does not name the cluster", err)
	}
}

func TestLoadIntoKindWithoutNodes(t *testing.T) {
	tarPath := writeTinyTarball(t)
	fakeDocker(t, "exit 0") // the engine answers, no containers carry the cluster label
	err := LoadIntoKind(context.Background(), "meshclaims", tarPath)
	if !errors.Is(err, ErrNoKindNodes) {
		t.Fatalf("err = %v, want ErrNoKindNodes", err)
	}
	if !strings.Contains(err.Error(), `"meshclaims"`) || !strings.Contains(err.Error(), "kind get clusters") {
		t.Errorf("error %q does not name the cluster and the way to check it", err)
	}
}

func TestLoadIntoKindEngineDown(t *testing.T) {
	tarPath := writeTinyTarball(t)
	fakeDocker(t, "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock' >&2; exit 1")
	err := LoadIntoKind(context.Background(), "meshclaims", tarPath)
	if err == nil || !strings.Contains(err.Error(), "listing nodes") || !strings.Contains(err.Error(), `"meshclaims"`) ||
		!strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Fatalf("err = %v, want a node-listing failure naming the cluster and quoting the engine", err)
	}
}

// With the real docker CLI, if installed, pointed at a socket that does not
// exist: kind detects docker, and listing nodes fails without any network.
// The CLI is linked into a directory of its own: its real directory may
// hold podman (Debian puts both in /usr/bin), which is not this case.
func TestLoadIntoKindRealDockerCLINoDaemon(t *testing.T) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker CLI on PATH; the fake-engine tests cover this path")
	}
	tarPath := writeTinyTarball(t)
	bin := t.TempDir()
	if err := os.Symlink(docker, filepath.Join(bin, "docker")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("KIND_EXPERIMENTAL_PROVIDER", "")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "absent.sock"))
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	err = LoadIntoKind(context.Background(), "meshclaims", tarPath)
	if err == nil {
		t.Fatal("LoadIntoKind succeeded with no docker daemon")
	}
	if !strings.Contains(err.Error(), "listing nodes") {
		t.Fatalf("err = %v, want a node-listing failure", err)
	}
}

func TestLoadIntoKindRejectsBadInput(t *testing.T) {
	tarPath := writeTinyTarball(t)
	fakeDocker(t, "exit 0")
	notTar := filepath.Join(t.TempDir(), "not.tar")
	if err := os.WriteFile(notTar, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.tar")

	if err := LoadIntoKind(context.Background(), "meshclaims", missing); err == nil || !strings.Contains(err.Error(), "missing.tar") {
		t.Errorf("missing tarball: err = %v", err)
	}
	if err := LoadIntoKind(context.Background(), "meshclaims", notTar); err == nil || !strings.Contains(err.Error(), "not a docker image tarball") {
		t.Errorf("not a tarball: err = %v", err)
	}
	if err := LoadIntoKind(context.Background(), "", tarPath); err == nil || !strings.Contains(err.Error(), "cluster name is empty") {
		t.Errorf("empty cluster name: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := LoadIntoKind(ctx, "meshclaims", tarPath); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
	t.Setenv("KIND_EXPERIMENTAL_PROVIDER", "lxc")
	if err := LoadIntoKind(context.Background(), "meshclaims", tarPath); err == nil || !strings.Contains(err.Error(), `"lxc"`) {
		t.Errorf("unknown provider: err = %v", err)
	}
}
