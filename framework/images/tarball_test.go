package images

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// readTarball checks the docker-archive layout (manifest.json naming ref,
// config and layer blobs present) and loads the image by its tag.
func readTarball(t *testing.T, path, ref string) v1.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	members := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		members[hdr.Name] = b
	}
	var manifest tarball.Manifest
	if err := json.Unmarshal(members["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{ref}) {
		t.Fatalf("manifest.json = %+v, want one image tagged %s", manifest, ref)
	}
	if _, ok := members[manifest[0].Config]; !ok {
		t.Fatalf("config %s missing from tarball", manifest[0].Config)
	}
	for _, l := range manifest[0].Layers {
		if _, ok := members[l]; !ok {
			t.Fatalf("layer %s missing from tarball", l)
		}
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestImageRef(t *testing.T) {
	if got := ImageRef("workload", "v0.3.1"); got != "meshclaims/workload:v0.3.1" {
		t.Fatalf("ImageRef = %q", got)
	}
}

func TestWriteTarballRejectsBadInput(t *testing.T) {
	img := mustBuild(t, tinySpec(writeTinyModule(t, "hello"), "v1.0.0"))
	dir := t.TempDir()
	for _, ref := range []string{"", "meshclaims/workload", "Meshclaims/Workload:v1", "meshclaims/workload:v1 beta", "meshclaims/workload@sha256:" + strings.Repeat("a", 64)} {
		err := WriteTarball(img.Image, ref, filepath.Join(dir, "x.tar"))
		if err == nil || !strings.Contains(err.Error(), "accepted") || !strings.Contains(err.Error(), `"`+ref+`"`) {
			t.Errorf("ref %q: err = %v, want one naming the ref and what is accepted", ref, err)
		}
	}
	if err := WriteTarball(nil, ImageRef("a", "b"), filepath.Join(dir, "x.tar")); err == nil {
		t.Error("nil image accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tar")); !os.IsNotExist(err) {
		t.Error("a rejected call left a file behind")
	}
}

func TestReadArchive(t *testing.T) {
	p := mustPack(t, packSpec(rootFSFixture(t)))
	path := filepath.Join(t.TempDir(), "cni.tar")
	if err := WriteTarball(p.Image, "localhost/istio/install-cni:1.30.3-dev", path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Refs[0] != "localhost/istio/install-cni:1.30.3-dev" || got[0].ConfigDigest != p.ConfigDigest {
		t.Fatalf("ReadArchive: %+v, want the ref and config digest %s", got, p.ConfigDigest)
	}
	// Negative control: a file that is not an image archive.
	notTar := filepath.Join(t.TempDir(), "x.tar")
	if err := os.WriteFile(notTar, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadArchive(notTar); err == nil || !strings.Contains(err.Error(), "is not a docker image archive") {
		t.Fatalf("ReadArchive of a non-archive: %v", err)
	}
}
