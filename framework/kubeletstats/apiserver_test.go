package kubeletstats

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
)

// What a real API server shows of the Summary path. envtest runs no
// kubelet, so no summary can come back here, and none is faked: the test
// shows that Read's request takes the node proxy's route (the server looks
// the node up by name, refuses a loopback kubelet address, and otherwise
// dials the address and port the node's status reports), and that without
// a kubelet Read fails naming the node and the server's reason. The
// summary's content is tested on the fixture (TestWindowFromSummaries)
// and on a real kubelet (suites/all TestStepsOnLocalCluster).
func TestReadThroughARealAPIServer(t *testing.T) {
	c := apiserver.ClientsetForTest(t)
	ctx := context.Background()
	if _, err := Read(ctx, c, ""); err == nil || !strings.Contains(err.Error(), "no node name") {
		t.Errorf("empty node: %v", err)
	}
	// A wrong path would be "the server could not find the requested
	// resource"; the node proxy's route answers that the node is unknown.
	_, err := Read(ctx, c, "kubeletstats-absent")
	if err == nil || !strings.Contains(err.Error(), `kubelet summary of node kubeletstats-absent: HTTP 404: nodes "kubeletstats-absent" not found`) {
		t.Errorf("absent node: %v", err)
	}
	// A node whose kubelet endpoint is loopback: the node proxy checks the
	// address before it dials, and refuses.
	if _, err := Read(ctx, c, nodeAt(t, c, "kubeletstats-loopback", "127.0.0.1", 10250)); err == nil ||
		!strings.Contains(err.Error(), "kubelet summary of node kubeletstats-loopback: HTTP 400: address not allowed") {
		t.Errorf("loopback kubelet: %v", err)
	}
	// A node at this host's address with nothing on its kubelet port: the
	// server dials the node's endpoint and no kubelet answers.
	ip := hostIPv4(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, err = Read(ctx, c, nodeAt(t, c, "kubeletstats-no-kubelet", ip, int32(port)))
	if err == nil || !strings.Contains(err.Error(), "kubelet summary of node kubeletstats-no-kubelet: HTTP ") ||
		!strings.Contains(err.Error(), net.JoinHostPort(ip, strconv.Itoa(port))) {
		t.Errorf("node without a kubelet: %v", err)
	}
	t.Logf("node without a kubelet: %v", err)
}

// nodeAt registers a node whose status says its kubelet listens at ip:port.
func nodeAt(t *testing.T, c kubernetes.Interface, name, ip string, port int32) string {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	node, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	node.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}},
	}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// hostIPv4 is an IPv4 address of this host that is not loopback (the node
// proxy refuses loopback), or a skip where the host has none.
func hostIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this host has no IPv4 address but loopback, which the node proxy refuses: the dial to a node's kubelet cannot be shown")
	return ""
}
