// Package cleanuptest is what the tests of clean-up share: a lister of the
// objects a run left, found by the run label and independently of the
// Cleaner's own discovery (so a blind Cleaner cannot pass its own test),
// and a child process interrupted with a real SIGINT part-way through
// set-up. framework/cleanup, framework/setup and suites/all use it; it lives
// here, not in suites/, because framework/ never imports suites/.
package cleanuptest

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apply"
)

// Labelled lists ("Kind namespace/name"), by the run label, every object of
// each kind objs has, Namespaces being deleted included: for a test that
// finalizes deleted Namespaces itself, so that they really go.
func Labelled(t testing.TB, c client.Client, run string, objs []client.Object) []string {
	t.Helper()
	return list(t, c, run, objs, true)
}

// Left is Labelled without Namespaces that are being deleted: envtest runs
// no namespace controller, so a deleted Namespace stays Terminating, and on
// a cluster the controller would finish it.
func Left(t testing.TB, c client.Client, run string, objs []client.Object) []string {
	t.Helper()
	return list(t, c, run, objs, false)
}

func list(t testing.TB, c client.Client, run string, objs []client.Object, terminatingNamespaces bool) []string {
	t.Helper()
	kinds := map[schema.GroupVersionKind]bool{}
	for _, o := range objs {
		u, err := apply.ToUnstructured(o, apply.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		kinds[u.GroupVersionKind()] = true
	}
	var left []string
	for gvk := range kinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(context.Background(), l, client.MatchingLabels{fixtures.LabelRun: run}); err != nil {
			t.Fatalf("list %s: %v", gvk, err)
		}
		for _, it := range l.Items {
			if !terminatingNamespaces && gvk.Kind == "Namespace" && it.GetDeletionTimestamp() != nil {
				continue
			}
			left = append(left, gvk.Kind+" "+it.GetNamespace()+"/"+it.GetName())
		}
	}
	return left
}

// Process is a started child process whose output the test reads while it
// runs, to interrupt it at the right moment.
type Process struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
}

// Start starts cmd with its stdout and stderr collected. When the test
// ends, a process still running is killed, and its output is logged under
// name ("child", "e2e").
func Start(t testing.TB, cmd *exec.Cmd, name string) *Process {
	t.Helper()
	p := &Process{cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		t.Logf("%s output:\n%s", name, p.out.String())
	})
	return p
}

// Output is what the process has written so far.
func (p *Process) Output() string { return p.out.String() }

// WaitForOutput waits until the process has written want (a line set-up
// logs once it has got where the test interrupts it). The test fails if the
// process exits first or want does not come within timeout.
func (p *Process) WaitForOutput(t testing.TB, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.out.String(), want) {
		select {
		case err := <-p.exited:
			t.Fatalf("the run ended before it was interrupted: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not write %q within %v", want, timeout)
		}
	}
}

// WaitForMatch is WaitForOutput for a pattern.
func (p *Process) WaitForMatch(t testing.TB, re *regexp.Regexp, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !re.MatchString(p.out.String()) {
		select {
		case err := <-p.exited:
			t.Fatalf("the run ended before it was interrupted: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not write %q within %v", re, timeout)
		}
	}
}

// Interrupt sends the process a SIGINT, as Ctrl-C in a terminal does, and
// returns what cmd.Wait returned once it exited; the test fails if it does
// not exit within timeout.
func (p *Process) Interrupt(t testing.TB, timeout time.Duration) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		return err
	case <-time.After(timeout):
		t.Fatalf("the interrupted run did not exit (its clean-up did not finish) within %v", timeout)
		return nil
	}
}

// InterruptGroup is Interrupt for a process started in a process group of
// its own (cmd.SysProcAttr.Setpgid): the SIGINT goes to the whole group,
// as a terminal's Ctrl-C does, so `go test` and the test binary it runs
// both get it.
func (p *Process) InterruptGroup(t testing.TB, timeout time.Duration) error {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		return err
	case <-time.After(timeout):
		t.Fatalf("the interrupted run did not exit (its clean-up did not finish) within %v", timeout)
		return nil
	}
}

// syncBuffer collects the child's output for the parent to read while the
// child writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Kill sends the process a SIGKILL, as a recycled CI runner or an
// out-of-memory kill ends it (no clean-up of any kind), and returns what
// cmd.Wait returned once it exited.
func (p *Process) Kill(t testing.TB, timeout time.Duration) error {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		return err
	case <-time.After(timeout):
		t.Fatalf("the killed run did not exit within %v", timeout)
		return nil
	}
}

// Wait waits for the process to end by itself and returns what cmd.Wait
// returned; the test fails if it has not ended within timeout.
func (p *Process) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(timeout):
		t.Fatalf("the run did not end within %v", timeout)
		return nil
	}
}
