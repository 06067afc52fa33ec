package apiserver_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// Start a real API server with Istio's and Gateway API's CRDs, point a
// kubeconfig at it, and stop it. (Not run by `go test`: it needs the binaries
// `make k8s-bin` builds; tests use apiserver.ForTest instead.)
func ExampleStart() {
	srv, err := apiserver.Start(context.Background(), apiserver.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	if err := srv.WriteKubeconfig(filepath.Join(os.TempDir(), "meshclaims-kubeconfig"), "envtest"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("API server at", srv.Config.Host)
}
