package images_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/meshclaims/meshclaims/framework/images"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
)

// The push check against the CNCF distribution registry, run as a user's
// private registry: TLS under a CA of its own and htpasswd basic auth,
// credentials read from a docker config.json through DOCKER_CONFIG, as the
// README tells users. The positive control (the right password, the CA
// given) passes the check and then really pushes; each bad input fails the
// check with a message naming what to fix, and the registry stays empty.
func TestCheckPushAgainstAPrivateRegistry(t *testing.T) {
	reg := privateregistry.ForTest(t)
	withCA, err := images.TransportWithCA(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	repo := reg.Host + "/meshclaims/workload"
	ctx := context.Background()

	t.Run("right credentials and CA: the check passes and a push lands", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", reg.DockerConfigDir)
		if err := images.CheckPush(ctx, repo, images.PushOptions{Transport: withCA}); err != nil {
			t.Fatalf("CheckPush with the right credentials: %v", err)
		}
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := images.Push(ctx, img, repo+":check", images.PushOptions{Transport: withCA}); err != nil {
			t.Fatalf("Push after a passed check: %v", err)
		}
		cat, err := reg.Catalog(ctx)
		if err != nil || len(cat) != 1 || cat[0] != "meshclaims/workload" {
			t.Fatalf("catalog after the push = %v, %v; want [meshclaims/workload]", cat, err)
		}
	})

	bad := []struct {
		name  string
		setup func(t *testing.T) (string, images.PushOptions)
		want  []string
	}{
		{"wrong password", func(t *testing.T) (string, images.PushOptions) {
			dir := t.TempDir()
			if err := reg.WriteDockerConfig(dir, reg.User, reg.Password+"-wrong"); err != nil {
				t.Fatal(err)
			}
			t.Setenv("DOCKER_CONFIG", dir)
			return repo + "2", images.PushOptions{Transport: withCA}
		}, []string{"refused the credentials", `user "meshclaims"`, "config.json"}},
		{"no credentials at all", func(t *testing.T) (string, images.PushOptions) {
			t.Setenv("DOCKER_CONFIG", t.TempDir())
			return repo + "2", images.PushOptions{Transport: withCA}
		}, []string{"refused the credentials", "anonymous"}},
		{"CA not trusted", func(t *testing.T) (string, images.PushOptions) {
			t.Setenv("DOCKER_CONFIG", reg.DockerConfigDir)
			return repo + "2", images.PushOptions{}
		}, []string{"does not trust", "-image-registry-ca"}},
		{"unreachable registry", func(t *testing.T) (string, images.PushOptions) {
			t.Setenv("DOCKER_CONFIG", reg.DockerConfigDir)
			return closedPort(t) + "/meshclaims/workload", images.PushOptions{Transport: withCA}
		}, []string{"not reachable", "-image-registry"}},
		{"not a repository", func(t *testing.T) (string, images.PushOptions) {
			return "Registry.Example.COM/Up", images.PushOptions{}
		}, []string{`"Registry.Example.COM/Up" is not a repository`, "accepted"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r, opts := c.setup(t)
			start := time.Now()
			err := images.CheckPush(ctx, r, opts)
			t.Logf("%s: failed after %v: %v", c.name, time.Since(start).Round(time.Millisecond), err)
			if err == nil {
				t.Fatalf("CheckPush(%s) passed; want an error", c.name)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), reg.Password) {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
	cat, err := reg.Catalog(ctx)
	if err != nil || len(cat) != 1 {
		t.Errorf("catalog after the failed checks = %v, %v; want only the positive control's repository", cat, err)
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
