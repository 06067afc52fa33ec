package localk8s_test

import (
	"context"
	"fmt"
	"log"

	"github.com/meshclaims/meshclaims/framework/localk8s"
)

// Bring a cluster up, use it, and leave the host as it was. (Not run by
// `go test`: it needs root, the OS packages and bin/k8s.)
func ExampleNew() {
	ctx := context.Background()
	k, err := localk8s.New(localk8s.Config{Name: "demo"})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Delete(ctx) // stop every process, wipe mounts, netns, iptables, state
	if err := k.Start(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("KUBECONFIG=" + k.KubeconfigPath())
	if err := k.LoadImage(ctx, "results/images/workload.tar"); err != nil {
		log.Fatal(err)
	}
}

// The wipe turns iptables-save output into a restore script that removes
// only the cluster's rules and chains.
func ExampleIPTablesCleanup() {
	save := `*nat
:PREROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -p tcp --dport 2222 -j REDIRECT --to-ports 22
COMMIT
`
	fmt.Print(localk8s.IPTablesCleanup(save)["nat"])
	// Output:
	// *nat
	// -D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	// -F KUBE-SERVICES
	// -X KUBE-SERVICES
	// COMMIT
}
