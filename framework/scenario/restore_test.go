package scenario

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
)

// Every claim object whose removal changes what the next spec sees has a
// probe that shows it gone, and that probe waits for the base behaviour:
// plaintext refused after a PeerAuthentication, sa/bad admitted after an
// AuthorizationPolicy, in-mesh 200 (with echo Ready) after a NetworkPolicy
// or DestinationRule. Kinds are read from the real fixtures' TypeMeta.
func TestRestoredAfterDeleteOfEachClaimObject(t *testing.T) {
	tgt := fixtures.Target{Namespace: mode.AmbientL4.Namespace(), Run: "t1"}
	want := map[string]struct {
		client, target string
		ok, notOK      string // an outcome that ends the wait, one that does not
		echoReady      bool
	}{
		"PeerAuthentication":  {RestoreOutside, RestoreEchoPod, probe.NoHTTPResponse, "http-200", false},
		"AuthorizationPolicy": {RestoreBad, RestoreEcho, "http-200", "http-403", false},
		"NetworkPolicy":       {RestoreInMesh, RestoreEcho, "http-200", probe.Blocked, true},
		"DestinationRule":     {RestoreInMesh, RestoreEcho, "http-200", probe.NoHTTPResponse, false},
	}
	seen := map[string]bool{}
	objs := append(fixtures.ClaimObjects(tgt, mode.AmbientL4), fixtures.EchoTLS(tgt, false))
	for _, o := range objs {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		c, ok := RestoredAfterDelete(kind)
		w, listed := want[kind]
		if ok != listed {
			t.Errorf("%s (%s): restoration check %v, want %v", kind, o.GetName(), ok, listed)
			continue
		}
		if !ok {
			continue
		}
		seen[kind] = true
		if c.Client != w.client || c.Target != w.target || c.EchoReady != w.echoReady || !c.ok(w.ok) || c.ok(w.notOK) {
			t.Errorf("%s: %+v, want client %s target %s ready=%v, %s ends the wait and %s does not", kind, c, w.client, w.target, w.echoReady, w.ok, w.notOK)
		}
	}
	for kind := range want {
		if !seen[kind] {
			t.Errorf("no claim object of kind %s: the table tests nothing", kind)
		}
	}
	// STRICT restored: plaintext cut as the registry documents it (an
	// unreachable pod, "blocked", is not STRICT), and in-mesh calls answered.
	cs := StrictRestored()
	if len(cs) != 2 || cs[0].ok(probe.Blocked) || !cs[0].ok(probe.NoHTTPResponse) || cs[0].ok("http-200") || !cs[1].ok("http-200") || cs[1].Client != RestoreInMesh {
		t.Errorf("STRICT restored checks %+v", cs)
	}
}

// PollUntil waits for the restored behaviour, not for a fixed time: it ends
// on the first success, and when the behaviour never comes back it fails
// naming the last observation.
func TestPollUntil(t *testing.T) {
	ctx := context.Background()
	outcomes := []string{"http-200", "http-200", probe.NoHTTPResponse}
	i := 0
	err := PollUntil(ctx, time.Minute, time.Millisecond, func(context.Context) (bool, string, error) {
		o := outcomes[i]
		i++
		return strictRestored.ok(o), o, nil
	})
	if err != nil || i != 3 {
		t.Fatalf("stopped after %d tries: %v", i, err)
	}
	// Never restored: an error that says what was last seen.
	err = PollUntil(ctx, 20*time.Millisecond, time.Millisecond, func(context.Context) (bool, string, error) {
		return false, "http-200 (plaintext still answered)", nil
	})
	if err == nil || !strings.Contains(err.Error(), "plaintext still answered") {
		t.Fatalf("never restored: %v", err)
	}
	// A hard error ends the wait at once.
	boom := errors.New("boom")
	if err := PollUntil(ctx, time.Minute, time.Millisecond, func(context.Context) (bool, string, error) { return false, "", boom }); !errors.Is(err, boom) {
		t.Fatalf("hard error: %v", err)
	}
}

// The positive control before a NetworkPolicy (and every restoration wait)
// ends only on a wanted outcome: a broken path (blocked, 503, no pod) keeps
// it waiting, and one that never answers fails it instead of letting the
// spec read "blocked" as the policy's effect.
func TestWaitOutcome(t *testing.T) {
	ctx := context.Background()
	seq := []func() (probe.Result, error){
		func() (probe.Result, error) { return probe.Result{}, errors.New(`no ready pod with app=fortio-client`) },
		func() (probe.Result, error) { return probe.Result{Outcome: probe.Blocked, Detail: "i/o timeout"}, nil },
		func() (probe.Result, error) { return probe.Result{Outcome: "http-503"}, nil },
		func() (probe.Result, error) { return probe.Result{Outcome: "http-200"}, nil },
	}
	i := 0
	err := WaitOutcome(ctx, time.Minute, time.Millisecond, []string{"http-200"}, func(context.Context) (probe.Result, string, error) {
		res, err := seq[i]()
		i++
		return res, "fortio-client -> echo", err
	})
	if err != nil || i != 4 {
		t.Fatalf("stopped after %d calls: %v", i, err)
	}
	err = WaitOutcome(ctx, 20*time.Millisecond, time.Millisecond, []string{"http-200"}, func(context.Context) (probe.Result, string, error) {
		return probe.Result{Outcome: probe.Blocked, Detail: "i/o timeout"}, "fortio-client -> echo", nil
	})
	if err == nil || !strings.Contains(err.Error(), "fortio-client -> echo: blocked i/o timeout") {
		t.Fatalf("a path that never answers: %v", err)
	}
}
