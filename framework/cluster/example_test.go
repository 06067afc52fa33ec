package cluster_test

import (
	"fmt"

	"github.com/meshclaims/meshclaims/framework/cluster"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// A suite's TestMain plugs a provider into e2e-framework: Setup pins the
// REST config into envconf and stores the Guard; phases that write call
// GuardFrom(ctx).Check(ctx) first.
func ExampleSetup() {
	p, err := cluster.New(cluster.ExistingName, cluster.Options{
		Kubeconfig: cluster.KubeconfigSelector{Path: "/home/me/.kube/config", Context: "eks-qual"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	testenv := env.NewWithConfig(envconf.New())
	testenv.Setup(cluster.Setup(p))
	testenv.Finish(cluster.Finish(p, "results/cluster-logs", func() bool { return false }, false))
	fmt.Println(p.Name())
	// Output: existing
}

func ExampleNew_unknown() {
	_, err := cluster.New("minikube", cluster.Options{})
	fmt.Println(err)
	// Output: unknown -provider="minikube"; accepted: kind, existing, local
}
