package cleanup_test

import (
	"context"
	"log"
	"os"

	"k8s.io/client-go/rest"

	"github.com/meshclaims/meshclaims/framework/cleanup"
)

// Delete a run's objects on SIGINT/SIGTERM, and at the end of the run.
func ExampleCleaner_OnSignal() {
	var cfg *rest.Config // the run's pinned config
	c, err := cleanup.New(cfg, cleanup.Options{Run: "run-1"})
	if err != nil {
		log.Fatal(err)
	}
	sigs, unsubscribe := cleanup.Interrupts()
	defer unsubscribe()
	stop := c.OnSignal(sigs, func(sig os.Signal, rep cleanup.Report, err error) {
		log.Printf("%v: deleted %d objects, %d remain, err=%v", sig, len(rep.Deleted), len(rep.Remaining), err)
		os.Exit(130)
	})
	// ... the run ...
	stop()
	if _, err := c.Run(context.Background()); err != nil {
		log.Print(err)
	}
}
