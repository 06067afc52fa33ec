package mtls

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/probe"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// crossCall is one call between two modes' namespaces: From's in-mesh
// client to To's echo Service.
type crossCall struct {
	From, To mode.Mode
	Outcome  string
	Detail   string
}

// mixedNamespaces is GUIDE §1's mixed-cluster check for the run's mode:
// every other meshed mode of the run calls this mode's echo and this mode
// calls theirs, both under their namespaces' STRICT, and plaintext from
// outside the mesh to this mode's echo pod is still refused (judgeMixed).
func mixedNamespaces(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
	m, err := scenario.ClusterOf(r)
	if err != nil {
		return verdict.Measurement{}, err
	}
	var calls []crossCall
	for _, other := range r.Env.Config.Modes {
		if !other.Meshed() || other == r.Mode {
			continue
		}
		for _, pair := range [][2]mode.Mode{{r.Mode, other}, {other, r.Mode}} {
			res, err := probe.From(ctx, m.Kube, scenario.InMeshOf(r, pair[0]), scenario.EchoURLOf(pair[1]), r.Env.Config.Timeouts.Probe)
			if err != nil {
				return verdict.Measurement{}, fmt.Errorf("%s client -> %s echo: %w", pair[0], pair[1], err)
			}
			r.Logf("%s client -> %s echo: %s %s", pair[0], pair[1], res.Outcome, res.Detail)
			calls = append(calls, crossCall{From: pair[0], To: pair[1], Outcome: res.Outcome, Detail: res.Detail})
		}
	}
	podURL, err := scenario.EchoPodURL(ctx, r, fixtures.EchoHTTPPort)
	if err != nil {
		return verdict.Measurement{}, err
	}
	plain, err := scenario.Probe(ctx, r, scenario.Outside(), podURL)
	if err != nil {
		return verdict.Measurement{}, err
	}
	return judgeMixed(r.Mode, plain.Outcome, calls), nil
}

// judgeMixed is "verified" when plaintext to mode m's echo is refused (no
// HTTP response, as mtls.plaintext-blocked documents for every meshed mode)
// and every cross-mode call, in both directions with at least one other
// mode, answered 200. Otherwise "not verified", saying which part failed.
func judgeMixed(m mode.Mode, plaintext string, calls []crossCall) verdict.Measurement {
	var parts, failed []string
	out, in := 0, 0
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf("%s->%s %s", c.From, c.To, c.Outcome))
		switch {
		case c.Outcome != "http-200":
			failed = append(failed, fmt.Sprintf("%s client -> %s echo got %s %s", c.From, c.To, c.Outcome, c.Detail))
		case c.From == m:
			out++
		case c.To == m:
			in++
		}
	}
	if plaintext != probe.NoHTTPResponse {
		failed = append(failed, fmt.Sprintf("plaintext to %s echo got %s, not refused", m, plaintext))
	}
	if out == 0 || in == 0 {
		failed = append(failed, fmt.Sprintf("calls out of %s answered: %d, into it: %d; both directions with another meshed mode are needed", m, out, in))
	}
	detail := fmt.Sprintf("plaintext: %s; cross-mode: %s", plaintext, strings.Join(parts, ", "))
	if len(failed) > 0 {
		return verdict.Measurement{Outcome: "not verified", Detail: detail + "; " + strings.Join(failed, "; ")}
	}
	return verdict.Measurement{Outcome: "verified", Detail: detail}
}
