package conntrackvm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/meshclaims/meshclaims/framework/conntrackfill"
	"github.com/meshclaims/meshclaims/framework/repo"
	"github.com/meshclaims/meshclaims/framework/umlvm"
)

// MemMiB is the VM's memory: enough for the program and 4,000 sockets.
// The limits the claim sets are written explicitly, so the kernel's own
// memory-scaled default (2,048 at this size) is not what is measured.
const MemMiB = 256

// Options is one VM run.
type Options struct {
	Kernel umlvm.Kernel
	// Init is the static in-VM program; "" builds cmd/conntrackvm from
	// the repository (BuildInit).
	Init    string
	Fill    conntrackfill.Params
	Timeout time.Duration // config.Timeouts.VMRun
}

// Outcome is what one VM run returned.
type Outcome struct {
	Result conntrackfill.Result
	// Layer names the kernel the measurement ran on, for the report.
	Layer string
	// KernelLog holds the VM kernel's conntrack and SYN-queue messages.
	KernelLog []string
	// Elapsed is the VM's wall time, boot to power-off.
	Elapsed time.Duration
}

// TableFullLines counts the kernel's "table full, dropping packet" lines
// in a kernel log: conntrack's own word that it dropped a packet (the
// kernel rate-limits the message, so the count is a floor).
func (o Outcome) TableFullLines() int {
	n := 0
	for _, l := range o.KernelLog {
		if strings.Contains(l, "table full, dropping packet") {
			n++
		}
	}
	return n
}

// BuildInit builds cmd/conntrackvm statically into dir/init and returns
// its path.
func BuildInit(ctx context.Context, dir string) (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", fmt.Errorf("find the repository to build cmd/conntrackvm: %w", err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			return "", errors.New("no go toolchain to build cmd/conntrackvm (the VM's init); install Go or pass a prebuilt init")
		}
	}
	out := filepath.Join(dir, InitFile)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", out, "./cmd/conntrackvm")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cmd/conntrackvm: %w: %s", err, b)
	}
	return out, nil
}

// Run lays out the VM's root, boots it and returns the in-VM program's
// result. The root and the VM's processes are gone when it returns.
func Run(ctx context.Context, o Options) (Outcome, error) {
	if err := o.Fill.Validate(); err != nil {
		return Outcome{}, err
	}
	root, err := os.MkdirTemp("", "conntrackvm-")
	if err != nil {
		return Outcome{}, err
	}
	defer os.RemoveAll(root)
	if err := layout(ctx, root, o); err != nil {
		return Outcome{}, err
	}
	var console bytes.Buffer
	t0 := time.Now()
	runErr := o.Kernel.Run(ctx, umlvm.Boot{Root: root, Init: "/" + InitFile, MemMiB: MemMiB, Timeout: o.Timeout, Console: &console})
	out := Outcome{Layer: o.Kernel.String(), Elapsed: time.Since(t0)}
	if runErr != nil {
		return out, fmt.Errorf("%w; console: %s", runErr, tail(console.String()))
	}
	b, err := os.ReadFile(filepath.Join(root, ResultFile))
	if err != nil {
		return out, fmt.Errorf("the VM wrote no %s (%v); console: %s", ResultFile, err, tail(console.String()))
	}
	var rep GuestReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return out, fmt.Errorf("%s: %w", ResultFile, err)
	}
	out.KernelLog = rep.KernelLog
	if rep.Error != "" || rep.Result == nil {
		return out, fmt.Errorf("in the VM: %s", rep.Error)
	}
	out.Result = *rep.Result
	if out.Result.Kernel != o.Kernel.Release {
		return out, fmt.Errorf("the measurement ran on kernel %q, not the VM's %s: it did not run in the VM", out.Result.Kernel, o.Kernel.Release)
	}
	return out, nil
}

// layout fills the VM's root: init, modules, parameters, /proc's mount point.
func layout(ctx context.Context, root string, o Options) error {
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, ModulesDir), 0o755); err != nil {
		return err
	}
	if o.Init == "" {
		if _, err := BuildInit(ctx, root); err != nil {
			return err
		}
	} else if err := copyFile(o.Init, filepath.Join(root, InitFile), 0o755); err != nil {
		return fmt.Errorf("the VM's init: %w", err)
	}
	p := GuestParams{Fill: o.Fill}
	for _, m := range conntrackModules {
		src := filepath.Join(o.Kernel.Modules, m.Path)
		name := filepath.Base(m.Path)
		if err := copyFile(src, filepath.Join(root, ModulesDir, name), 0o644); err != nil {
			return fmt.Errorf("%w: module %s: %v (the kernel's conntrack modules come with %s)", umlvm.ErrMissing, name, err, umlvm.Package)
		}
		p.Modules = append(p.Modules, Module{File: name, Args: m.Args})
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, ParamsFile), b, 0o644)
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tail is the console's last lines, for errors.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, " | ")
}
