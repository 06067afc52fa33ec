package cleanup_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/cleanup"
	"github.com/meshclaims/meshclaims/framework/cleanup/cleanuptest"
	"github.com/meshclaims/meshclaims/framework/mode"
)

func TestMain(m *testing.M) { os.Exit(apiserver.RunTests(m)) }

var img = fixtures.Images{Workload: "meshclaims/workload:dev"}

// failAfter is a guard that lets n writes through, then fails: a run that
// dies halfway through deploying.
type failAfter struct {
	n, calls atomic.Int32
}

func (f *failAfter) Check(context.Context) error {
	if f.calls.Add(1) > f.n.Load() {
		return errors.New("run failed halfway (test)")
	}
	return nil
}

// everything is what a run deploys for modes, plus the claim objects and the
// outside namespace.
func everything(t *testing.T, run string, modes ...mode.Mode) []client.Object {
	t.Helper()
	o := fixtures.Options{Run: run, Images: img}
	var objs []client.Object
	for _, m := range modes {
		set, err := fixtures.ForMode(m, o)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, set...)
		if m.Meshed() {
			objs = append(objs, fixtures.ClaimObjects(fixtures.Target{Namespace: m.Namespace(), Run: run}, m)...)
		}
	}
	return objs
}

func newCleaner(t *testing.T, srv *apiserver.Server, run string, mod func(*cleanup.Options)) *cleanup.Cleaner {
	t.Helper()
	o := cleanup.Options{Run: run, TerminatingNamespaceIsGone: true, Timeout: 30 * time.Second, Poll: 100 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	c, err := cleanup.New(srv.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A run that fails halfway through applying leaves nothing behind after
// clean-up; another run's objects are untouched.
func TestCleanupAfterHalfwayFailure(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	const run = "halfway"
	objs := everything(t, run, mode.Sidecar, mode.AmbientL7)
	out, _ := fixtures.OutsideSet(fixtures.Options{Run: run, Images: img})
	objs = append(objs, out...)
	g := &failAfter{}
	g.n.Store(int32(len(objs) / 2))
	a, err := apply.New(srv.Config, g)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, objs...); err == nil {
		t.Fatal("the halfway failure did not happen")
	}
	// Another run's object, which clean-up must not touch (negative control
	// for the selector).
	other, _ := fixtures.NewTarget("other-run", "other")
	otherNS := &corev1.Namespace{}
	otherNS.Name, otherNS.Labels = other.Namespace, fixtures.SuiteLabels(other.Run)
	plain, _ := apply.New(srv.Config, nil)
	if err := plain.Apply(ctx, otherNS, fixtures.ServiceAccount(other, "keep")); err != nil {
		t.Fatal(err)
	}

	c := newCleaner(t, srv, run, nil)
	before, err := c.Remaining(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < len(objs)/2-1 {
		t.Fatalf("detector blind: %d labelled objects before clean-up, applied about %d", len(before), len(objs)/2)
	}
	rep, err := c.Run(ctx)
	if err != nil {
		t.Fatalf("clean-up: %v", err)
	}
	if len(rep.Deleted) < len(objs)/2-1 || len(rep.Remaining) != 0 {
		t.Errorf("deleted %d, remaining %v", len(rep.Deleted), rep.Remaining)
	}
	if left := cleanuptest.Left(t, plain.Client(), run, objs); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if err := plain.Client().Get(ctx, client.ObjectKey{Namespace: other.Namespace, Name: "keep"}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("another run's object was deleted: %v", err)
	}
	// Namespaces were deleted last and are Terminating (envtest has no
	// namespace controller); nothing labelled is inside them.
	var ns corev1.Namespace
	if err := plain.Client().Get(ctx, client.ObjectKey{Name: mode.Sidecar.Namespace()}, &ns); err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("namespace %s not deleted", ns.Name)
	}
}

// An interrupt (SIGINT fed to the clean-up's own signal channel, not sent to
// the test binary) runs the clean-up, and nothing labelled is left after.
func TestCleanupOnInterrupt(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	const run = "interrupted"
	objs := everything(t, run, mode.AmbientL4, mode.None)
	a, err := apply.New(srv.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	if left := cleanuptest.Left(t, a.Client(), run, objs); len(left) != len(objs) {
		t.Fatalf("detector blind: %d of %d applied objects found by label", len(left), len(objs))
	}
	c := newCleaner(t, srv, run, nil)
	sigs := make(chan os.Signal, 1)
	type outcome struct {
		sig os.Signal
		rep cleanup.Report
		err error
	}
	done := make(chan outcome, 1)
	stop := c.OnSignal(sigs, func(s os.Signal, r cleanup.Report, err error) { done <- outcome{s, r, err} })
	defer stop()
	sigs <- syscall.SIGINT
	var got outcome
	select {
	case got = <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("clean-up did not finish after the interrupt")
	}
	if got.sig != syscall.SIGINT || got.err != nil {
		t.Fatalf("signal %v, err %v", got.sig, got.err)
	}
	if len(got.rep.Deleted) != len(objs) {
		t.Errorf("deleted %d of %d objects", len(got.rep.Deleted), len(objs))
	}
	if left := cleanuptest.Left(t, a.Client(), run, objs); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Stopping the watch without a signal runs nothing.
func TestOnSignalStopWithoutSignal(t *testing.T) {
	srv := apiserver.ForTest(t)
	c := newCleaner(t, srv, "never", nil)
	ran := false
	stop := c.OnSignal(make(chan os.Signal), func(os.Signal, cleanup.Report, error) { ran = true })
	stop()
	stop() // idempotent
	if ran {
		t.Error("clean-up ran without a signal")
	}
}

// Without the envtest allowance, a Terminating namespace is not gone: the
// wait times out and says what remains (the wait cannot report a false done).
func TestWaitReportsWhatRemains(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	tgt, _ := fixtures.NewTarget("stays-terminating", "stays")
	ns := &corev1.Namespace{}
	ns.Name, ns.Labels = tgt.Namespace, fixtures.SuiteLabels(tgt.Run)
	a, _ := apply.New(srv.Config, nil)
	if err := a.Apply(ctx, ns, fixtures.ServiceAccount(tgt, "x")); err != nil {
		t.Fatal(err)
	}
	c := newCleaner(t, srv, tgt.Run, func(o *cleanup.Options) {
		o.TerminatingNamespaceIsGone = false
		o.Timeout = 2 * time.Second
	})
	rep, err := c.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "stays-terminating") {
		t.Fatalf("want a timeout naming the namespace, got %v", err)
	}
	if len(rep.Remaining) != 1 || rep.Remaining[0].Name != "stays-terminating" {
		t.Errorf("remaining %v", rep.Remaining)
	}
}

// A guard refusal stops clean-up before any delete.
func TestGuardStopsCleanup(t *testing.T) {
	srv := apiserver.ForTest(t)
	ctx := context.Background()
	tgt, _ := fixtures.NewTarget("guarded-cleanup", "guardedc")
	ns := &corev1.Namespace{}
	ns.Name, ns.Labels = tgt.Namespace, fixtures.SuiteLabels(tgt.Run)
	a, _ := apply.New(srv.Config, nil)
	if err := a.Apply(ctx, ns, fixtures.ServiceAccount(tgt, "x")); err != nil {
		t.Fatal(err)
	}
	g := &failAfter{} // refuses everything
	c := newCleaner(t, srv, tgt.Run, func(o *cleanup.Options) { o.Guard = g })
	rep, err := c.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "write guard refused") || len(rep.Deleted) != 0 {
		t.Fatalf("err %v, deleted %v", err, rep.Deleted)
	}
	if g.calls.Load() != 1 {
		t.Errorf("guard asked %d times; clean-up must stop at the first refusal", g.calls.Load())
	}
	if err := a.Client().Get(ctx, client.ObjectKey{Namespace: tgt.Namespace, Name: "x"}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("object deleted despite the refusal: %v", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []cleanup.Options{{Run: ""}, {Run: "bad run"}, {Run: "ok", Timeout: -time.Second}, {Run: "ok"}} {
		if _, err := cleanup.New(nil, o); err == nil {
			t.Errorf("%+v with a nil config accepted", o)
		}
	}
}
