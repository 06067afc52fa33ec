package images

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// PackSpec describes an image of files that exist already: binaries built
// by another module's build (Istio's, with Istio's own tags and link flags)
// and, optionally, a root filesystem tree they need at run time (shared
// libraries and tools unpacked from distribution packages). Pack writes it
// as Build does: one layer, sorted entries, fixed timestamps, so the same
// files give the same digest.
type PackSpec struct {
	// Name says what the image is; it goes into the layer's history.
	Name string
	// RootFS is an optional directory copied as the image's root: its
	// directories, regular files and symbolic links (targets kept as they
	// are), owned by root. Other file types are refused.
	RootFS string
	// Files are added over RootFS (replacing nothing: a path given twice is
	// an error). Binaries usually come here, with Mode 0755.
	Files []File
	// Symlinks are added like Files.
	Symlinks []Symlink
	// Dirs are directories the image's program writes to, owned by User
	// (a directory RootFS or an implied parent already has is taken over).
	Dirs []Dir
	// User is the account the image runs as; the zero value is root.
	// /etc/passwd and /etc/group are written for root and this account.
	User Account

	// ImageConfig is the config around the files; Entrypoint or Cmd is
	// required.
	ImageConfig
}

// Account is a user of an image, with its primary group and home directory
// /home/<Name> (created, owned by it).
type Account struct {
	Name     string
	UID, GID int
}

// Symlink is a symbolic link in an image.
type Symlink struct {
	// Path is the link's absolute path in the image.
	Path string
	// Target is what it points to, as readlink shows it (relative or
	// absolute, resolved inside the container).
	Target string
}

// Dir is a directory of an image owned by PackSpec.User, for a program
// that runs as that user and writes there.
type Dir struct {
	// Path is the directory's absolute path in the image.
	Path string
	// Mode holds the permission bits; zero means 0755.
	Mode fs.FileMode
}

// Packed is the result of Pack.
type Packed struct {
	Image        v1.Image
	Digest       v1.Hash // manifest digest (see Image.Digest)
	ConfigDigest v1.Hash // image ID, the identity a node shows (see Image.ConfigDigest)
	Platform     v1.Platform
	// FileSHA256 holds the hex sha256 of every regular file in the layer by
	// its path, so a run can say which binary an image carried.
	FileSHA256 map[string]string
	Created    time.Time
}

// Pack assembles the image spec describes.
func Pack(spec PackSpec) (Packed, error) {
	s, err := spec.withDefaults()
	if err != nil {
		return Packed{}, err
	}
	entries, err := packEntries(s)
	if err != nil {
		return Packed{}, err
	}
	a, err := assemble(imageConfig{
		ImageConfig: s.ImageConfig, user: fmt.Sprintf("%d:%d", s.User.UID, s.User.GID),
		createdBy: "meshclaims images.Pack " + s.Name, comment: "prebuilt files packed by meshclaims",
	}, entries)
	if err != nil {
		return Packed{}, fmt.Errorf("images: assembling %s: %w", s.Name, err)
	}
	sums := map[string]string{}
	for _, e := range entries {
		if !e.dir && e.link == "" {
			sum := sha256.Sum256(e.data)
			sums[e.path] = hex.EncodeToString(sum[:])
		}
	}
	return Packed{
		Image: a.image, Digest: a.digest, ConfigDigest: a.configDigest,
		Platform: v1.Platform{OS: "linux", Architecture: s.GOARCH}, FileSHA256: sums, Created: s.Created,
	}, nil
}

func (spec PackSpec) withDefaults() (PackSpec, error) {
	s := spec
	if strings.TrimSpace(s.Name) == "" {
		return s, errors.New("images: PackSpec.Name is empty; say what the image is, e.g. \"istio pilot\"")
	}
	if err := s.ImageConfig.setDefaults("PackSpec"); err != nil {
		return s, err
	}
	if strings.TrimSpace(s.Version) == "" {
		return s, fmt.Errorf("images: PackSpec.Version of %s is empty; it becomes the %s label", s.Name, LabelVersion)
	}
	if s.User != (Account{}) {
		if s.User.Name == "" || s.User.Name == "root" || strings.ContainsAny(s.User.Name, ":/\n ") || s.User.UID <= 0 || s.User.GID <= 0 {
			return s, fmt.Errorf("images: PackSpec.User %+v; accepted: the zero value (root) or a name without ':', '/' or spaces and UID, GID above 0", s.User)
		}
	}
	if len(s.Entrypoint) == 0 && len(s.Cmd) == 0 {
		return s, fmt.Errorf("images: PackSpec of %s has neither Entrypoint nor Cmd; give the program the image runs", s.Name)
	}
	if s.RootFS != "" {
		if st, err := os.Stat(s.RootFS); err != nil || !st.IsDir() {
			return s, fmt.Errorf("images: PackSpec.RootFS %q is not a directory", s.RootFS)
		}
	}
	return s, nil
}

// packEntries lists the layer: the root filesystem tree, the accounts'
// files, then Files and Symlinks; parents are implied root-owned 0755.
func packEntries(s PackSpec) ([]layerEntry, error) {
	byPath := map[string]layerEntry{}
	var errs []error
	add := func(what string, e layerEntry) {
		if old, ok := byPath[e.path]; ok && !(old.dir && e.dir) {
			errs = append(errs, fmt.Errorf("images: %s %q is already in the image", what, e.path))
			return
		}
		for dir := path.Dir(e.path); dir != "/"; dir = path.Dir(dir) {
			if p, ok := byPath[dir]; ok && !p.dir {
				errs = append(errs, fmt.Errorf("images: %s %q lies under %q, which is not a directory", what, e.path, dir))
				return
			}
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = layerEntry{path: dir, dir: true, mode: 0o755}
			}
		}
		byPath[e.path] = e
	}
	if s.RootFS != "" {
		if err := walkRootFS(s.RootFS, func(e layerEntry) { add("RootFS entry", e) }); err != nil {
			return nil, err
		}
	}
	for _, p := range reservedPaths {
		if _, ok := byPath[p]; ok {
			return nil, fmt.Errorf("images: PackSpec.RootFS %s has %s; Pack writes it for the image's accounts", s.RootFS, p)
		}
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n"
	group := "root:x:0:\n"
	if s.User != (Account{}) {
		home := "/home/" + s.User.Name
		passwd += fmt.Sprintf("%s:x:%d:%d:%s:%s:/sbin/nologin\n", s.User.Name, s.User.UID, s.User.GID, s.User.Name, home)
		group += fmt.Sprintf("%s:x:%d:\n", s.User.Name, s.User.GID)
		add("home directory", layerEntry{path: home, dir: true, mode: 0o755, uid: s.User.UID, gid: s.User.GID})
	}
	add("account file", layerEntry{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)})
	add("account file", layerEntry{path: "/etc/group", mode: 0o644, data: []byte(group)})
	if _, ok := byPath["/tmp"]; !ok {
		add("scratch directory", layerEntry{path: "/tmp", dir: true, mode: 0o1777})
	}
	for i, f := range s.Files {
		what := fmt.Sprintf("PackSpec.Files[%d]", i)
		if err := f.check(what); err != nil {
			return nil, err
		}
		e, err := f.entry(what)
		if err != nil {
			return nil, err
		}
		add(what, e)
	}
	for i, l := range s.Symlinks {
		what := fmt.Sprintf("PackSpec.Symlinks[%d]", i)
		if err := checkImagePath(what+".Path", l.Path); err != nil {
			return nil, err
		}
		if l.Target == "" {
			return nil, fmt.Errorf("images: %s (%s) has an empty Target", what, l.Path)
		}
		add(what, layerEntry{path: l.Path, mode: 0o777, link: l.Target})
	}
	for i, d := range s.Dirs {
		what := fmt.Sprintf("PackSpec.Dirs[%d]", i)
		if err := checkImagePath(what+".Path", d.Path); err != nil {
			return nil, err
		}
		if err := checkPerm(what, d.Path, d.Mode); err != nil {
			return nil, err
		}
		if s.User == (Account{}) {
			return nil, fmt.Errorf("images: %s (%s) would be owned by root; Dirs are for PackSpec.User, which is not set", what, d.Path)
		}
		mode := int64(d.Mode.Perm())
		if mode == 0 {
			mode = 0o755
		}
		if old, ok := byPath[d.Path]; ok && !old.dir {
			errs = append(errs, fmt.Errorf("images: %s %q is already in the image and is not a directory", what, d.Path))
			continue
		}
		delete(byPath, d.Path) // an implied or RootFS directory becomes the user's
		add(what, layerEntry{path: d.Path, dir: true, mode: mode, uid: s.User.UID, gid: s.User.GID})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	entries := make([]layerEntry, 0, len(byPath))
	for _, e := range byPath {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b layerEntry) int { return strings.Compare(a.path, b.path) })
	return entries, nil
}

// walkRootFS reports every entry under root as a layer entry, owned by root
// with its permission bits (and sticky bit) kept.
func walkRootFS(root string, add func(layerEntry)) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("images: reading RootFS: %w", err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		imgPath := "/" + filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("images: RootFS %s: %w", p, err)
		}
		mode := int64(info.Mode().Perm())
		if info.Mode()&fs.ModeSticky != 0 {
			mode |= 0o1000
		}
		switch {
		case d.IsDir():
			add(layerEntry{path: imgPath, dir: true, mode: mode})
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("images: RootFS %s: %w", p, err)
			}
			add(layerEntry{path: imgPath, mode: 0o777, link: target})
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("images: RootFS %s: %w", p, err)
			}
			add(layerEntry{path: imgPath, mode: mode, data: data})
		default:
			return fmt.Errorf("images: RootFS %s is a %v; accepted: directories, regular files and symbolic links", p, info.Mode().Type())
		}
		return nil
	})
}
