package kindnode

import (
	"os"
	"path/filepath"
	"testing"
)

// The tree as debootstrap leaves it: dbus's postinst wrote a random
// /var/lib/dbus/machine-id (two fresh builds differed in that file
// alone). Staged, the node has no machine ID of its own: an empty
// /etc/machine-id and dbus's link to it.
func TestEmptyMachineID(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc", "var/lib/dbus"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dbus/machine-id"), []byte("354dcaa9a5bc470ba617513ca968b430\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/machine-id"), []byte("350a7f1a1d1944f1a7920f5db557335b\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := emptyMachineID(root); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/machine-id")); err != nil || len(b) != 0 {
		t.Errorf("/etc/machine-id = %q (%v), want empty", b, err)
	}
	if l, err := os.Readlink(filepath.Join(root, "var/lib/dbus/machine-id")); err != nil || l != "/etc/machine-id" {
		t.Errorf("/var/lib/dbus/machine-id -> %q (%v), want the link to /etc/machine-id", l, err)
	}
	// Again on the staged tree (a rebuild from the cache): the same.
	if err := emptyMachineID(root); err != nil {
		t.Errorf("second pass: %v", err)
	}
	// A tree without dbus gets no dbus directory.
	bare := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bare, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := emptyMachineID(bare); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bare, "var/lib/dbus")); !os.IsNotExist(err) {
		t.Errorf("created var/lib/dbus in a tree without dbus: %v", err)
	}
}
