package kindnode

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"
)

// capabilityXattr is the one extended attribute the layer keeps: file
// capabilities, which Debian's packages set on a few tools (and which a
// tar without them would silently drop). Others (SELinux labels, user.*)
// describe the build host, not the image.
const capabilityXattr = "security.capability"

// WriteLayer writes the tree at root as an uncompressed tar to out, for an
// image layer: entries sorted by path (parents first), every timestamp set
// to created, numeric owners and modes (setuid and sticky bits included)
// as they are in the tree, hard links as tar hard links, file
// capabilities kept. Sockets, FIFOs and device nodes are left out: the
// container engine gives the node its own /dev, and the tree's /dev
// entries (debootstrap makes some) would be the build host's. So the bytes
// are a function of the tree's names, contents, owners and modes only,
// not of when or in which order the files were written. It returns the
// layer's sha256 (its digest and diff ID, the layer being uncompressed).
func WriteLayer(root string, created time.Time, out io.Writer) (v1.Hash, error) {
	root = filepath.Clean(root)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return v1.Hash{}, fmt.Errorf("kindnode: root filesystem %q is not a directory", root)
	}
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return v1.Hash{}, fmt.Errorf("kindnode: walking %s: %w", root, err)
	}
	// Byte order of the names: a parent precedes its children (a prefix
	// sorts first), which is all tar needs; the order no longer depends
	// on the filesystem's directory order.
	sort.Strings(paths)
	h := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(out, h))
	// inode -> first name written, for hard links.
	written := map[uint64]string{}
	for _, p := range paths {
		if err := writeEntry(tw, root, p, created, written); err != nil {
			return v1.Hash{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return v1.Hash{}, err
	}
	return hashOf(h), nil
}

func hashOf(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
}

func writeEntry(tw *tar.Writer, root, p string, created time.Time, written map[uint64]string) error {
	st, err := os.Lstat(p)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("kindnode: %s: no owner information", p)
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	name := filepath.ToSlash(rel)
	hdr := &tar.Header{
		Name:    name,
		Mode:    int64(st.Mode().Perm()),
		Uid:     int(sys.Uid),
		Gid:     int(sys.Gid),
		ModTime: created,
		Format:  tar.FormatPAX,
	}
	if st.Mode()&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000
	}
	if st.Mode()&fs.ModeSetgid != 0 {
		hdr.Mode |= 0o2000
	}
	if st.Mode()&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	switch {
	case st.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
	case st.Mode().IsRegular():
		if sys.Nlink > 1 {
			if first, ok := written[sys.Ino]; ok {
				hdr.Typeflag = tar.TypeLink
				hdr.Linkname = first
				return tw.WriteHeader(hdr)
			}
			written[sys.Ino] = name
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = st.Size()
	default:
		return nil // device, FIFO, socket: see WriteLayer
	}
	if st.Mode()&fs.ModeSymlink == 0 {
		buf := make([]byte, 256)
		n, err := unix.Lgetxattr(p, capabilityXattr, buf)
		switch {
		case err == nil:
			hdr.PAXRecords = map[string]string{"SCHILY.xattr." + capabilityXattr: string(buf[:n])}
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP):
		default:
			return fmt.Errorf("kindnode: reading %s of %s: %w", capabilityXattr, p, err)
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("kindnode: tar header for %s: %w", name, err)
	}
	if hdr.Typeflag == tar.TypeReg {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if n, err := io.Copy(tw, f); err != nil || n != hdr.Size {
			return fmt.Errorf("kindnode: copying %s into the layer: %d of %d bytes: %v (the tree changed while packing?)", name, n, hdr.Size, err)
		}
	}
	return nil
}

// fileLayer is an uncompressed layer stored in a file: its digest and diff
// ID are the same sha256. Uncompressed, because compressing half a
// gigabyte on every build costs more than the disk it saves; the engine
// stores the layer unpacked anyway.
type fileLayer struct {
	path string
	sum  v1.Hash
	size int64
}

func (l fileLayer) Digest() (v1.Hash, error)             { return l.sum, nil }
func (l fileLayer) DiffID() (v1.Hash, error)             { return l.sum, nil }
func (l fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l fileLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
func (l fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l fileLayer) MediaType() (types.MediaType, error)  { return types.DockerUncompressedLayer, nil }
func (l fileLayer) String() string                       { return "layer " + l.path }

// NodeConfig is what the node image's config says besides its layer: what
// kind's base image Dockerfile sets (ENV container=docker, STOPSIGNAL
// SIGRTMIN+3, ENTRYPOINT entrypoint /sbin/init), plus labels.
type NodeConfig struct {
	Created time.Time
	Labels  map[string]string
	GOARCH  string
}

// NodeImage is the one-layer node image of the layer file at layerPath
// (written by WriteLayer, whose sum is given).
func NodeImage(layerPath string, sum v1.Hash, c NodeConfig) (v1.Image, error) {
	st, err := os.Stat(layerPath)
	if err != nil {
		return nil, fmt.Errorf("kindnode: layer: %w", err)
	}
	layer := fileLayer{path: layerPath, sum: sum, size: st.Size()}
	created := v1.Time{Time: c.Created.UTC()}
	base := mutate.MediaType(empty.Image, types.DockerManifestSchema2)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: created, CreatedBy: "meshclaims kindnode: Debian rootfs with kind's base files", Comment: "see docs/kind-on-podman.md"},
		MediaType: types.DockerUncompressedLayer,
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
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "container=docker"}
	cfg.Config.Entrypoint = []string{"/usr/local/bin/entrypoint", "/sbin/init"}
	cfg.Config.StopSignal = "SIGRTMIN+3"
	cfg.Config.Labels = c.Labels
	return mutate.ConfigFile(img, cfg)
}
