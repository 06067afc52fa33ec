package localk8s

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Supervisor starts components as children of this process and stops them.
//
// Every child gets Pdeathsig=SIGKILL, so the cluster dies with the Go
// process that started it (a test binary killed by `go test -timeout`, a
// Ctrl-C). Linux delivers Pdeathsig when the *thread* that forked the child
// exits, not the process, and the Go runtime may retire threads; so every
// fork happens on one goroutine locked to its OS thread for the life of the
// process, which never exits.
type Supervisor struct {
	logDir string

	mu    sync.Mutex
	procs []*Process
}

// Process is one running component.
type Process struct {
	Component
	Cmd     *exec.Cmd
	LogPath string
	done    chan struct{}
	err     error
}

// Exited reports whether the process has exited, and its wait error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// NewSupervisor returns a supervisor that writes each component's output to
// <logDir>/<name>.log.
func NewSupervisor(logDir string) *Supervisor { return &Supervisor{logDir: logDir} }

type forkRequest struct {
	cmd   *exec.Cmd
	reply chan error
}

var (
	forkOnce sync.Once
	forks    chan forkRequest
)

// forkThread is the one goroutine that starts children (see Supervisor).
func forkThread() {
	runtime.LockOSThread()
	// Never unlocked and never returns: the thread must outlive every child.
	for req := range forks {
		req.reply <- req.cmd.Start()
	}
}

func startOnLockedThread(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		forks = make(chan forkRequest)
		go forkThread()
	})
	reply := make(chan error, 1)
	forks <- forkRequest{cmd, reply}
	return <-reply
}

// Start starts comp with its output appended to its log file.
func (s *Supervisor) Start(comp Component) (*Process, error) {
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(s.logDir, comp.Name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "=== %s: starting %s %q\n", time.Now().Format(time.RFC3339), comp.Path, comp.Args)
	cmd := exec.Command(comp.Path, comp.Args...)
	if comp.Argv0 != "" {
		cmd.Args[0] = comp.Argv0
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig: syscall.SIGKILL,
		// Own process group: a terminal's Ctrl-C reaches the test process,
		// which then stops the components in order, rather than every
		// component at once.
		Setpgid:    true,
		Cloneflags: comp.Cloneflags,
	}
	if err := startOnLockedThread(cmd); err != nil {
		logf.Close()
		return nil, fmt.Errorf("localk8s: starting %s (%s): %w", comp.Name, comp.Path, err)
	}
	p := &Process{Component: comp, Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// Running lists the processes started and not yet stopped, in start order.
func (s *Supervisor) Running() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.procs...)
}

// Stop stops one process: SIGTERM, then SIGKILL after its StopTimeout.
func (s *Supervisor) Stop(p *Process) error {
	defer s.forget(p)
	if done, _ := p.Exited(); done {
		return nil
	}
	signal := func(sig syscall.Signal) {
		if !p.SignalGroup {
			_ = p.Cmd.Process.Signal(sig)
			return
		}
		// nsenter dies at once on SIGTERM (it forwards nothing) while its
		// child, the component, would still be shutting down: SIGTERM the
		// child, whose exit ends nsenter; SIGKILL the whole group.
		if sig == syscall.SIGTERM {
			if kids := childrenOf(p.Cmd.Process.Pid); len(kids) > 0 {
				for _, k := range kids {
					_ = syscall.Kill(k, sig)
				}
				return
			}
		}
		_ = syscall.Kill(-p.Cmd.Process.Pid, sig)
	}
	signal(syscall.SIGTERM)
	timeout := time.Duration(p.StopTimeout) * time.Second
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return fmt.Errorf("localk8s: %s (pid %d) ignored SIGTERM for %s and was killed", p.Name, p.Cmd.Process.Pid, timeout)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("localk8s: %s (pid %d) survived SIGKILL for 10s", p.Name, p.Cmd.Process.Pid)
	}
}

// StopAll stops every running process in reverse start order.
func (s *Supervisor) StopAll() error {
	procs := s.Running()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := s.Stop(procs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Find returns the running process named name.
func (s *Supervisor) Find(name string) *Process {
	for _, p := range s.Running() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func (s *Supervisor) forget(p *Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.procs {
		if q == p {
			s.procs = append(s.procs[:i], s.procs[i+1:]...)
			return
		}
	}
}

// childrenOf lists the host PIDs whose parent is pid (from /proc/*/stat).
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
