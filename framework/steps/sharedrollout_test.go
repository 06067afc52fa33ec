package steps

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
)

// The access log is on in exactly the runs rollout.503-attribution reads:
// the zero-hardening T1 run in each of that claim's modes (sidecar), never
// in a hardened run or another mode's baseline, so no other measurement is
// taken with it.
func TestAccessLogOnInTheAttributionsBaselineRunsOnly(t *testing.T) {
	c := claimstest.Claim(t, "rollout.503-attribution")
	for _, m := range mode.All() {
		if got, want := AccessLogOn(m, fixtures.Hardening{}), slices.Contains(c.Modes, m); got != want {
			t.Errorf("%s baseline: access log on %v, want %v (rollout.503-attribution's modes %v)", m, got, want, c.Modes)
		}
		hardenings := []fixtures.Hardening{fixtures.GUIDEHardening(m)}
		for _, f := range fixtures.HardeningFactors(m) {
			hardenings = append(hardenings, f.Hardening)
		}
		for _, h := range hardenings {
			if AccessLogOn(m, h) {
				t.Errorf("%s hardened %+v: access log on", m, h)
			}
		}
	}
}

// The four claims that read sidecar's T1 baseline run build the same key
// and declaration for it, whatever their own mode (rollout.l7-vs-sidecar is
// an ambient-l7 spec), so the shared run is made once; a hardened run or
// another mode's is another key (negative controls).
func TestSidecarBaselineKeyIsSharedByItsFourReaders(t *testing.T) {
	reg := claimstest.Registry(t)
	env := &spec.Env{Config: &config.Config{RunID: "r1", DurationScale: 0.05}, Registry: reg}
	readers := []struct {
		claim string
		mode  mode.Mode
	}{
		{"rollout.baseline", mode.Sidecar},
		{"rollout.no-response-cause", mode.Sidecar},
		{"rollout.503-attribution", mode.Sidecar},
		{"rollout.l7-vs-sidecar", mode.AmbientL7},
	}
	key := func(claim string, spm mode.Mode, m mode.Mode, h fixtures.Hardening) string {
		t.Helper()
		r := spec.NewRun(reg.MustGet(claim), spm, env, nil)
		s, err := rolloutSpec(r, m)
		if err != nil {
			t.Fatal(err)
		}
		return rolloutKey(r, m, h, s)
	}
	want := key("rollout.baseline", mode.Sidecar, mode.Sidecar, fixtures.Hardening{})
	wantDecl, err := RolloutDeclared(spec.NewRun(reg.MustGet("rollout.baseline"), mode.Sidecar, env, nil), mode.Sidecar, fixtures.Hardening{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range readers {
		if got := key(x.claim, x.mode, mode.Sidecar, fixtures.Hardening{}); got != want {
			t.Errorf("%s [%s]: key %q, want rollout.baseline's %q", x.claim, x.mode, got, want)
		}
		d, err := RolloutDeclared(spec.NewRun(reg.MustGet(x.claim), x.mode, env, nil), mode.Sidecar, fixtures.Hardening{})
		if err != nil || d != wantDecl {
			t.Errorf("%s [%s]: declares %+v (%v), want %+v", x.claim, x.mode, d, err, wantDecl)
		}
	}
	if k := key("rollout.baseline", mode.Sidecar, mode.Sidecar, fixtures.GUIDEHardening(mode.Sidecar)); k == want {
		t.Errorf("the hardened run shares the baseline's key %q", k)
	}
	if k := key("rollout.l7-vs-sidecar", mode.AmbientL7, mode.AmbientL7, fixtures.Hardening{}); k == want {
		t.Errorf("ambient-l7's baseline shares sidecar's key %q", k)
	}
}

// The run turns the access log off itself once it has its capture, before
// RolloutLoad returns, so no later load is measured with it; the spec's
// clean-up (off again) then removes nothing twice, and after a removal that
// failed it tries again (and fails the spec if the log stays on). A capture
// that failed (its probes never appeared) is turned off all the same.
func TestAccessLogOffOnceWhenTheRunEnds(t *testing.T) {
	r := spec.NewRun(claimstest.Claim(t, "rollout.503-attribution"), mode.Sidecar, &spec.Env{Config: &config.Config{}}, nil)
	var removals int
	fail := errors.New("the sidecar still has the file access log")
	a := &accessLogRun{r: r, capture: &AccessLogCapture{Err: errors.New("the access log Telemetry did not take effect")},
		remove: func(context.Context) error {
			removals++
			if removals == 1 {
				return fail
			}
			return nil
		}}
	ctx := context.Background()
	// The first removal fails: finish still hands the capture over.
	if c := a.finish(ctx, nil); c != a.capture || a.removed || removals != 1 {
		t.Fatalf("finish: capture %v, removed %v after %d removals", c, a.removed, removals)
	}
	// The spec's clean-up tries again, and after that does nothing.
	for i := 0; i < 2; i++ {
		if err := a.off(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !a.removed || removals != 2 {
		t.Fatalf("removed %v after %d removals, want 2", a.removed, removals)
	}
	// Negative control: a clean-up that cannot remove it fails.
	b := &accessLogRun{r: r, capture: &AccessLogCapture{}, remove: func(context.Context) error { return fail }}
	if err := b.off(ctx); !errors.Is(err, fail) || b.removed {
		t.Fatalf("off with the log still on: %v, removed %v", err, b.removed)
	}
}

// The record of every reader of sidecar's baseline run (rollout.baseline's
// among them) says the client's access log was on; no other T1 run's does.
func TestRolloutSetupStatesTheAccessLog(t *testing.T) {
	env := &spec.Env{Config: &config.Config{RunID: "r1", DurationScale: 0.05}}
	r := spec.NewRun(claimstest.Claim(t, "rollout.baseline"), mode.Sidecar, env, nil)
	s, err := rolloutSpec(r, mode.Sidecar)
	if err != nil {
		t.Fatal(err)
	}
	got := rolloutSetup(r, mode.Sidecar, fixtures.Hardening{}, s)
	for _, want := range []string{"100 qps, 16 connections", "access log on during the load", "Telemetry " + fixtures.ClientAccessLogName, "removed after it", "echo's pods watched"} {
		if !strings.Contains(got, want) {
			t.Errorf("sidecar baseline setup %q lacks %q", got, want)
		}
	}
	for _, x := range []struct {
		m mode.Mode
		h fixtures.Hardening
	}{{mode.None, fixtures.Hardening{}}, {mode.AmbientL7, fixtures.Hardening{}}, {mode.Sidecar, fixtures.GUIDEHardening(mode.Sidecar)}} {
		if got := rolloutSetup(r, x.m, x.h, s); strings.Contains(got, "access log") {
			t.Errorf("%s %+v: setup %q names an access log", x.m, x.h, got)
		}
	}
}
