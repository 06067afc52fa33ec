package conntrack

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/config"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/umlvm"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Without the VM layer the need is unmet, as a layer need (inconclusive,
// never "not reproduced"), naming what to install; the measurement then
// fails with the same error rather than measuring the host.
func TestNeedUMLVMUnmetWithoutTheLayer(t *testing.T) {
	if !needUMLVM.Layer || needUMLVM.Selection {
		t.Fatal("the VM is the layer's need")
	}
	saved := findUML
	t.Cleanup(func() { findUML = saved })
	findUML = func() (umlvm.Kernel, error) {
		return umlvm.Kernel{}, errors.Join(umlvm.ErrMissing, errors.New("no linux.uml on PATH (install Debian's user-mode-linux: make vm-deps, or apt-get install user-mode-linux)"))
	}
	r := spec.NewRun(claimstest.Claim(t, "conntrack.table-full"), mode.None, &spec.Env{Config: &config.Config{Timeouts: config.DefaultTimeouts()}}, nil)
	err := needUMLVM.Check(context.Background(), r)
	if !errors.Is(err, umlvm.ErrMissing) || !strings.Contains(err.Error(), "apt-get install user-mode-linux") {
		t.Fatalf("need: %v", err)
	}
	if _, err := conntrackTableFull(context.Background(), r); !errors.Is(err, umlvm.ErrMissing) {
		t.Fatalf("measure without the layer: %v", err)
	}
}

// The spec's measurement for real: one VM per documented limit at HYBRID's
// 4,000 connections, judged against the registry. The VM's table starts
// near empty, so about limit connects succeed: reproduced at all three.
func TestConntrackTableFullInTheVM(t *testing.T) {
	k, err := umlvm.Find()
	if err != nil {
		if os.Getenv("MESHCLAIMS_REQUIRE_VM") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	c := claimstest.Claim(t, "conntrack.table-full")
	r := spec.NewRun(c, mode.None, &spec.Env{Config: &config.Config{Timeouts: config.DefaultTimeouts()}}, nil)
	got, err := conntrackTableFull(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Each) != 3 {
		t.Fatalf("%d measurements, want one per limit", len(got.Each))
	}
	layer := "User-Mode Linux " + k.Release // 6.1.176 (bookworm's), or sid's on an AMX host
	if !strings.Contains(r.Setup(), layer) || !strings.Contains(r.Setup(), "not the cluster") {
		t.Errorf("setup does not name the VM layer: %s", r.Setup())
	}
	if !strings.HasPrefix(r.Where(), "a disposable VM: "+layer) {
		t.Errorf("the record would say it ran on %q", r.Where())
	}
	v := verdict.Judge(c, mode.None, got)
	if !strings.Contains(v.MeasuredText, "(in a UML "+k.Release+" VM)") {
		t.Errorf("measured text does not name the layer: %s", v.MeasuredText)
	}
	t.Logf("%s: %s\nsetup: %s", v.Result, v.Reason, r.Setup())
	if v.Result != verdict.Reproduced {
		t.Fatalf("%s: %s", v.Result, v.Reason)
	}
}
