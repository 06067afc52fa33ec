package mtls

import (
	"strings"
	"testing"

	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
)

// Verified needs calls across modes in both directions and plaintext
// refused; any part missing or failing is "not verified" and says which.
func TestJudgeMixed(t *testing.T) {
	s, a := mode.Sidecar, mode.AmbientL4
	ok := func(from, to mode.Mode) crossCall { return crossCall{From: from, To: to, Outcome: "http-200"} }
	cases := []struct {
		name      string
		plaintext string
		calls     []crossCall
		want      string
		says      string
	}{
		{"both ways, plaintext refused", probe.NoHTTPResponse, []crossCall{ok(s, a), ok(a, s)}, "verified", "sidecar->ambient-l4 http-200"},
		// One namespace's own checks only (today's spec): no cross-mode call.
		{"no cross-mode call", probe.NoHTTPResponse, nil, "not verified", "both directions"},
		{"only outwards", probe.NoHTTPResponse, []crossCall{ok(s, a)}, "not verified", "into it: 0"},
		{"ambient -> sidecar reset", probe.NoHTTPResponse, []crossCall{ok(s, a), {From: a, To: s, Outcome: probe.NoHTTPResponse, Detail: "EOF"}}, "not verified", "ambient-l4 client -> sidecar echo got no-http-response EOF"},
		{"plaintext answered", "http-200", []crossCall{ok(s, a), ok(a, s)}, "not verified", "not refused"},
		// Calls between two other modes do not count for this one.
		{"others' calls only", probe.NoHTTPResponse, []crossCall{ok(a, mode.AmbientL7), ok(mode.AmbientL7, a)}, "not verified", "both directions"},
	}
	for _, c := range cases {
		got := judgeMixed(s, c.plaintext, c.calls)
		if got.Outcome != c.want || !strings.Contains(got.Detail, c.says) {
			t.Errorf("%s: %s (%s), want %s saying %q", c.name, got.Outcome, got.Detail, c.want, c.says)
		}
	}
}
