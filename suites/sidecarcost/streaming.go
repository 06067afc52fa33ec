package sidecarcost

import (
	"context"
	"fmt"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/mode"
	"github.com/meshclaims/meshclaims/framework/scenario"
	"github.com/meshclaims/meshclaims/framework/spec"
	"github.com/meshclaims/meshclaims/framework/stats"
	"github.com/meshclaims/meshclaims/framework/steps"
	"github.com/meshclaims/meshclaims/framework/verdict"
)

// Scenario: the client downloads one 100 MiB response from echo, no mesh vs
// sidecar (-repeats times; HYBRID 3). Expectation: the sidecar reaches about
// a quarter of the no-mesh throughput.
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.large-download",
	Area:     "sidecarcost",
	Scenario: "one 100 MiB response, MB/s with sidecars over MB/s without",
	Slow:     true,
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		url := func(m mode.Mode) string {
			return fmt.Sprintf("http://%s.%s:%d/bytes?n=%d", fixtures.EchoName, m.Namespace(), fixtures.EchoHTTPPort, 100<<20)
		}
		return steps.Repeat(ctx, r, func(ctx context.Context, i int) (float64, map[string]float64, error) {
			base, err := steps.Download(ctx, r, scenario.InMeshOf(r, mode.None), url(mode.None))
			if err != nil {
				return 0, nil, err
			}
			side, err := steps.Download(ctx, r, scenario.InMesh(r), url(r.Mode))
			if err != nil {
				return 0, nil, err
			}
			return side.MBps / base.MBps, map[string]float64{"none_mb_per_s": base.MBps, "sidecar_mb_per_s": side.MBps}, nil
		})
	},
})

// Scenario: echo streams 200 server-sent events, one every 20 ms; the client
// records their arrival spacing, no mesh and sidecar. Expectation: median and
// P99 spacing within 1 ms of HYBRID's (streaming is not distorted).
var _ = spec.Declare(spec.Def{
	Claim:    "sidecar.sse-intervals",
	Area:     "sidecarcost",
	Scenario: "200 SSE events every 20 ms, arrival interval median and P99",
	Measure: func(ctx context.Context, r *spec.Run) (verdict.Measurement, error) {
		url := fmt.Sprintf("http://%s.%s:%d/sse?n=200&interval=20ms", fixtures.EchoName, r.Namespace(), fixtures.EchoHTTPPort)
		ivs, err := steps.SSEIntervals(ctx, r, scenario.InMesh(r), url)
		if err != nil {
			return verdict.Measurement{}, err
		}
		m := verdict.Measurement{Percentiles: map[string]float64{}, Extra: map[string]float64{"events": float64(len(ivs) + 1)}}
		for _, p := range []float64{50, 99, 100} {
			v, err := stats.Percentile(ivs, p)
			if err != nil {
				return verdict.Measurement{}, err
			}
			if p == 100 {
				m.Extra["max_ms"] = v
				continue
			}
			m.Percentiles[fmt.Sprint(p)] = v
		}
		return m, nil
	},
})
