package kindnode

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tree makes a small root filesystem with what a Debian tree has: nested
// directories, a setuid file, a file of another owner, symlinks, a hard
// link and a FIFO (which the layer leaves out).
func tree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "etc", "systemd", "system"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "tmp"), 0o1777))
	must(os.Chmod(filepath.Join(root, "tmp"), 0o777|fs.ModeSticky))
	must(os.WriteFile(filepath.Join(root, "usr", "bin", "k8s"), []byte("multi-call"), 0o755))
	must(os.Symlink("k8s", filepath.Join(root, "usr", "bin", "kubelet")))
	must(os.WriteFile(filepath.Join(root, "usr", "bin", "su"), []byte("setuid"), 0o755))
	must(os.Chmod(filepath.Join(root, "usr", "bin", "su"), 0o755|fs.ModeSetuid))
	must(os.Link(filepath.Join(root, "usr", "bin", "k8s"), filepath.Join(root, "usr", "bin", "kubeadm")))
	must(os.WriteFile(filepath.Join(root, "etc", "shadow"), []byte("root:*:"), 0o640))
	if os.Geteuid() == 0 {
		must(os.Lchown(filepath.Join(root, "etc", "shadow"), 0, 42))
	}
	must(os.Symlink("/dev/null", filepath.Join(root, "etc", "systemd", "system", "systemd-binfmt.service")))
	must(syscall.Mkfifo(filepath.Join(root, "etc", "initctl"), 0o600))
	return root
}

func pack(t *testing.T, root string, created time.Time) Result {
	t.Helper()
	res, err := PackImage(root, DefaultRef, filepath.Join(t.TempDir(), "node.tar"), created, Labels(), "amd64")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPackIsReproducible packs the same tree twice, with the files'
// timestamps changed in between, and gets the same digests; changing one
// byte of one file (the negative control) changes them.
func TestPackIsReproducible(t *testing.T) {
	root := tree(t)
	created := time.Unix(1700000000, 0)
	first := pack(t, root, created)
	later := time.Now().Add(time.Hour)
	if err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		ts := []unix.Timespec{unix.NsecToTimespec(later.UnixNano()), unix.NsecToTimespec(later.UnixNano())}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil {
		t.Fatal(err)
	}
	second := pack(t, root, created)
	if first.Digest != second.Digest || first.ConfigDigest != second.ConfigDigest || first.LayerDigest != second.LayerDigest {
		t.Fatalf("same tree, other timestamps: digests differ:\n%+v\n%+v", first, second)
	}
	if err := os.WriteFile(filepath.Join(root, "usr", "bin", "su"), []byte("setuiD"), 0o755); err != nil {
		t.Fatal(err)
	}
	changed := pack(t, root, created)
	if changed.LayerDigest == first.LayerDigest || changed.ConfigDigest == first.ConfigDigest || changed.Digest == first.Digest {
		t.Fatalf("one byte changed, digests did not: %+v", changed)
	}
	other := pack(t, root, created.Add(time.Second))
	if other.ConfigDigest == changed.ConfigDigest {
		t.Fatalf("another creation time, same image ID %s", other.ConfigDigest)
	}
}

// TestLayerEntries reads the layer back: modes with setuid and sticky
// bits, owners, the hard link, the symlinks, no FIFO, every timestamp the
// creation time, parents before children.
func TestLayerEntries(t *testing.T) {
	root := tree(t)
	created := time.Unix(1700000000, 0).UTC()
	var buf bytes.Buffer
	if _, err := WriteLayer(root, created, &buf); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	var order []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
		order = append(order, h.Name)
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, created)
		}
	}
	seen := map[string]bool{}
	for _, n := range order {
		if d := filepath.Dir(filepath.Clean(n)); d != "." && !seen[d+"/"] {
			t.Errorf("%s comes before its directory %s/ (order %v)", n, d, order)
		}
		seen[n] = true
	}
	check := func(name string, typ byte, mode int64, link string) {
		t.Helper()
		h, ok := got[name]
		if !ok {
			t.Fatalf("no %s in the layer; entries %v", name, order)
		}
		if h.Typeflag != typ || h.Mode != mode || h.Linkname != link {
			t.Errorf("%s: type %c mode %o link %q; want %c %o %q", name, h.Typeflag, h.Mode, h.Linkname, typ, mode, link)
		}
	}
	check("tmp/", tar.TypeDir, 0o1777, "")
	check("usr/bin/su", tar.TypeReg, 0o4755, "")
	check("usr/bin/kubelet", tar.TypeSymlink, 0o777, "k8s")
	check("etc/systemd/system/systemd-binfmt.service", tar.TypeSymlink, 0o777, "/dev/null")
	// usr/bin/k8s sorts first, so kubeadm is the link to it.
	check("usr/bin/k8s", tar.TypeReg, 0o755, "")
	check("usr/bin/kubeadm", tar.TypeLink, 0o755, "usr/bin/k8s")
	if _, ok := got["etc/initctl"]; ok {
		t.Error("the FIFO etc/initctl is in the layer; device nodes, FIFOs and sockets are left out")
	}
	if os.Geteuid() == 0 && got["etc/shadow"].Gid != 42 {
		t.Errorf("etc/shadow: gid %d, want 42 (owners are kept)", got["etc/shadow"].Gid)
	}
}

func TestPackRefusesBadInput(t *testing.T) {
	if _, err := PackImage(filepath.Join(t.TempDir(), "missing"), DefaultRef, filepath.Join(t.TempDir(), "x.tar"), time.Unix(0, 0), nil, "amd64"); err == nil {
		t.Error("a missing tree was packed")
	}
	if _, err := PackImage(tree(t), "Not A Ref", filepath.Join(t.TempDir(), "x.tar"), time.Unix(0, 0), nil, "amd64"); err == nil {
		t.Error("a malformed image name was accepted")
	}
}
