// Package imagebuild produces the images AgentEnv runs without anything
// from the network: it compiles a Go package into a static binary
// (CGO_ENABLED=0) and assembles a FROM scratch image around it with
// go-containerregistry (empty.Image + one layer + a config), written as a
// docker-save tarball that the engine loads with ImageLoad. No builder, no
// registry, no pull; the same binary also runs as a plain local process
// (runner/sandbox/process), which is why the binary is kept on its own.
//
// For user Dockerfiles (`put --dockerfile`), ContextTar packs a build
// context for the engine's ImageBuild.
//
//	bin, err := imagebuild.BuildGo(ctx, "./examples/envs/echo/cmd/echo-env", dir, nil)
//	img, err := imagebuild.Scratch(imagebuild.Image{Binary: bin, ExposedPorts: []int{18765}})
//	err = imagebuild.WriteTarball(w, "localhost:5000/echo__env_image:v1", img)
package imagebuild
