package localk8s

import (
	"context"
	"net/netip"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// A reused state directory already holds the DNS objects: deploying them
// again must leave them, on a real API server. The negative control shows
// why the Service is looked up first: creating it again is refused on its
// ClusterIP (Invalid), not AlreadyExists, which is what -reuse-cluster hit.
func TestDeployDNSTwiceOnARealAPIServer(t *testing.T) {
	srv := apiserver.ForTest(t)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	// envtest's API server serves Services from 10.0.0.0/24.
	c := Config{ServiceCIDR: netip.MustParsePrefix("10.0.0.0/24"), PodCIDR: netip.MustParsePrefix("10.244.0.0/16")}
	ctx := context.Background()
	if err := deployDNS(ctx, cs, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Services("kube-system").Delete(context.Background(), "kube-dns", metav1.DeleteOptions{})
		_ = cs.AppsV1().Deployments("kube-system").Delete(context.Background(), "coredns", metav1.DeleteOptions{})
	})
	if err := deployDNS(ctx, cs, c); err != nil {
		t.Fatalf("second deploy over the first: %v", err)
	}
	_, _, _, _, _, svc := DNSObjects(c)
	_, err := cs.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("creating the Service again: %v; want Invalid (the ClusterIP is taken), the error the old create-and-ignore-AlreadyExists path failed on", err)
	}
}
