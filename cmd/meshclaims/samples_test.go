package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The sample runs the README links to are what `meshclaims report` makes
// of them with today's registry and code: re-judged in a copy, every file
// comes out byte for byte as committed, so following the README's
// `meshclaims report testdata/examples/...` rewrites nothing. The negative
// control: a committed report.md changed by one byte is found.
func TestSampleRunsAreCurrent(t *testing.T) {
	samples, err := filepath.Glob("../../testdata/examples/*/results.json")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample runs under testdata/examples (%v)", err)
	}
	for _, res := range samples {
		src := filepath.Dir(res)
		t.Run(filepath.Base(src), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), filepath.Base(src))
			if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			if code, _, errs := runCLI("report", "--file", registry, dst); code != 0 {
				t.Fatalf("report exit %d: %s", code, errs)
			}
			if d := differing(t, src, dst); len(d) > 0 {
				t.Errorf("re-judged with today's registry, these files differ from the committed ones: %v (run `go run ./cmd/meshclaims report %s` and commit them)", d, filepath.Join("testdata/examples", filepath.Base(src)))
			}
			md := filepath.Join(dst, "report.md")
			raw, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(md, append(raw, ' '), 0o644); err != nil {
				t.Fatal(err)
			}
			if d := differing(t, src, dst); len(d) != 1 || d[0] != "report.md" {
				t.Errorf("negative control: a changed report.md is not found (%v)", d)
			}
		})
	}
}

// differing lists the files under a and b whose contents differ, or that
// only one of them has.
func differing(t *testing.T, a, b string) []string {
	t.Helper()
	files := map[string]bool{}
	for _, root := range []string{a, b} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			files[rel] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for f := range files {
		x, errA := os.ReadFile(filepath.Join(a, f))
		y, errB := os.ReadFile(filepath.Join(b, f))
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			out = append(out, f)
		}
	}
	return out
}
