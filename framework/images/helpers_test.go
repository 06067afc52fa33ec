package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// tinyMain is the source of the test main package. It prints its -X version
// on --version, so a binary extracted from an image can prove which build it
// is; greeting lets a test change the source itself.
const tinyMain = `package main

import (
	"fmt"
	"os"
)

var version = "dev"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println(version)
		return
	}
	fmt.Println("GREETING")
}
`

// writeTinyModule creates a module with its own go.mod in a fresh temporary
// directory and returns the directory.
func writeTinyModule(t *testing.T, greeting string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/tinymain\n\ngo 1.26\n",
		"main.go": strings.ReplaceAll(tinyMain, "GREETING", greeting),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tinySpec is a valid Spec for the tiny module in dir.
func tinySpec(dir, version string) Spec {
	return Spec{
		MainPackage: ".",
		Dir:         dir,
		LDFlags:     "-X main.version=" + version,
		ImageConfig: ImageConfig{
			Version:  version,
			Source:   "https://github.com/meshclaims/meshclaims",
			Revision: "0123456789abcdef0123456789abcdef01234567",
			Env:      []string{"MESHCLAIMS_ROLE=test"},
			Cmd:      []string{"--version"},
		},
	}
}

func mustBuild(t *testing.T, spec Spec) Image {
	t.Helper()
	img, err := Build(context.Background(), spec)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return img
}

// tarEntry is one entry of an extracted layer.
type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

// layerEntries reads the single layer of img, in tar order.
func layerEntries(t *testing.T, img v1.Image) []tarEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("image has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []tarEntry
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{hdr: hdr, data: data})
	}
	return out
}

// fileInLayer returns the content of the regular file at absolute path p.
func fileInLayer(t *testing.T, img v1.Image, p string) []byte {
	t.Helper()
	for _, e := range layerEntries(t, img) {
		if "/"+e.hdr.Name == p && e.hdr.Typeflag == tar.TypeReg {
			return e.data
		}
	}
	t.Fatalf("no regular file %s in the layer", p)
	return nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256Hex(b)
}
