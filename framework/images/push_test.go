package images

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// startRegistry runs go-containerregistry's in-memory registry on loopback.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestPushThenPullGivesTheSameImage(t *testing.T) {
	host := startRegistry(t)
	img := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v2.0.0"))
	ref := host + "/" + ImageRef("tiny", "v2.0.0")

	pushed, err := Push(context.Background(), img.Image, ref, PushOptions{Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	if pushed.DigestStr() != img.Digest.String() {
		t.Fatalf("Push returned %s, built %s", pushed.DigestStr(), img.Digest)
	}

	for _, pull := range []string{ref, pushed.String()} {
		r, err := name.ParseReference(pull)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(r)
		if err != nil {
			t.Fatalf("pull %s: %v", pull, err)
		}
		d, err := got.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d != img.Digest {
			t.Fatalf("pulled %s with digest %s, pushed %s", pull, d, img.Digest)
		}
		if sha := sha256Hex(fileInLayer(t, got, "/workload")); sha != img.BinarySHA256 {
			t.Fatalf("pulled binary sha256 %s, built %s", sha, img.BinarySHA256)
		}
	}

	// Negative control: the pull check can fail, a tag never pushed is absent.
	missing, _ := name.ParseReference(host + "/" + ImageRef("tiny", "v9.9.9"))
	if _, err := remote.Image(missing); err == nil {
		t.Fatal("pulling a tag that was never pushed succeeded")
	}
}

func TestPushFailsClearly(t *testing.T) {
	img := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v2.0.0"))

	_, err := Push(context.Background(), img.Image, "127.0.0.1:1/meshclaims/tiny", PushOptions{})
	if err == nil || !strings.Contains(err.Error(), "accepted") {
		t.Errorf("ref without tag: err = %v", err)
	}

	// A registry that has gone away (loopback, closed listener).
	srv := httptest.NewServer(registry.New())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	ref := host + "/" + ImageRef("tiny", "v2.0.0")
	_, err = Push(context.Background(), img.Image, ref, PushOptions{Keychain: authn.NewMultiKeychain()})
	if err == nil || !strings.Contains(err.Error(), ref) {
		t.Errorf("closed registry: err = %v, want one naming %s", err, ref)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Push(ctx, img.Image, startRegistry(t)+"/"+ImageRef("tiny", "v2.0.0"), PushOptions{}); err == nil {
		t.Error("push with a cancelled context succeeded")
	}
	if _, err := Push(context.Background(), nil, ref, PushOptions{}); err == nil {
		t.Error("nil image accepted")
	}
}
