// Package umlvm boots a disposable User-Mode Linux VM: Debian's
// user-mode-linux kernel (a Linux kernel that runs as host processes, with
// its own init network namespace, so its sysctls are its own) on a
// directory of the host as its root (hostfs), with a program of the
// caller's as its init. The VM ends when its init powers it off; on every
// other path (a timeout, the caller's context, SIGINT or SIGTERM) its
// whole process group is killed, since UML runs each guest address space
// as a host process of its own.
package umlvm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/meshclaims/meshclaims/framework/repo"
)

// Binary is the kernel Debian's user-mode-linux package installs.
const Binary = "linux.uml"

// ModulesRoot holds the package's modules, one directory per release.
const ModulesRoot = "/usr/lib/uml/modules"

// Package is what to install when the kernel is missing.
const Package = "user-mode-linux"

// ErrMissing is wrapped by Find's error when the UML kernel or its
// modules are not installed: the VM layer is not on this machine.
var ErrMissing = errors.New("the User-Mode Linux layer is not installed")

// LocalRoot is where make vm-deps unpacks Debian sid's user-mode-linux,
// relative to the repository, on a host whose CPU the system's cannot run
// on: with AMX, bookworm's 6.1 (and trixie's 6.12) fail "ptrace set fp
// regs failed, errno = 14" as they start init; sid's 7.2 boots
// (hack/install-vm-packages.sh).
const LocalRoot = "bin/uml/root"

// Kernel is an installed UML kernel.
type Kernel struct {
	Path string // the kernel binary
	// Release is the kernel's release ("6.1.176"), named by its modules'
	// directory, and Modules that directory.
	Release string
	Modules string
	// From says which Debian package it is: "user-mode-linux", or sid's
	// under LocalRoot.
	From string
}

// String is what reports name as the layer: "User-Mode Linux 6.1.176 (Debian user-mode-linux, /usr/bin/linux.uml)".
func (k Kernel) String() string {
	return fmt.Sprintf("User-Mode Linux %s (Debian %s, %s)", k.Release, k.From, k.Path)
}

// Find locates the UML kernel: sid's under LocalRoot when make vm-deps put
// it there, else the system's on PATH, with its modules under ModulesRoot.
func Find() (Kernel, error) {
	if root, err := repo.Root(); err == nil {
		if k, ok, err := findLocal(filepath.Join(root, LocalRoot)); ok {
			return k, err
		}
	}
	return find(exec.LookPath, ModulesRoot)
}

// findLocal finds a kernel unpacked under root (ok false when none is).
func findLocal(root string) (Kernel, bool, error) {
	bin := filepath.Join(root, "usr/bin", Binary)
	if _, err := os.Stat(bin); err != nil {
		return Kernel{}, false, nil
	}
	k, err := find(func(string) (string, error) { return bin, nil }, filepath.Join(root, strings.TrimPrefix(ModulesRoot, "/")))
	pkgs, _ := os.ReadFile(filepath.Join(root, "PACKAGES"))
	k.From = "sid " + Package + " under " + LocalRoot + " (" + strings.Join(strings.Fields(string(pkgs)), ", ") + ")"
	return k, true, err
}

func find(look func(string) (string, error), modulesRoot string) (Kernel, error) {
	path, err := look(Binary)
	if err != nil {
		return Kernel{}, fmt.Errorf("%w: no %s on PATH (install Debian's %s: make vm-deps, or apt-get install %s)", ErrMissing, Binary, Package, Package)
	}
	ents, err := os.ReadDir(modulesRoot)
	var releases []string
	for _, e := range ents {
		if e.IsDir() {
			releases = append(releases, e.Name())
		}
	}
	if err != nil || len(releases) != 1 {
		return Kernel{}, fmt.Errorf("%w: want one release directory of modules under %s beside %s, found %v (%v); reinstall %s", ErrMissing, modulesRoot, path, releases, err, Package)
	}
	return Kernel{Path: path, Release: releases[0], Modules: filepath.Join(modulesRoot, releases[0]), From: Package}, nil
}

// Boot is one VM.
type Boot struct {
	// Root is the host directory the VM mounts as / (hostfs, read-write).
	Root string
	// Init is the VM's init, a path inside Root ("/init"): a static binary.
	Init string
	// MemMiB is the VM's memory (its own page cache and slab: conntrack's
	// default nf_conntrack_max scales with it).
	MemMiB int
	// Timeout bounds the whole VM, boot to power-off.
	Timeout time.Duration
	// Console receives the kernel's console (boot log and init's output).
	Console io.Writer
}

// Run boots the VM and waits until its init powers it off. It returns an
// error when the VM ran past b.Timeout, ctx ended or the process received
// SIGINT/SIGTERM (each time after killing the VM's processes), or when the
// kernel exited with a failure.
func (k Kernel) Run(ctx context.Context, b Boot) error {
	if b.Root == "" || b.Init == "" || b.MemMiB <= 0 || b.Timeout <= 0 {
		return fmt.Errorf("umlvm: root %q, init %q, memory %d MiB and timeout %s: want a directory, an init path, positive memory and a positive timeout", b.Root, b.Init, b.MemMiB, b.Timeout)
	}
	if strings.ContainsAny(b.Root, " ,") {
		return fmt.Errorf("umlvm: root %q: hostfs takes the path on the kernel command line; want one without spaces or commas", b.Root)
	}
	// UML keeps its memory file and its control socket in these
	// directories; they go with the VM.
	state, err := os.MkdirTemp("", "umlvm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)

	parent := ctx
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()

	console := b.Console
	if console == nil {
		console = io.Discard
	}
	cmd := exec.CommandContext(ctx, k.Path,
		fmt.Sprintf("mem=%dM", b.MemMiB),
		"root=/dev/root", "rootfstype=hostfs", "rootflags="+b.Root, "rw",
		"init="+b.Init, "quiet",
		"con0=null,fd:1", "con=null",
		"uml_dir="+state, "umid=vm",
	)
	cmd.Env = append(os.Environ(), "TMPDIR="+state)
	cmd.Stdin = nil // /dev/null: the VM reads no console input
	cmd.Stdout, cmd.Stderr = console, console
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", k.Path, err)
	}
	pgid := cmd.Process.Pid
	err = cmd.Wait()
	// Guest processes UML left behind, whatever the path.
	_ = killGroup(pgid)
	if ctx.Err() != nil {
		why := "the process got SIGINT or SIGTERM"
		switch {
		case parent.Err() != nil:
			why = "the caller's context ended: " + parent.Err().Error()
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			why = fmt.Sprintf("the VM ran past its %s timeout (config.Timeouts.VMRun)", b.Timeout)
		}
		return fmt.Errorf("umlvm: VM killed: %s", why)
	}
	if err != nil {
		return fmt.Errorf("umlvm: %s exited: %w", k.Path, err)
	}
	return nil
}

// killGroup kills a process group; one already gone is not an error.
func killGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
