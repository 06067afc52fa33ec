package apply_test

import (
	"context"
	"log"

	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/fixtures"
	"github.com/meshclaims/meshclaims/framework/apply"
	"github.com/meshclaims/meshclaims/framework/mode"
)

// Apply one mode's whole set to the cluster at cfg, asking guard (the
// cluster package's identity Guard) before every write.
func ExampleApplier_Apply() {
	var cfg *rest.Config       // the run's pinned config
	var guard apply.WriteGuard // e.g. *cluster.Guard; nil for no guard
	a, err := apply.New(cfg, guard)
	if err != nil {
		log.Fatal(err)
	}
	objs, err := fixtures.ForMode(mode.AmbientL4, fixtures.Options{
		Run:    "run-1",
		Images: fixtures.Images{Workload: "meshclaims/workload:dev"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := a.Apply(context.Background(), objs...); err != nil {
		log.Fatal(err)
	}
}
