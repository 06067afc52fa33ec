package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerEntry is one file or directory of the image's only layer.
type layerEntry struct {
	path     string // absolute, clean
	dir      bool
	mode     int64 // permission bits (plus sticky for /tmp)
	uid, gid int
	data     []byte
	link     string // symlink target; set for symbolic links only
}

// checkPerm accepts permission bits only: what (at p) may not be a device,
// symlink or setuid file by way of its mode.
func checkPerm(what, p string, mode fs.FileMode) error {
	if mode&^fs.ModePerm != 0 {
		return fmt.Errorf("images: %s (%s) has mode %v; accepted: permission bits only (e.g. 0755)", what, p, mode)
	}
	return nil
}

// check is what every File must be, in Spec.ExtraFiles as in
// PackSpec.Files: a clean absolute path, exactly one of Data and SourcePath,
// permission bits only. what names f in errors, e.g. "Spec.ExtraFiles[0]".
func (f File) check(what string) error {
	if err := checkImagePath(what+".Path", f.Path); err != nil {
		return err
	}
	if (f.Data == nil) == (f.SourcePath == "") {
		return fmt.Errorf("images: %s (%s) needs exactly one of Data and SourcePath", what, f.Path)
	}
	return checkPerm(what, f.Path, f.Mode)
}

// entry is f (checked) as a root-owned layer entry: its content read from
// SourcePath when that is given, its mode 0644 unless f says otherwise.
func (f File) entry(what string) (layerEntry, error) {
	data := f.Data
	if f.SourcePath != "" {
		var err error
		if data, err = os.ReadFile(f.SourcePath); err != nil {
			return layerEntry{}, fmt.Errorf("images: %s (%s): reading SourcePath: %w", what, f.Path, err)
		}
	}
	mode := int64(f.Mode.Perm())
	if mode == 0 {
		mode = 0o644
	}
	return layerEntry{path: f.Path, mode: mode, data: data}, nil
}

// passwd and group define root and the non-root user, so tools inside the
// container (and `id`-style lookups by Go's os/user) resolve 65532 to a name.
var (
	passwdFile = fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootUID, NonRootGID)
	groupFile  = fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootGID)
)

// layerFiles lists every entry of the layer, parents included, sorted by path.
func layerFiles(s Spec, binary []byte) ([]layerEntry, error) {
	byPath := map[string]layerEntry{}
	add := func(e layerEntry) {
		// Create missing parents root-owned; an explicit directory entry
		// (such as /tmp) replaces an implied one.
		for dir := path.Dir(e.path); dir != "/"; dir = path.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = layerEntry{path: dir, dir: true, mode: 0o755}
			}
		}
		byPath[e.path] = e
	}
	// Writable scratch space: many programs (and Go's os.TempDir users) expect
	// /tmp, and the root filesystem is read-only for the non-root user.
	add(layerEntry{path: "/tmp", dir: true, mode: 0o1777})
	add(layerEntry{path: "/home/nonroot", dir: true, mode: 0o755, uid: NonRootUID, gid: NonRootGID})
	add(layerEntry{path: "/etc/passwd", mode: 0o644, data: []byte(passwdFile)})
	add(layerEntry{path: "/etc/group", mode: 0o644, data: []byte(groupFile)})
	add(layerEntry{path: s.BinaryPath, mode: 0o755, data: binary})
	for i, f := range s.ExtraFiles {
		e, err := f.entry(fmt.Sprintf("Spec.ExtraFiles[%d]", i))
		if err != nil {
			return nil, err
		}
		if existing, ok := byPath[f.Path]; ok && existing.dir {
			return nil, fmt.Errorf("images: Spec.ExtraFiles[%d].Path %q is a directory of the image", i, f.Path)
		}
		add(e)
	}
	// A file whose path is the parent of another file cannot exist.
	for p, e := range byPath {
		if !e.dir {
			for q := range byPath {
				if strings.HasPrefix(q, p+"/") {
					return nil, fmt.Errorf("images: %q is a file but %q needs it to be a directory", p, q)
				}
			}
		}
	}
	entries := make([]layerEntry, 0, len(byPath))
	for _, e := range byPath {
		entries = append(entries, e)
	}
	// Sorted entries make the tar, and thus the digest, independent of map
	// order; parents sort before their children.
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	return entries, nil
}

// layerTar writes entries as an uncompressed tar with every timestamp set to
// created.
func layerTar(entries []layerEntry, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(e.path, "/"),
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: created,
			Format:  tar.FormatPAX,
		}
		switch {
		case e.dir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case e.link != "":
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.link
		default:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar header for %s: %w", e.path, err)
		}
		if !e.dir && e.link == "" {
			if _, err := tw.Write(e.data); err != nil {
				return nil, fmt.Errorf("tar content of %s: %w", e.path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipBytes compresses once, here, so the layer's digest depends only on
// Go's compress/gzip (deterministic for a given level and Go release) and not
// on go-containerregistry re-compressing on every read.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// The gzip header's name and mtime stay empty: nothing varies per build.
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// imageConfig is an ImageConfig after withDefaults and what Build or Pack
// add to it.
type imageConfig struct {
	ImageConfig
	user      string // "uid:gid"
	createdBy string // the layer's history
	comment   string
}

// buildConfig is the config of a Build image: a non-root static binary.
func buildConfig(s Spec) imageConfig {
	return imageConfig{
		ImageConfig: s.ImageConfig, user: fmt.Sprintf("%d:%d", NonRootUID, NonRootGID),
		createdBy: "meshclaims images.Build " + s.MainPackage, comment: "static Go binary at " + s.BinaryPath,
	}
}

// assembled is an OCI image and its two identities (see Image.Digest and
// Image.ConfigDigest).
type assembled struct {
	image                v1.Image
	digest, configDigest v1.Hash
}

// assemble builds the OCI image (one layer on empty.Image, and its config)
// and computes its digests.
func assemble(c imageConfig, entries []layerEntry) (assembled, error) {
	img, err := assembleImage(c, entries)
	if err != nil {
		return assembled{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return assembled{}, fmt.Errorf("digest: %w", err)
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return assembled{}, fmt.Errorf("config digest: %w", err)
	}
	return assembled{image: img, digest: digest, configDigest: configDigest}, nil
}

func assembleImage(c imageConfig, entries []layerEntry) (v1.Image, error) {
	raw, err := layerTar(entries, c.Created)
	if err != nil {
		return nil, err
	}
	compressed, err := gzipBytes(raw)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}

	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: c.Created}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: created, CreatedBy: c.createdBy, Comment: c.comment},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = c.GOARCH
	cfg.Created = created
	cfg.Config.User = c.user
	cfg.Config.Entrypoint = append([]string(nil), c.Entrypoint...)
	cfg.Config.Cmd = append([]string(nil), c.Cmd...)
	cfg.Config.Env = append([]string(nil), c.Env...)
	cfg.Config.WorkingDir = c.WorkingDir
	cfg.Config.Labels = c.labels()
	return mutate.ConfigFile(img, cfg)
}
