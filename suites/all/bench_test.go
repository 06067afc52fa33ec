package all

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/report"
)

// BenchmarkLocalRunWallTime measures a whole qualification run's wall time
// on the local cluster, with sequential stopping (the default) and
// without it (-sequential=false, the source's fixed design), and reports
// both with the verdicts each reached, so the saving is measured with the
// decisions beside it. Root, MESHCLAIMS_LOCAL=1, and the cluster lock held
// (flock /tmp/meshclaims-cluster.lock); MESHCLAIMS_BENCH_MODES (default
// none,sidecar), MESHCLAIMS_BENCH_SCALE (default 0.05) and
// MESHCLAIMS_BENCH_FLAGS (extra e2e flags, e.g. the sidecar run's
// -image-archives ... of make e2e-local-sidecar) choose the run.
func BenchmarkLocalRunWallTime(b *testing.B) {
	if os.Getenv("MESHCLAIMS_LOCAL") != "1" {
		b.Skip("runs the suite on the local cluster: MESHCLAIMS_LOCAL=1 as root, with the cluster lock held")
	}
	modes := envOr("MESHCLAIMS_BENCH_MODES", "none,sidecar")
	scale := envOr("MESHCLAIMS_BENCH_SCALE", "0.05")
	extra := strings.Fields(os.Getenv("MESHCLAIMS_BENCH_FLAGS"))
	bin := e2eBinary(b)
	root := b.TempDir()
	for i := 0; i < b.N; i++ {
		for _, seq := range []string{"false", "true"} {
			id := fmt.Sprintf("bench-%d-sequential-%s", i, seq)
			args := append([]string{"-mode=" + modes, "-provider=local", "-duration-scale=" + scale, "-fail-on=error",
				"-sequential=" + seq, "-results=" + root, "-run-id=" + id, "-test.timeout=6h"}, extra...)
			start := time.Now()
			out, err := exec.Command(bin, args...).CombinedOutput()
			took := time.Since(start)
			if err != nil {
				b.Fatalf("%s: %v\n%s", id, err, tail(out))
			}
			res, err := report.LoadResults(filepath.Join(root, id, "results.json"))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(took.Seconds(), "s/run-sequential-"+seq)
			b.Logf("%s: %s wall, planned %s; verdicts %v", id, took.Round(time.Second), res.Environment.Planned.Round(time.Second), res.Summary)
		}
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func tail(b []byte) string {
	if len(b) > 4000 {
		return string(b[len(b)-4000:])
	}
	return string(b)
}
