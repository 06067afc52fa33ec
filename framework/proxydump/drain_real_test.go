package proxydump_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/envoywheel/envoytest"
	"github.com/meshclaims/meshclaims/framework/envoywheel/wheeltest"
	"github.com/meshclaims/meshclaims/framework/proxydump"
)

// drainBootstrap takes its listeners from a file (LDS over a path), so the
// test can change a listener's filter chain the way istiod's LDS push does.
const drainBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
node: {id: drain-test, cluster: drain-test}
dynamic_resources:
  lds_config:
    resource_api_version: V3
    path_config_source:
      path: %[1]s/lds.yaml
      watched_directory: {path: %[1]s}
`

// drainListener is an inbound listener answering 200; with rbac set, its
// one filter chain also carries an RBAC HTTP filter named as Istio's authz
// builder names AuthorizationPolicy ns/echo-allow-good's rule, allowing
// only requests with x-sa: good (a stand-in for the principal; a request
// without it is the client as service account bad).
func drainListener(port int, rbac bool) string {
	filter := ""
	if rbac {
		filter = `
        - name: envoy.filters.http.rbac
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC
            rules:
              action: ALLOW
              policies:
                "ns[t]-policy[echo-allow-good]-rule[0]":
                  permissions: [{any: true}]
                  principals: [{header: {name: x-sa, string_match: {exact: good}}}]`
	}
	return fmt.Sprintf(`resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: inbound
  address: {socket_address: {address: 127.0.0.1, port_value: %d}}
  filter_chains:
  - name: inbound-http
    filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: inbound
        route_config:
          virtual_hosts:
          - name: all
            domains: ["*"]
            routes:
            - match: {prefix: /}
              direct_response: {status: 200, body: {inline_string: echo}}
        http_filters:%s
        - name: envoy.filters.http.router
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, port, filter)
}

// writeAtomically replaces path as Envoy's watched-directory LDS expects:
// a rename, so Envoy never reads half a file.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// get sends one HTTP/1.1 request on conn and reads its answer.
func get(t *testing.T, conn net.Conn, r *bufio.Reader) *http.Response {
	t.Helper()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: echo\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func draining(t *testing.T, e *envoytest.Envoy) int {
	t.Helper()
	n, err := proxydump.EnvoyFilterChainsDraining(e.AdminGet(t, proxydump.FilterChainsDrainingPath))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Why carrying the policy is not enough before a denial is measured, on a
// real Envoy: after a filter-chain-only update adds an RBAC filter, a
// connection accepted before it is still served by the old chain (200 for
// the principal the policy refuses), a new connection is refused (403), and
// the listener manager's draining gauge says old chains remain until the
// drain time has passed. The gauge is the detector the suite's wait reads:
// 0 before any change (negative control), 1 right after the policy is
// carried (it fires), 0 again after --drain-time-s.
func TestFilterChainUpdateServesOldConnectionsUntilDrained(t *testing.T) {
	bin := wheeltest.Binary(t)
	dir := t.TempDir()
	port := freePort(t)
	lds := filepath.Join(dir, "lds.yaml")
	writeAtomically(t, lds, drainListener(port, false))
	const drainTime = 3 * time.Second
	// Istio's pilot-agent runs Envoy with --drain-strategy immediate and
	// --drain-time-s from proxyConfig.drainDuration (45 s by default).
	e := envoytest.Start(t, fmt.Sprintf(drainBootstrap, dir),
		[]string{"--drain-time-s", fmt.Sprint(int(drainTime.Seconds())), "--drain-strategy", "immediate"}, bin)
	if got := e.ListenerPort(t, "inbound"); got != port {
		t.Fatalf("listener bound %d, want %d", got, port)
	}

	old, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldR := bufio.NewReader(old)
	if resp := get(t, old, oldR); resp.StatusCode != 200 {
		t.Fatalf("before the policy: %d, want 200", resp.StatusCode)
	}
	if n := draining(t, e); n != 0 {
		t.Fatalf("before any update %d filter chains draining, want 0", n)
	}

	writeAtomically(t, lds, drainListener(port, true))
	deadline := time.Now().Add(30 * time.Second)
	for {
		found, seen, err := proxydump.EnvoyRBACPolicy(e.AdminGet(t, "/config_dump"), "t", "echo-allow-good")
		if err != nil {
			t.Fatal(err)
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy not carried within 30 s: %s", seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	carried := time.Now()
	if n := draining(t, e); n < 1 {
		t.Fatalf("right after the policy was carried %d filter chains draining, want >= 1: the detector does not fire", n)
	}

	fresh, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if resp := get(t, fresh, bufio.NewReader(fresh)); resp.StatusCode != 403 {
		t.Errorf("a new connection after the policy: %d, want 403 (RBAC)", resp.StatusCode)
	}
	resp := get(t, old, oldR)
	if resp.StatusCode != 200 {
		t.Errorf("the connection from before the policy: %d, want 200 (served by the old chain)", resp.StatusCode)
	}
	t.Logf("old connection after the update: %d, Connection: %q (drain strategy immediate)", resp.StatusCode, resp.Header.Get("Connection"))

	for draining(t, e) != 0 {
		if time.Since(carried) > drainTime+10*time.Second {
			t.Fatalf("old filter chains still draining %s after the update (drain time %s)", time.Since(carried), drainTime)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("draining gauge back to 0 %s after the policy was carried (drain time %s)", time.Since(carried).Round(time.Millisecond), drainTime)
	again, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if resp := get(t, again, bufio.NewReader(again)); resp.StatusCode != 403 {
		t.Errorf("after the drain: %d, want 403", resp.StatusCode)
	}
	if !strings.Contains(e.AdminGet(t, "/stats?filter=listener_manager"), "listener_in_place_updated: 1") {
		t.Errorf("Envoy did not count the update as in place (listener_manager.listener_in_place_updated)")
	}
}
