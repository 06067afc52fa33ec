package mtls

import (
	"strings"
	"testing"

	wp "github.com/meshclaims/meshclaims/fixtures/workload/probe"
	"github.com/meshclaims/meshclaims/framework/claims/claimstest"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// fortioDebugPage is fortio's debug page (fhttp.DebugHandler: the server line,
// the request line, then "headers:" with Host first and the rest sorted,
// one "Name: v1,v2" line each) with the extra header lines given.
func fortioDebugPage(extra ...string) string {
	return "Φορτίο version 1.75.3 echo debug server up for 2h1m3.4s on echo-6d9f8c7b5-r4t8p - request from 127.0.0.6:40211\n\n" +
		"GET /debug HTTP/1.1\n\nheaders:\n\nHost: echo.meshclaims-sidecar:8080\nUser-Agent: Go-http-client/1.1" +
		strings.Join(append([]string{""}, extra...), "\n") + "\nX-Request-Id: 4f6c9a1e-0d2b-4e8f-9c3a-7b5d1e2f3a4b\n\nbody:\n\n\n"
}

func TestAutoMTLS(t *testing.T) {
	c := claimstest.Claim(t, "mtls.auto-without-destinationrule")
	ns := mode.Sidecar.Namespace()
	id := "spiffe://cluster.local/ns/" + ns + "/sa/default"
	// Istio's inbound sidecar: By= the server's identity, Hash= of the peer
	// certificate, Subject="" (SPIFFE certs have none), URI= the peer's.
	xfcc := "X-Forwarded-Client-Cert: By=" + id + ";Hash=3c2a1b0e9f8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b;Subject=\"\";URI=" + id
	answer := func(body string) probe.Result {
		res := probe.Result{Result: wp.Result{Status: 200, Connected: true, Body: body}}
		res.Outcome, res.Detail = probe.Outcome(res.Result)
		return res
	}
	cases := []struct {
		name string
		body string
		want verdict.Result
	}{
		{"mTLS: the client's identity forwarded", fortioDebugPage(xfcc), verdict.Reproduced},
		// Negative controls: plaintext (no header), another identity.
		{"plaintext hop, no header", fortioDebugPage(), verdict.NotReproduced},
		{"another workload's identity", fortioDebugPage(strings.ReplaceAll(xfcc, "URI="+id, "URI=spiffe://cluster.local/ns/other/sa/default")), verdict.NotReproduced},
	}
	for _, k := range cases {
		got, err := judgeAutoMTLS(answer(k.body), ns)
		if err != nil {
			t.Fatal(err)
		}
		if v := verdict.Judge(c, mode.Sidecar, got); v.Result != k.want {
			t.Errorf("%s: %s (%s), want %s", k.name, v.Result, v.Reason, k.want)
		}
	}
	if u := xfccURI(fortioDebugPage(xfcc)); u != id {
		t.Errorf("URI %q", u)
	}
	// A failed call is a broken measurement.
	reset := probe.Result{Result: wp.Result{Cause: "reset", Error: "read: connection reset by peer"}}
	reset.Outcome, reset.Detail = probe.Outcome(reset.Result)
	if _, err := judgeAutoMTLS(reset, ns); err == nil || !strings.Contains(err.Error(), "no-http-response") {
		t.Errorf("reset: %v", err)
	}
	// A DestinationRule present makes the claim's condition unmet.
	if v := verdict.Judge(c, mode.Sidecar, verdict.Measurement{Unmet: "no DestinationRule for echo: found [echo-tls]"}); v.Result != verdict.Inconclusive {
		t.Errorf("with a DestinationRule: %s", v.Result)
	}
}
