package images

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ImageRef names a locally built image: meshclaims/<name>:<version>. Such
// images are imported into nodes, never pulled, so Pods using them set
// imagePullPolicy Never or IfNotPresent. The name is not validated here;
// WriteTarball and Push reject a malformed reference with a clear error.
func ImageRef(name, version string) string {
	return "meshclaims/" + name + ":" + version
}

// parseTag accepts only references with an explicit tag: a tarball without a
// tag cannot be imported by name, and a push without one would silently go to
// :latest.
func parseTag(ref string, opts ...name.Option) (name.Tag, error) {
	accepted := fmt.Sprintf("accepted: [registry/]repository:tag in lower case, e.g. %q", ImageRef("workload", "v0.1.0"))
	tag, err := name.NewTag(ref, opts...)
	if err != nil {
		return name.Tag{}, fmt.Errorf("images: image reference %q is not valid: %w; %s", ref, err, accepted)
	}
	// name.NewTag fills in "latest" when the tag is missing; insist on an
	// explicit one (the last path element must carry it).
	last := ref[strings.LastIndex(ref, "/")+1:]
	if !strings.Contains(last, ":") {
		return name.Tag{}, fmt.Errorf("images: image reference %q has no tag; %s", ref, accepted)
	}
	return tag, nil
}

// WriteTarball writes img as a docker-compatible image tarball (manifest.json
// plus config and layer blobs) tagged ref, the format `ctr images import`,
// `docker load` and `kind load image-archive` accept. The parent directory is
// created if needed. The tarball's bytes are a function of img and ref only.
func WriteTarball(img v1.Image, ref, path string) error {
	if img == nil {
		return fmt.Errorf("images: WriteTarball(%q): image is nil", path)
	}
	tag, err := parseTag(ref)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("images: creating directory for tarball %s: %w", path, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("images: writing %s as %s: %w", ref, path, err)
	}
	return nil
}

// Archive is one image of a docker image archive.
type Archive struct {
	// Path is the archive file.
	Path string
	// Refs are the image's tags as the archive names them.
	Refs []string
	// ConfigDigest is the image ID, what a node shows after the import.
	ConfigDigest v1.Hash
	// Image reads the image from the archive (for a push).
	Image v1.Image
}

// ReadArchive lists the images of a docker image archive (WriteTarball,
// docker save). An archive without a tagged image is refused: nothing
// could name it after the import.
func ReadArchive(path string) ([]Archive, error) {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		return nil, fmt.Errorf("images: %s is not a docker image archive: %w", path, err)
	}
	var out []Archive
	for _, d := range m {
		if len(d.RepoTags) == 0 {
			return nil, fmt.Errorf("images: %s holds an image without a tag (config %s); accepted: archives of tagged images, as docker save or make istio-images write them", path, d.Config)
		}
		tag, err := name.NewTag(d.RepoTags[0])
		if err != nil {
			return nil, fmt.Errorf("images: %s names image %q: %w", path, d.RepoTags[0], err)
		}
		img, err := tarball.ImageFromPath(path, &tag)
		if err != nil {
			return nil, fmt.Errorf("images: reading %s from %s: %w", d.RepoTags[0], path, err)
		}
		cd, err := img.ConfigName()
		if err != nil {
			return nil, fmt.Errorf("images: config digest of %s in %s: %w", d.RepoTags[0], path, err)
		}
		out = append(out, Archive{Path: path, Refs: d.RepoTags, ConfigDigest: cd, Image: img})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("images: %s holds no image", path)
	}
	return out, nil
}
