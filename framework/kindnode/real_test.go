package kindnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workEnv names make kind-node-image's work directory (bin/kind-node),
// whose debootstrap tree, system image archives and Kubernetes binary the
// real reproducibility test stages from. Unset: the test skips (it needs
// root and about 2 GB of disk).
const workEnv = "MESHCLAIMS_KIND_NODE_WORK"

// TestRealNodeImageIsReproducible stages the node's tree twice from the
// same inputs (the Debian tree, kind's files, the binaries, the image
// archives) into two directories and packs each: the image IDs and
// manifest digests must be equal.
func TestRealNodeImageIsReproducible(t *testing.T) {
	work := os.Getenv(workEnv)
	if work == "" {
		t.Skipf("%s not set: this test stages the real node image twice from make kind-node-image's work directory (root)", workEnv)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s is set but the test is not root: the staged tree keeps Debian's owners", workEnv)
	}
	k8s := os.Getenv("MESHCLAIMS_K8S_BIN")
	if k8s == "" {
		k8s = filepath.Join(work, "..", "k8s", "k8s")
	}
	archives, err := filepath.Glob(filepath.Join(work, "images", "*.tar"))
	if err != nil || len(archives) == 0 {
		t.Fatalf("no image archives under %s/images (make kind-node-image writes them): %v", work, err)
	}
	kindDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kind").Output()
	if err != nil {
		t.Fatal(err)
	}
	o := StageOptions{
		Debian: filepath.Join(work, "debootstrap"), KindDir: strings.TrimSpace(string(kindDir)), K8sBinary: k8s,
		KubernetesVersion: KubernetesVersion, ImageArchives: archives, CNIManifest: CNIManifest(),
	}
	tmp := t.TempDir()
	var got []Result
	for i, d := range []string{"a", "b"} {
		root := filepath.Join(tmp, d)
		if err := Stage(context.Background(), root, o); err != nil {
			t.Fatal(err)
		}
		res, err := PackImage(root, DefaultRef, filepath.Join(tmp, d+".tar"), time.Unix(0, 0), Labels(), "amd64")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("build %d: image ID %s, manifest %s", i+1, res.ConfigDigest, res.Digest)
		got = append(got, res)
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(res.Archive); err != nil {
			t.Fatal(err)
		}
	}
	if got[0].ConfigDigest != got[1].ConfigDigest || got[0].Digest != got[1].Digest {
		t.Fatalf("same inputs, different images:\n%+v\n%+v", got[0], got[1])
	}
}
