package images_test

import (
	"context"
	"fmt"
	"log"

	"github.com/meshclaims/meshclaims/framework/images"
)

func ExampleImageRef() {
	fmt.Println(images.ImageRef("workload", "v0.1.0"))
	// Output: meshclaims/workload:v0.1.0
}

// Build the workload image from the module root, write it as a tarball and
// load it into a kind cluster. (Not run by `go test`: it needs the workload
// package and a kind cluster.)
func ExampleBuild() {
	ctx := context.Background()
	img, err := images.Build(ctx, images.Spec{
		MainPackage: "./fixtures/workload",
		LDFlags:     "-s -w",
		ImageConfig: images.ImageConfig{
			Version:  "v0.1.0",
			Source:   "https://github.com/meshclaims/meshclaims",
			Revision: "0123456789abcdef0123456789abcdef01234567",
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ref := images.ImageRef("workload", "v0.1.0")
	if err := images.WriteTarball(img.Image, ref, "_output/workload.tar"); err != nil {
		log.Fatal(err)
	}
	if err := images.LoadIntoKind(ctx, "meshclaims", "_output/workload.tar"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(ref, img.Digest)
}
