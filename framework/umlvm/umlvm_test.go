package umlvm

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFindNamesWhatToInstall(t *testing.T) {
	none := func(string) (string, error) { return "", errors.New("not found") }
	_, err := find(none, t.TempDir())
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "apt-get install user-mode-linux") || !strings.Contains(err.Error(), Binary) {
		t.Fatalf("no kernel: %v", err)
	}
	here := func(string) (string, error) { return "/usr/bin/linux.uml", nil }
	_, err = find(here, t.TempDir())
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "release directory of modules") {
		t.Fatalf("no modules: %v", err)
	}
	mods := t.TempDir()
	if err := os.Mkdir(filepath.Join(mods, "6.1.176"), 0o755); err != nil {
		t.Fatal(err)
	}
	k, err := find(here, mods)
	if err != nil || k.Release != "6.1.176" || k.Modules != filepath.Join(mods, "6.1.176") {
		t.Fatalf("find = %+v, %v", k, err)
	}
}

// A kernel unpacked under LocalRoot is found with its modules and named as
// sid's with the packages it came from; an empty root is not a kernel.
func TestFindLocalNamesSidsPackage(t *testing.T) {
	root := t.TempDir()
	if _, ok, _ := findLocal(root); ok {
		t.Fatal("an empty root taken for a kernel")
	}
	for _, d := range []string{"usr/bin", "usr/lib/uml/modules/7.2.7"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "usr/bin", Binary), nil, 0o755)
	os.WriteFile(filepath.Join(root, "PACKAGES"), []byte("libc6_2.43-7_amd64.deb\nuser-mode-linux_7.2um1_amd64.deb\n"), 0o644)
	k, ok, err := findLocal(root)
	if !ok || err != nil || k.Release != "7.2.7" || k.Path != filepath.Join(root, "usr/bin", Binary) {
		t.Fatalf("findLocal = %+v, %v, %v", k, ok, err)
	}
	if s := k.String(); !strings.Contains(s, "User-Mode Linux 7.2.7 (Debian sid user-mode-linux under bin/uml/root (libc6_2.43-7_amd64.deb, user-mode-linux_7.2um1_amd64.deb)") {
		t.Errorf("String = %s", s)
	}
}

func TestRunRejectsBadBoot(t *testing.T) {
	k := Kernel{Path: "/bin/false"}
	for _, b := range []Boot{
		{Init: "/init", MemMiB: 64, Timeout: time.Second},
		{Root: "/var/lib/meshclaims-vm/a b", Init: "/init", MemMiB: 64, Timeout: time.Second},
		{Root: "/var/lib/meshclaims-vm/x", Init: "/init", MemMiB: 0, Timeout: time.Second},
	} {
		if err := k.Run(context.Background(), b); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%+v: %v", b, err)
		}
	}
}

// TestMain doubles as the init of the VMs the clean-up tests boot: as PID
// 1 (only the VM's init is) it waits forever, as a VM that never powers
// off would.
func TestMain(m *testing.M) {
	if os.Getpid() == 1 {
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

// kernel is the installed UML kernel, or the test is skipped naming what
// is missing; MESHCLAIMS_REQUIRE_VM=1 (make test) makes a missing layer a
// failure.
func kernel(t *testing.T) Kernel {
	t.Helper()
	k, err := Find()
	if err != nil {
		if os.Getenv("MESHCLAIMS_REQUIRE_VM") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return k
}

// sleepingRoot is a VM root whose init is this test binary, which waits.
func sleepingRoot(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("the test binary %s is dynamically linked; the VM's init must be static", exe)
		}
	}
	root, err := os.MkdirTemp("", "umlvm-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "init"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// vmProcesses lists host processes whose command line names root: the
// VM's kernel and the processes UML runs its guest's address spaces in.
func vmProcesses(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "rootflags="+root) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// A VM whose init never powers off is killed, every process of it, when
// its timeout passes, when the caller's context ends and on SIGINT. Positive control
// for the scan: while the VM runs, its processes are found.
func TestRunKillsTheVMOnEveryPath(t *testing.T) {
	k := kernel(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  time.Duration
		signal  bool // SIGINT to this process instead of a cancel
		want    string
	}{
		{"timeout", 4 * time.Second, 0, false, "ran past its 4s timeout"},
		{"context", time.Minute, 4 * time.Second, false, "the caller's context ended"},
		// Run catches SIGINT while the VM runs, so the signal kills the
		// VM instead of this test process.
		{"SIGINT", time.Minute, 4 * time.Second, true, "got SIGINT or SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := sleepingRoot(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := make(chan []string, 1)
			go func() {
				time.Sleep(2 * time.Second) // started: the kernel process names the root from its start
				seen <- vmProcesses(t, root)
				if tc.cancel > 0 {
					time.Sleep(tc.cancel - 2*time.Second)
					if tc.signal {
						_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
					} else {
						cancel()
					}
				}
			}()
			err := k.Run(ctx, Boot{Root: root, Init: "/init", MemMiB: 64, Timeout: tc.timeout})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v; want an error saying %q", err, tc.want)
			}
			if running := <-seen; len(running) == 0 {
				t.Fatal("no VM process was found while the VM ran: the scan cannot see leftovers")
			}
			if left := vmProcesses(t, root); len(left) > 0 {
				t.Fatalf("VM processes left after Run returned: %v", left)
			}
		})
	}
}
