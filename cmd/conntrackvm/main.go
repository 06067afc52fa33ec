//go:build linux

// Command conntrackvm is the init of framework/conntrackvm's disposable VM:
// it mounts /proc, loads the conntrack modules, brings loopback up, runs
// framework/conntrackfill with the parameters the host wrote, writes the
// report beside them and powers the VM off. Built static (CGO_ENABLED=0),
// it needs nothing else in the VM's root.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/meshclaims/meshclaims/framework/conntrackfill"
	"github.com/meshclaims/meshclaims/framework/conntrackvm"
)

func main() {
	var rep conntrackvm.GuestReport
	res, err := run()
	if err != nil {
		rep.Error = err.Error()
		fmt.Fprintln(os.Stderr, "conntrackvm:", err)
	} else {
		rep.Result = &res
	}
	rep.KernelLog = kernelLog()
	if err := write(rep); err != nil {
		fmt.Fprintln(os.Stderr, "conntrackvm: write report:", err)
	}
	unix.Sync()
	// As PID 1, returning would panic the kernel; power off instead, which
	// ends the UML process on the host.
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	os.Exit(1)
}

func run() (conntrackfill.Result, error) {
	if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil && err != unix.EBUSY {
		return conntrackfill.Result{}, fmt.Errorf("mount /proc: %w", err)
	}
	b, err := os.ReadFile("/" + conntrackvm.ParamsFile)
	if err != nil {
		return conntrackfill.Result{}, err
	}
	var p conntrackvm.GuestParams
	if err := json.Unmarshal(b, &p); err != nil {
		return conntrackfill.Result{}, fmt.Errorf("%s: %w", conntrackvm.ParamsFile, err)
	}
	for _, m := range p.Modules {
		if err := loadModule(filepath.Join("/", conntrackvm.ModulesDir, m.File), m.Args); err != nil {
			return conntrackfill.Result{}, err
		}
	}
	if err := loopbackUp(); err != nil {
		return conntrackfill.Result{}, err
	}
	// Every connection is two sockets (client and accepted) in this process.
	n := uint64(2*p.Fill.Connections + 256)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n}); err != nil {
		return conntrackfill.Result{}, fmt.Errorf("raise the open-file limit to %d: %w", n, err)
	}
	return conntrackfill.Run(context.Background(), p.Fill)
}

func loadModule(path, args string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), args, 0); err != nil && err != unix.EEXIST {
		return fmt.Errorf("load module %s %q: %w", path, args, err)
	}
	return nil
}

// loopbackUp sets lo up; the kernel then gives it 127.0.0.1/8 itself.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("read lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

// kernelLog returns the kernel's messages about the table and the SYN
// queue ("nf_conntrack: table full, dropping packet", "SYN flooding"): the
// kernel's own word for why connects failed.
func kernelLog() []string {
	buf := make([]byte, 1<<20)
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil {
		return []string{"read the kernel log: " + err.Error()}
	}
	var out []string
	for _, l := range strings.Split(string(buf[:n]), "\n") {
		if strings.Contains(l, "conntrack") || strings.Contains(l, "SYN") {
			out = append(out, l)
		}
	}
	return out
}

func write(rep conntrackvm.GuestReport) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	return os.WriteFile("/"+conntrackvm.ResultFile, b, 0o644)
}
