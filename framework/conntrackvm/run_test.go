package conntrackvm

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/conntrackfill"
	"github.com/meshclaims/meshclaims/framework/umlvm"
)

// kernel is the installed UML kernel, or the test is skipped naming what
// is missing; MESHCLAIMS_REQUIRE_VM=1 (make test) makes it a failure.
func kernel(tb testing.TB) umlvm.Kernel {
	tb.Helper()
	k, err := umlvm.Find()
	if err != nil {
		if os.Getenv("MESHCLAIMS_REQUIRE_VM") == "1" {
			tb.Fatal(err)
		}
		tb.Skip(err)
	}
	return k
}

var (
	initOnce sync.Once
	initPath string
	initErr  error
)

// TestMain removes the init builtInit built.
func TestMain(m *testing.M) {
	code := m.Run()
	if initPath != "" {
		_ = os.RemoveAll(filepath.Dir(initPath))
	}
	os.Exit(code)
}

// builtInit builds cmd/conntrackvm once for the test binary.
func builtInit(tb testing.TB) string {
	tb.Helper()
	initOnce.Do(func() {
		dir, err := os.MkdirTemp("", "conntrackvm-init-")
		if err != nil {
			initErr = err
			return
		}
		initPath, initErr = BuildInit(context.Background(), dir)
	})
	if initErr != nil {
		tb.Fatal(initErr)
	}
	return initPath
}

// hybrid is HYBRID's run at limit: 4,000 connections at once, 5 s connect
// timeout, after the table holds fewer than 500 entries.
func hybrid(limit int64, conns int) conntrackfill.Params {
	to := config.DefaultTimeouts()
	return conntrackfill.Params{Limit: limit, Connections: conns, ConnectTimeout: to.ConntrackConnect,
		QuietBelow: 500, QuietPoll: to.VMQuietPoll, QuietTimeout: to.VMQuiet}
}

func run(tb testing.TB, p conntrackfill.Params) Outcome {
	tb.Helper()
	out, err := Run(context.Background(), Options{Kernel: kernel(tb), Init: builtInit(tb), Fill: p, Timeout: config.DefaultTimeouts().VMRun})
	if err != nil {
		tb.Fatal(err)
	}
	r := out.Result
	mx, _ := r.MaxMs()
	tb.Logf("%s: limit %d (was %d), entries before %d, peak %d: %d succeeded, %d failed, %d failed otherwise %v; max connect %.1f ms; issued in %.0f ms; %d table-full lines; VM %s",
		out.Layer, r.Limit, r.LimitBefore, r.EntriesBefore, r.EntriesPeak, r.Succeeded, r.Failed, r.FailedOther, r.OtherErrors, mx, r.IssueMs, out.TableFullLines(), out.Elapsed.Round(time.Millisecond))
	return out
}

// Negative control, at HYBRID's scale: at nf_conntrack_max 1,024 the
// table fills and the kernel drops the SYNs of the connections it has no
// room for, so most of the 4,000 fail, the established ones never exceed
// the room the table had, and the kernel says why.
func TestLimit1024DropsConnections(t *testing.T) {
	out := run(t, hybrid(1024, 4000))
	r := out.Result
	if r.Limit != 1024 || r.EntriesBefore >= 500 {
		t.Fatalf("limit %d, entries before %d: not HYBRID's setup", r.Limit, r.EntriesBefore)
	}
	if r.Succeeded+r.Failed+r.FailedOther != 4000 || r.FailedOther != 0 {
		t.Fatalf("%d + %d + %d connects of 4000 (other errors %v)", r.Succeeded, r.Failed, r.FailedOther, r.OtherErrors)
	}
	if r.Succeeded > 1024 || r.Failed < 4000-1024 {
		t.Fatalf("%d established, %d failed at a limit of 1,024: the table did not limit them", r.Succeeded, r.Failed)
	}
	if r.EntriesPeak > 1024 || out.TableFullLines() == 0 {
		t.Fatalf("peak %d entries, %d 'table full' lines: the failures are not conntrack's", r.EntriesPeak, out.TableFullLines())
	}
}

// Positive control: at the default 262,144 every one of the 4,000 is
// established, and conntrack drops nothing.
func TestDefaultLimitEstablishesAll(t *testing.T) {
	out := run(t, hybrid(262144, 4000))
	r := out.Result
	if r.Limit != 262144 || r.Succeeded != 4000 || r.Failed != 0 || r.FailedOther != 0 {
		t.Fatalf("limit %d: %d established, %d failed, %d otherwise (%v); want all 4,000", r.Limit, r.Succeeded, r.Failed, r.FailedOther, r.OtherErrors)
	}
	if r.EntriesPeak < 4000 || out.TableFullLines() != 0 {
		t.Fatalf("peak %d entries (want >= 4,000: conntrack tracked them), %d 'table full' lines", r.EntriesPeak, out.TableFullLines())
	}
}

// Bad parameters fail before a VM boots, naming the value.
func TestRunRejectsBadParams(t *testing.T) {
	p := hybrid(1024, 0)
	if _, err := Run(context.Background(), Options{Fill: p}); err == nil {
		t.Fatal("0 connections accepted")
	}
}

// BenchmarkVMRun times one VM run at HYBRID's scale (boot, 4,000
// connects at limit 1,024, power-off).
func BenchmarkVMRun(b *testing.B) {
	k, init := kernel(b), builtInit(b)
	for b.Loop() {
		if _, err := Run(context.Background(), Options{Kernel: k, Init: init, Fill: hybrid(1024, 4000), Timeout: config.DefaultTimeouts().VMRun}); err != nil {
			b.Fatal(err)
		}
	}
}
